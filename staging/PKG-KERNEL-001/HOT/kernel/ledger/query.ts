import { CpError, show } from '../errors.js';
import { isDenseKind, RARE_KIND_SQL } from './kinds.js';
import { hashHex } from './schema.js';
import type { SeqRange } from './time-range.js';

export interface LedgerQuery {
  event_type?: string;
  submission_id?: string;
  session_id?: string;
  agent_id?: string;
  work_order_id?: string;
  /** Inclusive ISO-8601 bounds on `timestamp`. */
  since?: string;
  until?: string;
  limit?: number;
  /** Default newest-first. */
  order?: 'newest' | 'oldest';
}

/** An entry's columns as readers see them: its hashes as hex, whichever format version the file has. */
export const ROW_COLUMNS = `seq, id, event_type, submission_id, decision, reason, metadata, timestamp, ${hashHex('previous_hash')} AS previous_hash, ${hashHex('entry_hash')} AS entry_hash`;

/** A session's conversation: its EXCHANGE records in chain order (served by the session index). */
export const HISTORY_SQL = `SELECT ${ROW_COLUMNS} FROM entries WHERE session_id = ? AND event_type = 'EXCHANGE' ORDER BY seq ASC`;

const EQUALITY_FILTERS = ['event_type', 'submission_id', 'session_id', 'agent_id', 'work_order_id'] as const;
const QUERY_KEYS: readonly string[] = [...EQUALITY_FILTERS, 'since', 'until', 'limit', 'order'];

/** Where a time range is looked up: the timestamp index, or chain positions the caller derives from the times. */
export type TimeLookup = 'index' | ((since: string | undefined, until: string | undefined) => SeqRange);

export interface CompiledQuery {
  sql: string;
  params: (string | number)[];
}

/** A query whose every field was checked: equality filters, an ISO time range, a limit and a sort order. */
export interface CheckedQuery {
  equal: [EqualityFilter, string][];
  since?: string;
  until?: string;
  limit?: number;
  order: 'ASC' | 'DESC';
}

export type EqualityFilter = (typeof EQUALITY_FILTERS)[number];

/** Every field of a query checked (unknown ones refused), times normalised to ISO-8601 UTC. */
export function checkQuery(query: LedgerQuery): CheckedQuery {
  const unknown = Object.keys(query).filter((key) => !QUERY_KEYS.includes(key));
  if (unknown.length > 0) throw invalid(`unknown query field(s): ${unknown.join(', ')}`, { fields: unknown });
  const checked: CheckedQuery = { equal: [], order: 'DESC' };
  for (const field of EQUALITY_FILTERS) {
    const value = query[field];
    if (value === undefined) continue;
    if (typeof value !== 'string' || value === '')
      throw invalid(`query ${field} must be a non-empty string, got ${show(value)}`, { field });
    checked.equal.push([field, value]);
  }
  for (const field of ['since', 'until'] as const) {
    const value = query[field];
    if (value === undefined) continue;
    if (typeof value !== 'string' || Number.isNaN(Date.parse(value)))
      throw invalid(`query ${field} must be an ISO-8601 time, got ${show(value)}`, { field });
    checked[field] = new Date(value).toISOString();
  }
  if (query.limit !== undefined) {
    if (!Number.isSafeInteger(query.limit) || query.limit < 1)
      throw invalid(`query limit must be a positive integer, got ${show(query.limit)}`, { field: 'limit' });
    checked.limit = query.limit;
  }
  if (query.order !== undefined && query.order !== 'newest' && query.order !== 'oldest') {
    throw invalid(`query order must be "newest" or "oldest", got ${show(query.order)}`, { field: 'order' });
  }
  if (query.order === 'oldest') checked.order = 'ASC';
  return checked;
}

/**
 * Turn a query into SQL over indexed columns only; every filter is a bound parameter. A dense kind (kinds.ts) alone
 * is found by walking the chain in the query's order, a few rows per match. A time range uses the
 * timestamp index, or with `time` a function, the chain positions it returns (ledgers whose timestamps are
 * in chain order have no timestamp index).
 */
export function compileQuery(query: LedgerQuery, time: TimeLookup = 'index'): CompiledQuery {
  const checked = checkQuery(query);
  const where: string[] = [];
  const params: (string | number)[] = [];
  // Whether a filter other than a dense kind has an index SQLite may pick over the timestamp's.
  let indexed = false;
  for (const [field, value] of checked.equal) {
    where.push(`${field} = ?`);
    params.push(value);
    const dense = field === 'event_type' && isDenseKind(value);
    // The rare-kind index's own condition, so SQLite may use it; a dense kind walks the chain or another index.
    if (field === 'event_type' && !dense) where.push(RARE_KIND_SQL);
    indexed ||= !dense;
  }
  let timeIndex = false;
  if (checked.since !== undefined || checked.until !== undefined) {
    if (time === 'index') {
      timeIndex = true;
      if (checked.since !== undefined) {
        where.push('timestamp >= ?');
        params.push(checked.since);
      }
      if (checked.until !== undefined) {
        where.push('timestamp <= ?');
        params.push(checked.until);
      }
    } else {
      const range = time(checked.since, checked.until);
      where.push('seq >= ?', 'seq <= ?');
      params.push(range.fromSeq, range.toSeq);
    }
  }
  let limit = '';
  if (checked.limit !== undefined) {
    limit = ' LIMIT ?';
    params.push(checked.limit);
  }
  const filter = where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '';
  // With only a time range (and perhaps a dense kind), SQLite would rather walk the primary key to skip the sort: a
  // full scan.
  const from = timeIndex && !indexed ? 'entries INDEXED BY entries_timestamp' : 'entries';
  return { sql: `SELECT ${ROW_COLUMNS} FROM ${from}${filter} ORDER BY seq ${checked.order}${limit}`, params };
}

function invalid(message: string, details: Record<string, unknown>): CpError {
  return new CpError('ERR_LEDGER_QUERY_INVALID', message, {
    hint: 'filters are event_type, submission_id, session_id, agent_id, work_order_id, since, until, limit, order',
    details,
  });
}
