import { CpError, show } from '../errors.js';
import type { LedgerEntry } from './entry.js';
import { rowToEntry, type EntryRow, type Ledger } from './ledger.js';
import { ROW_COLUMNS } from './query.js';

/** How long a DISPATCH may wait for its EXCHANGE before it counts as orphaned (a crashed send). */
export const DEFAULT_ORPHAN_TIMEOUT_MS = 5 * 60_000;

export interface OrphanOptions {
  timeoutMs?: number;
  /** Epoch milliseconds; defaults to the wall clock. */
  now?: number;
}

// An EXCHANGE names its DISPATCH (metadata.dispatch_entry_id) and is appended after it in the same session: found
// among the DISPATCH's session's later EXCHANGEs (the session index; the first is nearly always it), or for a DISPATCH
// without a session among the later EXCHANGEs without one, in chain order. No index on the link: a call's EXCHANGE
// writes one index page fewer. DISPATCH rows themselves are read in chain order (a dense kind, kinds.ts).
const LINKED_EXCHANGE = `e.event_type = 'EXCHANGE' AND e.dispatch_entry_id = d.id AND e.seq > d.seq`;
const ORPHANS_SQL = `SELECT ${ROW_COLUMNS} FROM entries AS d
  WHERE d.event_type = 'DISPATCH' AND d.timestamp <= ?
    AND NOT EXISTS (SELECT 1 FROM entries AS e WHERE e.session_id = d.session_id AND ${LINKED_EXCHANGE})
    AND (d.session_id IS NOT NULL OR NOT EXISTS (SELECT 1 FROM entries AS e WHERE e.session_id IS NULL AND ${LINKED_EXCHANGE}))
  ORDER BY d.seq ASC`;
// The same lookup for one DISPATCH, by id: its EXCHANGE's id, the first in chain order.
const EXCHANGE_OF_DISPATCH_SQL = `SELECT e.id FROM entries AS d JOIN entries AS e ON e.session_id = d.session_id
  WHERE d.id = ? AND ${LINKED_EXCHANGE} ORDER BY e.seq LIMIT 1`;
const SESSIONLESS_EXCHANGE_OF_DISPATCH_SQL = `SELECT e.id FROM entries AS d JOIN entries AS e ON e.seq > d.seq
  WHERE d.id = ? AND d.session_id IS NULL AND e.session_id IS NULL AND ${LINKED_EXCHANGE} ORDER BY e.seq LIMIT 1`;

/** The EXCHANGE that answers a DISPATCH (by the DISPATCH's id), or undefined when none does (yet). */
export function exchangeOfDispatch(ledger: Ledger, dispatchId: string): string | undefined {
  return ((ledger.statement(EXCHANGE_OF_DISPATCH_SQL).pluck().get(dispatchId) as string | undefined) ??
    ledger.statement(SESSIONLESS_EXCHANGE_OF_DISPATCH_SQL).pluck().get(dispatchId)) as string | undefined;
}

/** DISPATCH markers older than the timeout that no EXCHANGE links to (metadata.dispatch_entry_id), oldest first. */
export function listOrphans(ledger: Ledger, options: OrphanOptions = {}): LedgerEntry[] {
  return (ledger.statement(ORPHANS_SQL).all(orphanCutoff(options)) as EntryRow[]).map(rowToEntry);
}

/** The time before which a DISPATCH without its EXCHANGE is an orphan (ISO-8601), the options checked. */
export function orphanCutoff(options: OrphanOptions): string {
  const timeoutMs = options.timeoutMs ?? DEFAULT_ORPHAN_TIMEOUT_MS;
  const now = options.now ?? Date.now();
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 0) {
    throw new CpError(
      'ERR_LEDGER_QUERY_INVALID',
      `orphan timeout must be a non-negative integer of milliseconds, got ${show(timeoutMs)}`,
      {
        hint: 'pass --timeout-ms N with N >= 0',
        details: { field: 'timeoutMs' },
      },
    );
  }
  if (!Number.isFinite(now)) {
    throw new CpError(
      'ERR_LEDGER_QUERY_INVALID',
      `orphan reference time must be epoch milliseconds, got ${show(now)}`,
      { hint: 'pass now as a number', details: { field: 'now' } },
    );
  }
  return new Date(now - timeoutMs).toISOString();
}

export { ORPHANS_SQL };
