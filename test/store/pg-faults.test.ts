// The PostgreSQL ledger when the database fails under it: a reply lost after the commit is not written twice;
// a server stopped mid-run gives a coded error with nothing half-written, and the same handle carries on once it
// is back.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { pgSkip, startPgServer, type PgServer } from '../../scripts/lib/pg-server.js';
import type { AppendInput } from '../../staging/PKG-KERNEL-001/HOT/kernel/ledger/entry.js';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';

// From the dev root, as the root runs them (and as coverage counts them).
const { CpError } =
  await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/errors.js')>('HOT/kernel/errors.js');
const { PgLedger } = await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/pg/pg-ledger.js')>(
  'HOT/kernel/ledger/pg/pg-ledger.js',
);
const { verifyStore } =
  await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/store.js')>(
    'HOT/kernel/ledger/store.js',
  );

const skip = pgSkip();
const havePg = skip === false;

let server: PgServer | undefined;
before(async () => {
  if (havePg) server = await startPgServer();
});
after(() => server?.stop());

const note = (n: number): AppendInput => ({
  event_type: 'EXCHANGE',
  submission_id: 'anthropic.messages',
  decision: 'SUCCESS',
  reason: 'r',
  metadata: { session_id: 'S1', n },
  content: { prompt: [`prompt ${n}`], response: [`answer ${n}`] },
});

test('a reply lost after the commit: the append reports success once, and the entries are there once', {
  skip,
}, async () => {
  const ledger = await PgLedger.open((server as PgServer).url, { create: true });
  try {
    await ledger.append(note(0));
    const pool = ledger.pool as unknown as { query: (...args: unknown[]) => Promise<unknown> };
    const real = pool.query.bind(pool);
    let lost = 0;
    pool.query = async (...args: unknown[]) => {
      const result = await real(...args);
      const name = typeof args[0] === 'object' && args[0] !== null ? (args[0] as { name?: string }).name : undefined;
      if (lost === 0 && name?.startsWith('cplane_append') === true) {
        lost += 1;
        throw Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
      }
      return result;
    };
    const [entry] = await ledger.appendBatch([note(1)]);
    pool.query = real;
    assert.equal(lost, 1, 'the reply of the append was lost');
    const rows = [];
    for await (const row of ledger.rows()) rows.push(row);
    assert.equal(rows.length, 2, 'written once');
    assert.equal(rows[1]?.id, entry?.id);
    assert.equal((await verifyStore(ledger)).ok, true);
  } finally {
    await ledger.close();
  }
});

test('the database stopped mid-run: a coded error, nothing half-written; back up, the same handle appends on', {
  skip,
}, async () => {
  const s = server as PgServer;
  const ledger = await PgLedger.open(s.url, { create: true });
  try {
    const before = (await ledger.headAnchor()).seq;
    await ledger.append(note(10));
    s.halt();
    await assert.rejects(
      ledger.appendBatch([note(11), note(12)]),
      (e: unknown) => e instanceof CpError && e.code === 'ERR_STORE_UNAVAILABLE',
    );
    s.start();
    const resumed = await ledger.appendBatch([note(13), note(14)]);
    assert.equal(resumed.length, 2);
    const check = await verifyStore(ledger);
    assert.equal(check.ok, true, JSON.stringify(check));
    assert.equal(check.entries, before + 3, 'the failed batch left nothing; the others are there once');
    const read = await ledger.get(resumed[1]?.id as string);
    assert.equal(read?.metadata.prompt, 'prompt 14');
  } finally {
    await ledger.close();
  }
});

test('a database that comes back behind a writer (restored, failed over) gets no gap: the writer re-reads the head', {
  skip,
}, async () => {
  const s = server as PgServer;
  const admin = await PgLedger.open(s.url, { create: true });
  const writer = await PgLedger.open(s.url, { create: true });
  try {
    await writer.append(note(20));
    await writer.append(note(21));
    const cached = await writer.headAnchor();
    // The last entry vanishes as a replica behind the primary would lack it.
    await admin.pool.query('ALTER TABLE cplane_entries DISABLE TRIGGER cplane_entries_append_only');
    await admin.pool.query('DELETE FROM cplane_entries WHERE seq = $1', [cached.seq]);
    await admin.pool.query('ALTER TABLE cplane_entries ENABLE TRIGGER cplane_entries_append_only');
    const before = writer.stats.conflicts;
    const [entry] = await writer.appendBatch([
      { event_type: 'NOTE', submission_id: 's', decision: 'OK', reason: 'after', metadata: {} },
    ]);
    assert.equal(writer.stats.conflicts, before + 1, 'the stale head was noticed');
    const check = await verifyStore(writer);
    assert.equal(check.ok, true, JSON.stringify(check));
    assert.equal(check.head.hash, entry?.entry_hash);
    assert.equal(check.head.seq, cached.seq, 'written where the lost entry was, linked to what is there');
  } finally {
    await writer.close();
    await admin.close();
  }
});
