// The PostgreSQL ledger when the database fails under it: a reply lost after the commit is not written twice;
// a server stopped mid-run gives a coded error with nothing half-written, and the same handle carries on once it
// is back.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import { createDatabase, pgQuery, pgSkip, startPgServer, type PgServer } from '../../scripts/lib/pg-server.js';
import type { AppendInput } from '../../staging/PKG-KERNEL-001/HOT/kernel/ledger/entry.js';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';

// From the dev root, as the root runs them (and as coverage counts them).
const { CpError } =
  await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/errors.js')>('HOT/kernel/errors.js');
const { COPY_FROM, PgLedger } = await fromDevRoot<
  typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/pg/pg-ledger.js')
>('HOT/kernel/ledger/pg/pg-ledger.js');
const { PgBudgeter } = await fromDevRoot<
  typeof import('../../staging/PKG-BUDGETER-001/HOT/budgeter/pg/pg-budgeter.js')
>('HOT/budgeter/pg/pg-budgeter.js');
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

test('a large batch (COPY): a COMMIT reply lost is written once; a failure before it leaves nothing', {
  skip,
}, async () => {
  const ledger = await PgLedger.open((server as PgServer).url, { create: true });
  const batch = (from: number) => Array.from({ length: COPY_FROM }, (_, i) => note(from + i));
  try {
    await ledger.append(note(0));
    const start = (await ledger.headAnchor()).seq;
    const pool = ledger.pool as unknown as {
      connect: (callback?: unknown) => Promise<{ query: (...a: unknown[]) => Promise<unknown> }>;
    };
    const realConnect = pool.connect.bind(pool);
    // The connection breaks on the statement `at`: its reply lost after the server ran it (COMMIT), or the socket
    // cut while the rows stream in (COPY).
    const breakOn = (at: 'COMMIT' | 'COPY') => {
      let broken = 0;
      // pool.query checks out with a callback: those pass through; the COPY transaction checks out by promise.
      pool.connect = async (callback?: unknown) => {
        if (callback !== undefined) return realConnect(callback);
        const client = await realConnect();
        const real = client.query.bind(client) as (...a: unknown[]) => unknown;
        client.query = ((...args: unknown[]) => {
          const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string }).text;
          if (broken > 0 || text?.startsWith(at) !== true) return real(...args);
          broken += 1;
          if (at === 'COPY') {
            const stream = real(...args);
            setImmediate(() => (client as unknown as { connection: { stream: Socket } }).connection.stream.destroy());
            return stream;
          }
          return (real(...args) as Promise<unknown>).then(() => {
            throw Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
          });
        }) as typeof client.query;
        return client;
      };
      return () => {
        pool.connect = realConnect;
        return broken;
      };
    };
    let restore = breakOn('COMMIT');
    const written = await ledger.appendBatch(batch(1));
    assert.equal(restore(), 1, 'the COMMIT reply was lost');
    assert.equal(written.length, COPY_FROM);
    assert.equal((await ledger.headAnchor()).seq, start + COPY_FROM, 'written once');
    restore = breakOn('COPY');
    await assert.rejects(
      ledger.appendBatch(batch(1000)),
      (e: unknown) => e instanceof CpError && e.code === 'ERR_STORE_UNAVAILABLE',
    );
    assert.equal(restore(), 1);
    assert.equal((await ledger.headAnchor()).seq, start + COPY_FROM, 'nothing of the failed batch');
    const check = await verifyStore(ledger);
    assert.equal(check.ok, true, JSON.stringify(check));
    const again = await ledger.appendBatch(batch(2000));
    assert.equal(
      (await ledger.get(again[COPY_FROM - 1]?.id as string))?.metadata.prompt,
      `prompt ${2000 + COPY_FROM - 1}`,
    );
  } finally {
    await ledger.close();
  }
});

test('a large batch refused early (a lost race) or failing half-way through hashing leaves the connection usable', {
  skip,
}, async () => {
  const url = (server as PgServer).url;
  let thrown = 0;
  let failAt = -1;
  const ids = (seq: number): string => {
    if (seq === failAt && thrown === 0) {
      thrown += 1;
      throw new Error('id source failed');
    }
    return `LED-${(0xcd000000 + seq).toString(16)}`;
  };
  // One connection: a COPY left hanging would block every later call.
  const writer = await PgLedger.open(url, { create: true, poolSize: 1, idSource: ids });
  const other = await PgLedger.open(url, { create: true });
  const many = (from: number) => Array.from({ length: COPY_FROM * 5 }, (_, i) => note(from + i));
  try {
    await writer.append(note(0));
    // Another writer takes the next position: the first row of the large batch is refused while the rest streams.
    await other.append(note(1));
    const conflicts = writer.stats.conflicts;
    const landed = await writer.appendBatch(many(10));
    assert.equal(writer.stats.conflicts, conflicts + 1, 'the refusal was seen and the batch hashed again');
    assert.equal(landed.length, COPY_FROM * 5);
    const head = await writer.headAnchor();
    failAt = head.seq + COPY_FROM * 2 + 3;
    await assert.rejects(writer.appendBatch(many(2000)), /id source failed/);
    assert.deepEqual(await writer.headAnchor(), head, 'nothing of the failed batch');
    const after = await writer.appendBatch(many(4000));
    assert.equal(after.length, COPY_FROM * 5);
    const check = await verifyStore(writer);
    assert.equal(check.ok, true, JSON.stringify(check));
  } finally {
    await writer.close();
    await other.close();
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
    // The same with a batch large enough to go by COPY.
    await admin.pool.query('ALTER TABLE cplane_entries DISABLE TRIGGER cplane_entries_append_only');
    await admin.pool.query('DELETE FROM cplane_entries WHERE seq = $1', [cached.seq]);
    await admin.pool.query('ALTER TABLE cplane_entries ENABLE TRIGGER cplane_entries_append_only');
    const large = await writer.appendBatch(Array.from({ length: COPY_FROM }, (_, i) => note(100 + i)));
    assert.equal(writer.stats.conflicts, before + 2, 'the stale head was noticed by COPY');
    const after = await verifyStore(writer);
    assert.equal(after.ok, true, JSON.stringify(after));
    assert.equal(after.head.seq, cached.seq - 1 + COPY_FROM);
    assert.equal(after.head.hash, large[COPY_FROM - 1]?.entry_hash);
  } finally {
    await writer.close();
    await admin.close();
  }
});

test('a value PostgreSQL refuses (a session id over its index row limit) is the entries fault: coded, nothing written', {
  skip,
}, async () => {
  const ledger = await PgLedger.open((server as PgServer).url, { create: true });
  try {
    await ledger.append(note(0));
    const head = await ledger.headAnchor();
    // Incompressible, so the index row stays over the limit (about 2.7 KB) that a few KiB of session id breaks.
    const long = randomBytes(4000).toString('base64');
    const refused = (e: unknown): boolean =>
      e instanceof CpError && e.code === 'ERR_LEDGER_ENTRY_INVALID' && /\(54000: index row/.test(e.message);
    await assert.rejects(ledger.append({ ...note(1), metadata: { session_id: long } }), refused);
    // The same inside a batch large enough to go by COPY.
    const batch = Array.from({ length: COPY_FROM }, (_, i) => note(10 + i));
    batch[COPY_FROM - 1] = { ...note(9), metadata: { session_id: long } };
    await assert.rejects(ledger.appendBatch(batch), refused);
    assert.deepEqual(await ledger.headAnchor(), head, 'nothing was written');
    await ledger.append(note(2));
    assert.equal((await verifyStore(ledger)).ok, true);
  } finally {
    await ledger.close();
  }
});

test('a server that stops answering (frozen): appends and budget steps fail coded, not hang; thawed, both carry on', {
  skip,
  // Each call below waits out a short timeout; without one it would wait for ever, and fail here.
  timeout: 120_000,
}, async () => {
  const s = server as PgServer;
  const timeouts = { timeouts: { connectMs: 1500, queryMs: 1500 } };
  const ledger = await PgLedger.open(s.url, { create: true, ...timeouts });
  const budget = await PgBudgeter.open(s.url, {
    create: true,
    config: { schema_version: '1', mode: 'enforce', currency: 'USD', pricing: {}, limits: {}, rate_limits: {} },
    ...timeouts,
  });
  const reserve = (id: string) =>
    budget.reserve({ request_id: id, session_id: 'S1', model: 'm1', estimated_input_tokens: 1, max_output_tokens: 1 });
  const unavailable = (e: unknown): boolean => e instanceof CpError && e.code === 'ERR_STORE_UNAVAILABLE';
  let frozen = false;
  try {
    await ledger.append(note(30));
    assert.equal((await reserve('frozen-0')).ok, true);
    s.freeze();
    frozen = true;
    // On connections already open, and on ones opened now.
    await assert.rejects(ledger.append(note(31)), unavailable);
    await assert.rejects(ledger.headAnchor(), unavailable);
    await assert.rejects(reserve('frozen-1'), unavailable);
    await assert.rejects(PgLedger.open(s.url, { create: false, ...timeouts }), unavailable);
    s.thaw();
    frozen = false;
    // The statements sent while frozen may run once the server wakes: an append whose outcome was unknown lands
    // whole or not at all, and the next append links to whatever is there.
    const after = await ledger.append(note(32));
    assert.equal((await reserve('frozen-2')).ok, true);
    const check = await verifyStore(ledger);
    assert.equal(check.ok, true, JSON.stringify(check));
    assert.equal(check.head.hash, after.entry_hash);
  } finally {
    if (frozen) s.thaw();
    await budget.close();
    await ledger.close();
  }
});

test('a database that cannot take writes (read-only, a standby failed over to, a role without rights) is coded ERR_STORE_UNAVAILABLE', {
  skip,
}, async () => {
  const s = server as PgServer;
  const url = await createDatabase(s, 'cannot_write');
  const budgetConfig = {
    schema_version: '1',
    mode: 'enforce',
    currency: 'USD',
    pricing: {},
    limits: {},
    rate_limits: {},
  };
  const laidOut = await PgLedger.open(url, { create: true });
  await (await PgBudgeter.open(url, { create: true, config: budgetConfig })).close();
  await laidOut.append(note(0));
  await laidOut.close();
  const unavailable = (sqlstate: string) => (e: unknown) =>
    e instanceof CpError && e.code === 'ERR_STORE_UNAVAILABLE' && e.details?.errno === sqlstate;
  const reserve = (budget: { reserve: (r: unknown) => Promise<unknown> }, id: string) =>
    budget.reserve({ request_id: id, session_id: 'S1', model: 'm1', estimated_input_tokens: 1, max_output_tokens: 1 });
  // Read-only, as a hot standby is: its sessions cannot write.
  await pgQuery(s.url, 'ALTER DATABASE cannot_write SET default_transaction_read_only = on');
  let ledger = await PgLedger.open(url);
  let budget = await PgBudgeter.open(url, { config: budgetConfig });
  try {
    await assert.rejects(ledger.append(note(1)), unavailable('25006'));
    await assert.rejects(reserve(budget, 'ro-1'), unavailable('25006'));
  } finally {
    await budget.close();
    await ledger.close();
    await pgQuery(s.url, 'ALTER DATABASE cannot_write RESET default_transaction_read_only');
  }
  // A role that may read the tables but not write them.
  await pgQuery(url, 'CREATE ROLE reader LOGIN');
  await pgQuery(url, 'GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader');
  const asReader = url.replace('cplane@', 'reader@');
  ledger = await PgLedger.open(asReader);
  budget = await PgBudgeter.open(asReader, { config: budgetConfig });
  try {
    await assert.rejects(ledger.append(note(2)), unavailable('42501'));
    await assert.rejects(reserve(budget, 'reader-1'), unavailable('42501'));
  } finally {
    await budget.close();
    await ledger.close();
  }
  ledger = await PgLedger.open(url);
  try {
    await ledger.append(note(3));
    const check = await verifyStore(ledger);
    assert.equal(check.ok, true, JSON.stringify(check));
    assert.equal(check.entries, 2, 'nothing of the refused appends');
  } finally {
    await ledger.close();
  }
});
