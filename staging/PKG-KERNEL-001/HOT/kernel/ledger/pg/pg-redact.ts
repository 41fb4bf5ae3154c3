import type pg from 'pg';
import type { Built, ChainHead } from '../build.js';
import { hex, oneRowColumns } from './pg-rows.js';
import { APPEND_ONE_SQL, REDACT_SQL } from './pg-sql.js';
import { pgTransaction } from './pg-transaction.js';

/** The REDACTED entry and the UPDATE on one connection, committed together; undefined when `head` left the chain. */
export function redactWrite(
  pool: pg.Pool,
  hashed: Iterable<Built>,
  entries: Built[],
  head: ChainHead,
  sorted: readonly string[],
): Promise<{ redacted: number; xid: string } | undefined> {
  return pgTransaction(pool, async (client) => {
    // The entry before the UPDATE: a writer storing the block again waits on the UPDATE's row lock, so the
    // redaction must hold no row such a writer needs before it has taken its position, or the two deadlock.
    for (const one of hashed) entries.push(one);
    const inserted = await client.query({
      name: 'cplane_append_one',
      text: APPEND_ONE_SQL,
      values: [...oneRowColumns(entries[0] as Built, head.seq + 1), head.seq, head.hash],
    });
    if (inserted.rowCount === 0) return { commit: false, value: undefined };
    const updated = await client.query(REDACT_SQL, [(entries[0] as Built).entry.id, sorted.map(hex)]);
    const row = updated.rows[0] as { n: string; xid: string };
    return { commit: true, value: { redacted: Number(row.n), xid: row.xid } };
  });
}

/**
 * What a committed redaction did, read back. Its transaction id is unknown, so the scrub is given the next one
 * to be assigned: it then waits for every snapshot open now, which includes those older than the redaction.
 */
export async function redactedBy(pool: pg.Pool, id: string): Promise<{ redacted: number; xid: string }> {
  const r = await pool.query(
    `SELECT count(*) AS n, (txid_snapshot_xmax(txid_current_snapshot()) % 4294967296)::text AS xid
     FROM cplane_content_blocks WHERE redacted_by = $1`,
    [id],
  );
  const row = r.rows[0] as { n: string; xid: string };
  return { redacted: Number(row.n), xid: row.xid };
}
