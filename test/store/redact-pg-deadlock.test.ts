// A redaction on PostgreSQL deadlocked with another writer: the server aborts the redaction's transaction to break
// the cycle, and the redaction runs it again and lands once; one that keeps being chosen gives up, coded, with
// nothing written. The deadlock is made, not hoped for: the other writer holds the block's row, waits until the
// redaction is queued behind it, then takes the chain position the redaction has just taken.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { createDatabase, pgQuery, pgSkip, startPgServer, type PgServer } from '../../scripts/lib/pg-server.js';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';
import type { PgLedger as PgLedgerType } from '../../staging/PKG-KERNEL-001/HOT/kernel/ledger/pg/pg-ledger.js';

const { PgLedger } = await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/pg/pg-ledger.js')>(
  'HOT/kernel/ledger/pg/pg-ledger.js',
);
const { selectRedaction } = await fromDevRoot<
  typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/redaction.js')
>('HOT/kernel/ledger/redaction.js');
const { verifyStore } =
  await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/store.js')>(
    'HOT/kernel/ledger/store.js',
  );

const skip = pgSkip();
let server: PgServer | undefined;

before(async () => {
  if (skip !== false) return;
  server = await startPgServer();
});
after(() => server?.stop());

const SECRET = '{"role":"user","content":"my key is sk-deadlock-0001"}';

/** A database holding one exchange; the ledger opened on it and the digest of the block with the secret. */
async function ledgerWithSecret(name: string): Promise<{ url: string; store: PgLedgerType; digest: string }> {
  const url = await createDatabase(server as PgServer, name);
  // The server checks a lock wait for a cycle once, this long after the wait began: the redaction's check must come
  // after the other writer has closed the cycle (well under a second after the poll sees the redaction wait).
  await pgQuery(url, `ALTER DATABASE ${name} SET deadlock_timeout = '1s'`);
  const store = await PgLedger.open(url, { create: true });
  await store.append({
    event_type: 'EXCHANGE',
    submission_id: 'anthropic.messages',
    decision: 'SUCCESS',
    reason: 'Exchange completed',
    metadata: { session_id: 'S1', agent_id: 'A1' },
    content: { prompt: ['{"messages":[', SECRET, ']}'], response: ['noted'] },
  });
  const { blocks } = await selectRedaction(store, { session: 'S1' });
  let digest = '';
  for (const d of blocks) if ((await store.block(d))?.text === SECRET) digest = d;
  assert.notEqual(digest, '');
  return { url, store, digest };
}

/**
 * The other writer: it holds the block's row (as a writer mid-transaction on that block would) and checks for a
 * deadlock only long after the redaction has, so the redaction is always the one the server aborts.
 */
async function rowHolder(url: string, digest: string): Promise<pg.Client> {
  const other = new pg.Client({ connectionString: url });
  await other.connect();
  await other.query("SET deadlock_timeout = '1min'");
  await other.query('BEGIN');
  await other.query("SELECT 1 FROM cplane_content_blocks WHERE digest = decode($1, 'hex') FOR UPDATE", [digest]);
  return other;
}

/** Until the redaction's UPDATE waits for the block's row lock: its entry is then in, uncommitted. */
async function redactionWaiting(url: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const r = await pgQuery(
      url,
      "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%SET text = NULL%' AND datname = current_database()",
    );
    if (r.rows.length > 0) return;
    if (Date.now() >= deadline) throw new Error('the redaction never waited for the block row');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * The other writer takes the position after the head the redaction hashed against: it waits for the redaction's
 * transaction, which closes the cycle. Its row going in proves that transaction rolled back (had it committed,
 * this would be a unique violation on seq).
 */
async function takePosition(other: pg.Client, seq: number): Promise<void> {
  const taken = await other.query(
    `INSERT INTO cplane_entries (seq, id, event_type, submission_id, decision, reason, metadata, timestamp, previous_hash, entry_hash)
     VALUES ($1, $2, 'NOTE', 's', 'OK', 'r', '{}', '2000-01-01T00:00:00.000Z', 'x', 'x')`,
    [seq, `LED-other-${seq}`],
  );
  assert.equal(taken.rowCount, 1);
}

const settled = <T>(p: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> =>
  p.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );

const RECORD = { reason: 'pasted key', by: 't', exchanges: [] };

test('a redaction the server aborts to break a deadlock with another writer runs again and lands once; the chain verifies', {
  skip,
}, async () => {
  const { url, store, digest } = await ledgerWithSecret('redact_deadlock_once');
  const other = await rowHolder(url, digest);
  try {
    const { seq } = await store.headAnchor();
    const outcome = settled(store.redact([digest], RECORD));
    await redactionWaiting(url);
    await takePosition(other, seq + 1);
    // The other writer gives up its position; the block's row is free once it ends.
    await other.query('ROLLBACK');
    const done = await outcome;
    assert.ok(done.ok, `the redaction failed: ${done.ok ? '' : String(done.error)}`);
    assert.deepEqual([done.value.redacted, done.value.already], [1, 0]);
    const records = await pgQuery(url, "SELECT id, seq FROM cplane_entries WHERE event_type = 'REDACTED'");
    assert.deepEqual(records.rows, [{ id: done.value.entry.id, seq: String(seq + 1) }]);
    assert.deepEqual(await store.block(digest), {
      digest,
      size: Buffer.byteLength(SECRET),
      redacted_by: done.value.entry.id,
    });
    const verified = await verifyStore(store);
    assert.equal(verified.ok, true, JSON.stringify(verified));
    assert.deepEqual([verified.entries, verified.content?.redacted_blocks], [2, 1]);
  } finally {
    await other.end();
    await store.close();
  }
});

test('a redaction chosen as the deadlock victim on every attempt gives up after 5, ERR_LEDGER_CONTENDED, nothing written', {
  skip,
}, async () => {
  const { url, store, digest } = await ledgerWithSecret('redact_deadlock_always');
  const other = await rowHolder(url, digest);
  try {
    const { seq } = await store.headAnchor();
    const outcome = settled(store.redact([digest], RECORD));
    for (let round = 1; round <= 5; round += 1) {
      await redactionWaiting(url);
      // Each position taken in a savepoint given back at once: the row lock stays, ready for the next attempt.
      await other.query('SAVEPOINT take');
      await takePosition(other, seq + 1);
      await other.query('ROLLBACK TO SAVEPOINT take');
    }
    const done = await outcome;
    assert.equal(done.ok, false, 'the redaction landed although every attempt deadlocked');
    const error = (done as { error: { code?: string; details?: Record<string, unknown> } }).error;
    assert.equal(error.code, 'ERR_LEDGER_CONTENDED', String(error));
    assert.deepEqual(error.details, { attempts: 5, sqlstate: '40P01' });
    await other.query('ROLLBACK');
    const records = await pgQuery(url, "SELECT count(*)::int AS n FROM cplane_entries WHERE event_type = 'REDACTED'");
    assert.equal(records.rows[0].n, 0);
    assert.equal((await store.block(digest))?.text, SECRET);
    assert.equal((await verifyStore(store)).ok, true);
  } finally {
    await other.end();
    await store.close();
  }
});
