import { CpError, show } from '../errors.js';
import { illFormedPointer } from '../text.js';
import type { AppendInput, LedgerEntry } from './entry.js';

const STRING_FIELDS = ['event_type', 'submission_id', 'decision', 'reason'] as const;
const EVENT_TYPE_PATTERN = /^[A-Z][A-Z0-9_]*$/;

export interface ValidAppendInput {
  event_type: string;
  submission_id: string;
  decision: string;
  reason: string;
  metadata: Record<string, unknown>;
}

const ENTRY_FIELDS: ReadonlySet<string> = new Set([...STRING_FIELDS, 'metadata', 'content']);
const NONE: readonly string[] = [];

/**
 * The record's own keys that are no entry field (the shared empty list when there are none: appends are many).
 * for…in walks the keys without the array Object.keys makes; an inherited key is skipped as Object.keys skips it.
 */
function unknownFields(record: Record<string, unknown>): readonly string[] {
  let extra: string[] | undefined;
  for (const key in record) if (!ENTRY_FIELDS.has(key) && Object.hasOwn(record, key)) (extra ??= []).push(key);
  return extra ?? NONE;
}

/** Parse-and-validate at the edge: the ledger never stores a half-formed entry. */
export function validateAppendInput(input: unknown, index = 0): ValidAppendInput {
  checkAppendInput(input, index);
  return {
    event_type: input.event_type,
    submission_id: input.submission_id,
    decision: input.decision,
    reason: input.reason,
    metadata: input.metadata ?? {},
  };
}

/** validateAppendInput's checks without its copy (prepareAppend builds its own record of the fields). */
export function checkAppendInput(input: unknown, index = 0): asserts input is AppendInput {
  const where = index === 0 ? '' : ` (batch item ${index})`;
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new CpError('ERR_LEDGER_ENTRY_INVALID', `ledger entry${where} must be an object, got ${show(input)}`, {
      hint: 'pass {event_type, submission_id, decision, reason, metadata}',
    });
  }
  const record = input as Record<string, unknown>;
  const extra = unknownFields(record);
  if (extra.length > 0) {
    throw new CpError('ERR_LEDGER_ENTRY_INVALID', `unknown ledger entry field(s)${where}: ${extra.join(', ')}`, {
      hint: 'the entry contract is fixed; put extra data in metadata',
      details: { fields: extra },
    });
  }
  for (const field of STRING_FIELDS) {
    const value = record[field];
    if (typeof value !== 'string' || value.length === 0) {
      throw new CpError(
        'ERR_LEDGER_ENTRY_INVALID',
        `ledger entry${where} needs a non-empty string ${field}, got ${show(value)}`,
        {
          hint: `set ${field}`,
          details: { field, value: value ?? null },
        },
      );
    }
  }
  if (!EVENT_TYPE_PATTERN.test(record.event_type as string)) {
    throw new CpError(
      'ERR_LEDGER_ENTRY_INVALID',
      `event_type ${show(record.event_type)}${where} must be UPPER_SNAKE_CASE`,
      {
        hint: 'use an event type such as EXCHANGE or INSTALLED',
        details: { field: 'event_type', value: record.event_type },
      },
    );
  }
  const metadata = record.metadata ?? {};
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) {
    throw new CpError('ERR_LEDGER_ENTRY_INVALID', `metadata${where} must be a JSON object, got ${show(metadata)}`, {
      hint: 'pass metadata as an object, e.g. {"session_id":"S1"}',
      details: { field: 'metadata' },
    });
  }
}

/**
 * An entry holding a lone UTF-16 surrogate cannot be stored as hashed (SQLite would store U+FFFD), and cplane
 * never writes one: such an import is refused rather than repaired, since repairing it would change its hashes.
 */
export function refuseIllFormed(entry: LedgerEntry, where: string, line: number | null): void {
  const at = illFormedPointer(entry);
  if (at !== undefined) {
    throw new CpError(
      'ERR_LEDGER_IMPORT_INVALID',
      `${where} holds a string that is not well-formed UTF-16 (a lone surrogate) at ${at}`,
      {
        hint: 'the file was not written by `cplane ledger export`; nothing was imported',
        details: { line, pointer: at },
      },
    );
  }
}

export type { AppendInput };
