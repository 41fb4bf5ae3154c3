import { isCpError } from '#kernel/errors.js';

/**
 * True when a ledger append failed because of the records themselves (a value canonical JSON refuses, an
 * invalid entry, a value too deep or too large to serialise), so trying the same batch again can never
 * succeed; false for the environment (disk full, I/O error, a busy or damaged database), where it can.
 */
export function isRecordFault(error: unknown): boolean {
  if (error instanceof RangeError || error instanceof TypeError || error instanceof SyntaxError) return true;
  return (
    isCpError(error) &&
    /^ERR_(CANONICAL_JSON|LEDGER_ENTRY_INVALID)$|INVALID|ILL_FORMED|TOO_LARGE|MALFORMED/.test(error.code) &&
    !/DISK|FULL|NOSPC|IO|BUSY|LOCK|DAMAGED|CORRUPT|UNREADABLE/.test(error.code)
  );
}
