import { parseStoredMetadata } from '../ledger.js';
import { checkQuery, type LedgerQuery } from '../query.js';

export const PG_ROW_COLUMNS =
  'seq, id, event_type, submission_id, decision, reason, metadata, timestamp, previous_hash, entry_hash';

export interface PgQuery {
  /** The rows past `afterSeq` in the query's order (from the start when undefined), at most `limit`. */
  sql(afterSeq: number | undefined, limit: number | undefined): { text: string; values: unknown[] };
  /**
   * For a filter the SQL can only narrow by text (the work order): whether a candidate row really matches. Absent,
   * every row the SQL returns matches.
   */
  recheck?: (row: { id: string; metadata: string }) => boolean;
  limit?: number;
  order: 'ASC' | 'DESC';
}

/**
 * A ledger query on PostgreSQL, checked as on SQLite (the same fields, errors and order). The session and agent
 * are indexed there, the event type only for rare kinds (kinds.ts: DENSE_KINDS); the submission id and the work order are not (PostgreSQL keeps only the indexes the
 * gateway reads by), and a time range filters on the timestamp, which holds for a migrated chain whose times are not
 * in chain order.
 */
export function compilePgQuery(query: LedgerQuery): PgQuery {
  const checked = checkQuery(query);
  const where: string[] = [];
  const values: unknown[] = [];
  const param = (value: unknown): string => {
    values.push(value);
    return `$${values.length}`;
  };
  let recheck: PgQuery['recheck'];
  for (const [field, value] of checked.equal) {
    if (field === 'event_type') where.push(`event_type = ${param(value)}`);
    else if (field === 'work_order_id') {
      // Metadata is canonical JSON text, not cast to json: a \u0000 anywhere in a row makes PostgreSQL refuse to read
      // its fields. The text narrows the rows, the parsed top level decides (as SQLite's generated column reads it).
      where.push(`strpos(metadata, ${param(`"work_order_id":${JSON.stringify(value)}`)}) > 0`);
      recheck = (row) => parseStoredMetadata(row).work_order_id === value;
    }
    // Stored as the UTF-8 bytes that are hashed.
    else where.push(`${field} = ${param(Buffer.from(value, 'utf8'))}`);
  }
  if (checked.since !== undefined) where.push(`timestamp >= ${param(checked.since)}`);
  if (checked.until !== undefined) where.push(`timestamp <= ${param(checked.until)}`);
  const order = checked.order;
  return {
    order,
    ...(checked.limit === undefined ? {} : { limit: checked.limit }),
    ...(recheck === undefined ? {} : { recheck }),
    sql(afterSeq, limit) {
      const all = [...values];
      const clauses = [...where];
      if (afterSeq !== undefined) {
        all.push(afterSeq);
        clauses.push(`seq ${order === 'ASC' ? '>' : '<'} $${all.length}`);
      }
      let tail = '';
      if (limit !== undefined) {
        all.push(limit);
        tail = ` LIMIT $${all.length}`;
      }
      const filter = clauses.length > 0 ? ` WHERE ${clauses.join(' AND ')}` : '';
      return {
        text: `SELECT ${PG_ROW_COLUMNS} FROM cplane_entries${filter} ORDER BY seq ${order}${tail}`,
        values: all,
      };
    },
  };
}
