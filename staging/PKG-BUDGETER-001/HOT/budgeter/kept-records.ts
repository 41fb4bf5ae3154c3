import { Ajv, type ValidateFunction } from 'ajv';
import { readFileSync } from 'node:fs';
import { show } from '#kernel/errors.js';
import type { AppendInput } from '#kernel/ledger/index.js';
import { DELIVERED_ONCE } from './records.js';

/** Records a step handed to its caller that the ledger may not have yet (store-layout.ts OPEN_DDL). */
export interface OutboxRow {
  request_id: string;
  records: AppendInput[];
  /** Why the kept text is refused (damaged outside cplane): nothing of it is appended, and the row is left. */
  problem?: string;
}

const RECORD_SCHEMA_URL = new URL('../schemas/budget-record.schema.json', import.meta.url);
let recordValidator: ValidateFunction | undefined;

/** budget-record.schema.json, compiled when a kept record is first read back. */
function budgetRecordSchema(): ValidateFunction {
  recordValidator ??= new Ajv({ allErrors: false, strict: false }).compile(
    JSON.parse(readFileSync(RECORD_SCHEMA_URL, 'utf8')) as object,
  );
  return recordValidator;
}

/** A kept row's text at most: a step's records are about a kilobyte; more was not written by cplane. */
const OUTBOX_MAX_CHARS = 1 << 20;

/**
 * A stored outbox row read back, checked before anything in it reaches the chain: only the records a budget step
 * makes for that request (a settlement, release or exceeded record naming it, without content). Anything else was
 * written into the budget database by something other than cplane: refused (with the reason), never appended, and
 * left where it is for whoever restores the database, while the other rows are delivered.
 */
export function outboxRow(row: { request_id: string; records: string }): OutboxRow {
  const damaged = (why: string): OutboxRow => ({
    request_id: row.request_id,
    records: [],
    problem: `ERR_BUDGET_DB: the ledger records kept for request ${show(row.request_id)} ${why}; the budget database was changed outside cplane (restore it from a backup)`,
  });
  if (typeof row.records !== 'string' || row.records.length > OUTBOX_MAX_CHARS)
    return damaged(`are not text of at most ${OUTBOX_MAX_CHARS} characters`);
  let records: unknown;
  try {
    records = JSON.parse(row.records);
  } catch {
    return damaged('are not JSON');
  }
  if (!Array.isArray(records) || records.length === 0) return damaged('are not a list of records');
  for (const record of records as Record<string, unknown>[]) {
    const ok =
      typeof record === 'object' &&
      record !== null &&
      DELIVERED_ONCE.includes(record.event_type as string) &&
      record.submission_id === row.request_id &&
      record.content === undefined &&
      typeof record.metadata === 'object' &&
      record.metadata !== null &&
      (record.metadata as Record<string, unknown>).request_id === row.request_id;
    if (!ok) return damaged('hold a record a budget step does not make for it');
    if (!budgetRecordSchema()(record)) return damaged('hold a record that does not match budget-record.schema.json');
  }
  return { request_id: row.request_id, records: records as AppendInput[] };
}
