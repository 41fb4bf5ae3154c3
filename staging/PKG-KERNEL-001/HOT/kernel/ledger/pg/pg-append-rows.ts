import type pg from 'pg';
import type { ContentBlockLine, ContentListLine } from '../content.js';
import { type Anchor, GENESIS_HASH } from '../entry.js';
import type { EntryRow } from '../rows.js';
import { refusedValues, storeError } from './pg-errors.js';
import { hex, indexed, utf8 } from './pg-rows.js';
import { APPEND_SQL } from './pg-sql.js';
import { pgTransaction } from './pg-transaction.js';
import { PG_LEDGER_LOCK } from './schema.js';

/**
 * Appends rows exactly as another store holds them (a migration): each was re-hashed by the caller, and the
 * database re-checks that they continue `expect`. Content goes first, in the same transaction. False: the head
 * moved (another writer), nothing written.
 */
export function appendStoredRows(
  pool: pg.Pool,
  expect: Anchor,
  rows: readonly EntryRow[],
  blocks: readonly ContentBlockLine[],
  lists: readonly ContentListLine[],
): Promise<boolean> {
  return pgTransaction(pool, async (client) => {
    await client.query(
      'INSERT INTO cplane_content_blocks (digest, size, text, redacted_by) SELECT * FROM unnest($1::bytea[], $2::int[], $3::bytea[], $4::text[]) ON CONFLICT (digest) DO NOTHING',
      [
        blocks.map((b) => hex(b.digest)),
        blocks.map((b) => b.size),
        blocks.map((b) => (b.text === undefined ? null : utf8(b.text))),
        blocks.map((b) => b.redacted_by ?? null),
      ],
    );
    // A migration continues exactly the head it was told: checked under the lock every DDL change takes.
    await client.query(`SELECT pg_advisory_xact_lock(${PG_LEDGER_LOCK})`);
    const head = await client.query('SELECT seq, entry_hash FROM cplane_entries ORDER BY seq DESC LIMIT 1');
    const at = head.rows[0] as { seq: string; entry_hash: string } | undefined;
    const ok = Number(at?.seq ?? 0) === expect.seq && (at?.entry_hash ?? GENESIS_HASH) === expect.hash;
    if (ok) {
      await client.query(
        'INSERT INTO cplane_content_lists (digest, parent, block) SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::bytea[]) ON CONFLICT (digest) DO NOTHING',
        [lists.map((l) => hex(l.digest)), lists.map((l) => hex(l.parent)), lists.map((l) => hex(l.block))],
      );
      await client.query(APPEND_SQL, [...storedRowColumns(rows), expect.seq, expect.hash]);
    }
    return { commit: ok, value: ok };
  }).catch((error: unknown) => {
    throw refusedValues(error) ?? storeError(error);
  });
}

/** The parameters $1..$12 of APPEND_SQL for rows as stored (metadata as its canonical JSON text). */
function storedRowColumns(rows: readonly EntryRow[]): unknown[] {
  const metadata = rows.map((r) => JSON.parse(r.metadata) as Record<string, unknown>);
  return [
    rows.map((r) => r.seq),
    rows.map((r) => r.id),
    rows.map((r) => r.event_type),
    rows.map((r) => utf8(r.submission_id)),
    rows.map((r) => utf8(r.decision)),
    rows.map((r) => utf8(r.reason)),
    rows.map((r) => r.metadata),
    rows.map((r) => r.timestamp),
    rows.map((r) => r.previous_hash),
    rows.map((r) => r.entry_hash),
    metadata.map((m) => indexed(m.session_id)),
    metadata.map((m) => indexed(m.agent_id)),
  ];
}
