// One contract, every ledger backend (hono-style): the SQLite file and PostgreSQL run the same tests. A
// throwaway PostgreSQL server is started from the installed binaries; without them the PostgreSQL half prints
// one SKIP line (in CI, where .ci/run installs them, a missing server fails the suite).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { createDatabase, pgSkip, startPgServer, type PgServer } from '../../scripts/lib/pg-server.js';
import type { AppendInput, IdSource } from '../../staging/PKG-KERNEL-001/HOT/kernel/ledger/entry.js';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';
import type { PgLedger as PgLedgerT } from '../../staging/PKG-KERNEL-001/HOT/kernel/ledger/pg/pg-ledger.js';
import type { LedgerStore } from '../../staging/PKG-KERNEL-001/HOT/kernel/ledger/store.js';
import type { RedactionStore } from '../../staging/PKG-KERNEL-001/HOT/kernel/ledger/redaction.js';

// From the dev root, as the root runs them (and as coverage counts them).
const { CpError } =
  await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/errors.js')>('HOT/kernel/errors.js');
const { Ledger } =
  await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/ledger.js')>(
    'HOT/kernel/ledger/ledger.js',
  );
const { COPY_FROM, PgLedger } = await fromDevRoot<
  typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/pg/pg-ledger.js')
>('HOT/kernel/ledger/pg/pg-ledger.js');
const { pgListSessions, pgSessionTurns } = await fromDevRoot<
  typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/pg/pg-sessions.js')
>('HOT/kernel/ledger/pg/pg-sessions.js');
const { pgDispatchRecords } = await fromDevRoot<
  typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/pg/pg-checks.js')
>('HOT/kernel/ledger/pg/pg-checks.js');
const { previewRedaction, selectRedaction } = await fromDevRoot<
  typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/redaction.js')
>('HOT/kernel/ledger/redaction.js');
const { sqliteLedgerStore, verifyStore } =
  await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/store.js')>(
    'HOT/kernel/ledger/store.js',
  );

const skipPg = pgSkip();
const havePg = skipPg === false;

let server: PgServer | undefined;
let work: string;
let databases = 0;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'cp-store-'));
  if (havePg) server = await startPgServer();
});
after(() => {
  server?.stop();
  rmSync(work, { recursive: true, force: true });
});

/** What someone with the database itself could do to a block, the triggers that forbid it out of the way. */
type Tamper = (op: 'empty' | 'delete' | 'edit', digest: string, by?: string) => Promise<void>;

interface Backend {
  name: 'sqlite' | 'postgres';
  skip: string | false;
  /** A fresh, empty ledger; `open` opens another handle (another process's view) on the same one. */
  fresh(options?: {
    clock?: () => number;
    idSource?: IdSource;
  }): Promise<{ store: LedgerStore & RedactionStore; open: () => Promise<LedgerStore>; tamper: Tamper }>;
}

const backends: Backend[] = [
  {
    name: 'sqlite',
    skip: false,
    async fresh(options = {}) {
      const path = join(work, `ledger-${(databases += 1)}.sqlite`);
      const open = async () => sqliteLedgerStore(Ledger.open(path, { create: true, ...options }));
      const tamper: Tamper = async (op, digest, by) => {
        const db = new Database(path);
        try {
          db.exec(
            'DROP TRIGGER IF EXISTS content_blocks_no_delete; DROP TRIGGER IF EXISTS content_blocks_redact_only;',
          );
          const sql = {
            empty: 'UPDATE content_blocks SET text = NULL, redacted_by = ? WHERE digest = unhex(?)',
            delete: 'DELETE FROM content_blocks WHERE digest = unhex(?)',
            edit: "UPDATE content_blocks SET text = 'tampered' WHERE digest = unhex(?)",
          }[op];
          db.prepare(sql).run(...(op === 'empty' ? [by, digest] : [digest]));
        } finally {
          db.close();
        }
      };
      return { store: await open(), open, tamper };
    },
  },
  {
    name: 'postgres',
    skip: skipPg,
    async fresh(options = {}) {
      const s = server as PgServer;
      const name = `ledger_${(databases += 1)}`;
      const url = await createDatabase(s, name);
      const open = () => PgLedger.open(url, { create: true, ...options });
      const tamper: Tamper = async (op, digest, by) => {
        const db = new pg.Client({ connectionString: url });
        await db.connect();
        try {
          // A superuser can switch the append-only triggers off; verify must not rely on them.
          await db.query('ALTER TABLE cplane_content_blocks DISABLE TRIGGER ALL');
          const sql = {
            empty: 'UPDATE cplane_content_blocks SET text = NULL, redacted_by = $2 WHERE digest = $1',
            delete: 'DELETE FROM cplane_content_blocks WHERE digest = $1',
            edit: "UPDATE cplane_content_blocks SET text = convert_to('tampered', 'UTF8') WHERE digest = $1",
          }[op];
          await db.query(sql, [Buffer.from(digest, 'hex'), ...(op === 'empty' ? [by] : [])]);
          await db.query('ALTER TABLE cplane_content_blocks ENABLE TRIGGER ALL');
        } finally {
          await db.end();
        }
      };
      return { store: await open(), open, tamper };
    },
  },
];

const exchange = (session: string, turn: number, extra = ''): AppendInput => {
  const pieces = ['{"messages":['];
  for (let i = 0; i <= turn; i += 1)
    pieces.push(`${i > 0 ? ',' : ''}{"role":"user","content":"m${i}${i === turn ? extra : ''}"}`);
  pieces.push(']}');
  return {
    event_type: 'EXCHANGE',
    submission_id: 'anthropic.messages',
    decision: 'SUCCESS',
    reason: 'Exchange completed',
    metadata: { session_id: session, agent_id: 'A1', input_tokens: turn },
    content: { prompt: pieces, response: [`answer ${turn}`] },
  };
};

for (const backend of backends) {
  describe(`ledger store contract: ${backend.name}`, { skip: backend.skip }, () => {
    test('append and batch give a chain that verifies; a read shows the text; the head is the last entry', async () => {
      const { store } = await backend.fresh();
      try {
        const one = await store.append({
          event_type: 'NOTE',
          submission_id: 's',
          decision: 'OK',
          reason: 'r',
          metadata: { a: 1 },
        });
        const batch = await store.appendBatch([exchange('S1', 0), exchange('S1', 1), exchange('S1', 2)]);
        assert.equal(batch[0]?.previous_hash, one.entry_hash);
        assert.deepEqual(await store.headAnchor(), { seq: 4, hash: batch[2]?.entry_hash });
        const read = await store.get(batch[2]?.id as string);
        assert.equal(
          read?.metadata.prompt,
          '{"messages":[{"role":"user","content":"m0"},{"role":"user","content":"m1"},{"role":"user","content":"m2"}]}',
        );
        assert.equal(read?.metadata.response, 'answer 2');
        const verified = await verifyStore(store);
        assert.equal(verified.ok, true, JSON.stringify(verified));
        assert.equal(verified.entries, 4);
        // The growing conversation is stored once: 3 turns, 5 distinct message/closing blocks + 3 answers.
        const content = await store.contentProblems();
        assert.equal(content.blocks, 2 + 3 + 3);
      } finally {
        await store.close();
      }
    });

    test('stored: true gives the entries as the rows hold them (metadata.content, the digests), not the text view', async () => {
      const { store } = await backend.fresh();
      try {
        const [viewed] = await store.appendBatch([exchange('S1', 0)]);
        const [stored] = await store.appendBatch([exchange('S1', 1)], { stored: true });
        assert.equal(typeof viewed?.metadata.prompt, 'string');
        assert.equal('content' in (viewed?.metadata ?? {}), false);
        const rows = [];
        for await (const row of store.rows()) rows.push(row);
        const row = rows.find((r) => r.id === stored?.id);
        assert.deepEqual(stored?.metadata, JSON.parse(row?.metadata ?? 'null'));
        assert.match(
          JSON.stringify(stored?.metadata.content),
          /^\{"prompt":"[0-9a-f]{64}","response":"[0-9a-f]{64}"\}$/,
        );
        assert.equal(stored?.entry_hash, row?.entry_hash);
        // A read still shows the text.
        const read = await store.get(stored?.id as string);
        assert.equal(
          read?.metadata.prompt,
          '{"messages":[{"role":"user","content":"m0"},{"role":"user","content":"m1"}]}',
        );
      } finally {
        await store.close();
      }
    });

    test('durable: false lands and chains as any append, one statement or COPY, and is counted apart from durable ones', async () => {
      const { store, open } = await backend.fresh();
      try {
        const note = (n: number): AppendInput => ({
          event_type: 'NOTE',
          submission_id: `n${n}`,
          decision: 'OK',
          reason: 'r',
          metadata: { session_id: 'S1' },
        });
        const start = { ...store.commitCount() };
        await store.appendBatch([note(1)], { durable: false });
        await store.appendBatch([exchange('S1', 0), exchange('S1', 1)], { durable: false });
        await store.appendBatch(
          Array.from({ length: COPY_FROM }, (_, i) => note(100 + i)),
          { durable: false },
        );
        await store.appendBatch([note(2)]);
        await store.append(note(3));
        const counted = store.commitCount();
        assert.deepEqual(
          { durable: counted.durable - start.durable, lazy: counted.lazy - start.lazy },
          { durable: 2, lazy: 3 },
        );
        // Another handle (another process) sees every entry, in chain order, and the chain verifies.
        const other = await open();
        try {
          assert.deepEqual(await other.headAnchor(), await store.headAnchor());
          assert.equal((await other.headAnchor()).seq, 1 + 2 + COPY_FROM + 2);
          assert.equal((await other.query({ event_type: 'EXCHANGE', session_id: 'S1' })).length, 2);
          assert.equal((await verifyStore(other)).ok, true);
        } finally {
          await other.close();
        }
      } finally {
        await store.close();
      }
    });

    test('once: a record the chain holds is left out, the rest of the batch lands; hosts racing record it once', async () => {
      const { store, open } = await backend.fresh();
      const hosts = [await open(), await open(), await open()];
      try {
        const settled = (id: string, session = 'S1'): AppendInput => ({
          event_type: 'BUDGET_SETTLED',
          submission_id: id,
          decision: 'SETTLED',
          reason: 'settled',
          metadata: { session_id: session, request_id: id },
        });
        const note = (n: number): AppendInput => ({
          event_type: 'NOTE',
          submission_id: 'r1',
          decision: 'SETTLED',
          reason: `n${n}`,
          metadata: { session_id: 'S1' },
        });
        const once = ['BUDGET_SETTLED'];
        await store.appendBatch([settled('r1')]);
        // The same kind, submission and decision is left out; another decision, kind or session's request is not,
        // and a kind `once` does not name is appended as often as given.
        const batch = await store.appendBatch(
          [
            settled('r1'),
            { ...settled('r1'), decision: 'SETTLED_USAGE_UNKNOWN' },
            note(1),
            note(2),
            settled('r2', 'S2'),
          ],
          { once },
        );
        assert.deepEqual(
          batch.map((e) => [e.event_type, e.submission_id, e.decision]),
          [
            ['BUDGET_SETTLED', 'r1', 'SETTLED_USAGE_UNKNOWN'],
            ['NOTE', 'r1', 'SETTLED'],
            ['NOTE', 'r1', 'SETTLED'],
            ['BUDGET_SETTLED', 'r2', 'SETTLED'],
          ],
        );
        assert.deepEqual(await store.appendBatch([settled('r1'), settled('r2', 'S2')], { once }), []);
        // Without `once` nothing is checked: the caller asked for an append.
        assert.equal((await store.appendBatch([settled('r1')])).length, 1);
        // Three hosts deliver the same two records at once (twice in one batch, too): each is in the chain once more.
        const before = (await store.query({ event_type: 'BUDGET_SETTLED', order: 'oldest' })).length;
        await Promise.all(
          hosts.map((h) => h.appendBatch([settled('r3'), settled('r4', 'S2'), settled('r3')], { once })),
        );
        const after = await store.query({ event_type: 'BUDGET_SETTLED', order: 'oldest' });
        assert.deepEqual(
          after.slice(before).map((e) => e.submission_id),
          ['r3', 'r4'],
        );
        assert.equal((await verifyStore(store)).ok, true);
      } finally {
        for (const h of hosts) await h.close();
        await store.close();
      }
    });

    test('a batch with one bad entry writes nothing', async () => {
      const { store } = await backend.fresh();
      try {
        await store.append(exchange('S1', 0));
        await assert.rejects(
          store.appendBatch([
            exchange('S1', 1),
            { event_type: 'bad type', submission_id: 's', decision: 'd', reason: 'r', metadata: {} },
          ]),
          (e: unknown) => e instanceof CpError && e.code === 'ERR_LEDGER_ENTRY_INVALID',
        );
        assert.equal((await store.headAnchor()).seq, 1);
      } finally {
        await store.close();
      }
    });

    test('text with U+0000 and a lone surrogate is stored as hashed and reads back; the chain verifies', async () => {
      const { store } = await backend.fresh();
      try {
        const entry = await store.append({
          event_type: 'NOTE',
          submission_id: 'nul\u0000here',
          decision: 'OK',
          reason: 'a \u0000 and a lone \ud800',
          metadata: { text: 'x\u0000y' },
          content: { prompt: ['p\u0000q'], response: ['r\ud800'] },
        });
        const read = await store.get(entry.id);
        assert.equal(read?.reason, 'a \u0000 and a lone \ufffd');
        assert.equal(read?.submission_id, 'nul\u0000here');
        assert.equal(read?.metadata.prompt, 'p\u0000q');
        assert.equal(read?.metadata.response, 'r\ufffd');
        assert.equal((await verifyStore(store)).ok, true);
      } finally {
        await store.close();
      }
    });

    test('hasExchange finds a session’s EXCHANGE by its DISPATCH even beside metadata holding U+0000', async () => {
      const { store } = await backend.fresh();
      try {
        const exchangeOf = (dispatch: string, text: string): AppendInput => ({
          event_type: 'EXCHANGE',
          submission_id: 'x',
          decision: 'ERROR',
          reason: 'r',
          metadata: { dispatch_entry_id: dispatch, error_message: text, session_id: 'SES-NUL' },
        });
        await store.appendBatch([exchangeOf('LED-00000001', 'odd \u0000 bytes'), exchangeOf('LED-00000002', 'ok')]);
        assert.equal(await store.hasExchange('SES-NUL', 'LED-00000002'), true);
        assert.equal(await store.hasExchange('SES-NUL', 'LED-00000001'), true);
        assert.equal(await store.hasExchange('SES-NUL', 'LED-00000003'), false);
        assert.equal(await store.hasExchange('SES-OTHER', 'LED-00000002'), false);
      } finally {
        await store.close();
      }
    });

    test('query: every filter, the order and the limit, as reads show the entries', async () => {
      let t = Date.parse('2026-03-01T00:00:00.000Z');
      const { store } = await backend.fresh({ clock: () => (t += 1000) });
      try {
        const written = await store.appendBatch([
          exchange('S1', 0),
          {
            event_type: 'NOTE',
            submission_id: 'sub-a',
            decision: 'OK',
            reason: 'r',
            metadata: { work_order_id: 'WO-1' },
          },
          // A U+0000 elsewhere in the metadata, and a nested work_order_id that is not the entry's.
          {
            event_type: 'NOTE',
            submission_id: 'sub-b',
            decision: 'OK',
            reason: 'r',
            metadata: { agent_id: 'A2', note: 'x\u0000y', work_order_id: 'WO-2', inner: { work_order_id: 'WO-1' } },
          },
          exchange('S2', 0),
          exchange('S1', 1),
        ]);
        const at = (i: number): string => written[i]?.timestamp as string;
        assert.equal(new Set(written.map((e) => e.timestamp)).size, 5, 'one second apart');
        const ids = async (q: Parameters<LedgerStore['query']>[0]): Promise<string[]> =>
          (await store.query(q)).map((e) => `${e.event_type}:${e.metadata.session_id ?? e.submission_id}`);
        assert.deepEqual(await ids({ session_id: 'S1' }), ['EXCHANGE:S1', 'EXCHANGE:S1']);
        assert.deepEqual(await ids({ event_type: 'NOTE', order: 'oldest' }), ['NOTE:sub-a', 'NOTE:sub-b']);
        // A kind every governed call writes (PostgreSQL finds it in chain order, not through the kind index).
        assert.deepEqual(await ids({ event_type: 'EXCHANGE', order: 'oldest' }), [
          'EXCHANGE:S1',
          'EXCHANGE:S2',
          'EXCHANGE:S1',
        ]);
        assert.deepEqual(await ids({ event_type: 'EXCHANGE', session_id: 'S1', limit: 1 }), ['EXCHANGE:S1']);
        assert.deepEqual(await ids({ submission_id: 'sub-b' }), ['NOTE:sub-b']);
        assert.deepEqual(await ids({ agent_id: 'A2' }), ['NOTE:sub-b']);
        assert.deepEqual(await ids({ work_order_id: 'WO-1' }), ['NOTE:sub-a']);
        assert.deepEqual(await ids({ work_order_id: 'WO-2' }), ['NOTE:sub-b']);
        assert.deepEqual(await ids({ since: at(1), until: at(3), order: 'oldest' }), [
          'NOTE:sub-a',
          'NOTE:sub-b',
          'EXCHANGE:S2',
        ]);
        assert.deepEqual(await ids({ limit: 2 }), ['EXCHANGE:S1', 'EXCHANGE:S2']);
        const [newest] = await store.query({ session_id: 'S1', limit: 1 });
        assert.equal(
          newest?.metadata.prompt,
          '{"messages":[{"role":"user","content":"m0"},{"role":"user","content":"m1"}]}',
        );
        // More look-alikes than one page of candidates: the match past them is still found, and only it.
        await store.appendBatch(
          Array.from({ length: 1100 }, (_, i) => ({
            event_type: 'NOTE',
            submission_id: 'pad',
            decision: 'OK',
            reason: 'r',
            metadata: { i, inner: { work_order_id: 'WO-1' } },
          })),
        );
        assert.deepEqual(await ids({ work_order_id: 'WO-1' }), ['NOTE:sub-a']);
        assert.deepEqual(await ids({ work_order_id: 'WO-1', limit: 1, order: 'oldest' }), ['NOTE:sub-a']);
        await assert.rejects(
          store.query({ since: 'yesterday' }),
          (e: unknown) => e instanceof CpError && e.code === 'ERR_LEDGER_QUERY_INVALID',
        );
      } finally {
        await store.close();
      }
    });

    test('four writers appending at once never fork the chain (batches with content, then single entries)', async () => {
      const { store, open } = await backend.fresh();
      const writers = [store, await open(), await open(), await open()];
      try {
        await Promise.all(
          writers.map(async (w, k) => {
            for (let i = 0; i < 25; i += 1) await w.appendBatch([exchange(`S${k}`, i), exchange(`S${k}`, i + 1)]);
          }),
        );
        const verified = await verifyStore(store);
        assert.equal(verified.ok, true, JSON.stringify(verified.first_bad));
        assert.equal(verified.entries, 200);
        // Each writer's batches are contiguous: the two entries of a batch are neighbours in the chain.
        const rows = [];
        for await (const row of store.rows()) rows.push(row);
        for (let i = 0; i < rows.length; i += 2)
          assert.equal(
            JSON.parse(rows[i]?.metadata ?? '{}').session_id,
            JSON.parse(rows[i + 1]?.metadata ?? '{}').session_id,
          );
        // Single appends without content take their own statement: they race for positions the same way.
        await Promise.all(
          writers.map(async (w, k) => {
            for (let i = 0; i < 25; i += 1)
              await w.append({
                event_type: 'NOTE',
                submission_id: `w${k}`,
                decision: 'OK',
                reason: `n${i}`,
                metadata: {},
              });
          }),
        );
        const again = await verifyStore(store);
        assert.equal(again.ok, true, JSON.stringify(again.first_bad));
        assert.equal(again.entries, 300);
        // The race was real: some appends lost their positions and were hashed again.
        if (backend.name === 'postgres')
          assert.ok(writers.reduce((n, w) => n + (w as PgLedgerT).stats.conflicts, 0) > 0, 'no append ever conflicted');
      } finally {
        for (const w of writers) await w.close();
      }
    });

    test('redact: the blocks named by an exchange, a session or a digest lose their text under one REDACTED entry; reads, verify and a second redaction agree', async () => {
      const { store } = await backend.fresh();
      try {
        const secret = '{"role":"user","content":"key sk-live-CONTRACT-0000"}';
        const [first, second, inline] = await store.appendBatch([
          { ...exchange('S1', 0), content: { prompt: ['{"messages":[', secret, ']}'], response: ['ok'] } },
          {
            ...exchange('S1', 1),
            content: {
              prompt: ['{"messages":[', secret, ',{"role":"user","content":"next"}', ']}'],
              response: ['ok 2'],
            },
          },
          {
            event_type: 'EXCHANGE',
            submission_id: 's',
            decision: 'SUCCESS',
            reason: 'r',
            metadata: { session_id: 'S1' },
          },
        ]);
        const one = await selectRedaction(store, { exchange: first?.id });
        assert.deepEqual(one.exchanges, [first?.id]);
        assert.equal(one.blocks.length, 4, 'three prompt blocks and the response');
        // The session: both exchanges with content (the one without is skipped), each shared block once.
        const session = await selectRedaction(store, { session: 'S1' });
        assert.deepEqual(session.exchanges, [first?.id, second?.id, inline?.id]);
        assert.equal(session.blocks.length, 4 + 2);
        const preview = await previewRedaction(store, one.blocks);
        const target = preview.find((b) => b.preview?.includes('sk-live-CONTRACT'));
        assert.ok(target, JSON.stringify(preview));
        assert.deepEqual(
          { size: target.size, redacted_by: target.redacted_by },
          { size: Buffer.byteLength(secret), redacted_by: null },
        );
        assert.deepEqual(await selectRedaction(store, { block: target.digest }), {
          blocks: [target.digest],
          exchanges: [],
        });
        const refused = async (t: Parameters<typeof selectRedaction>[1], code: string) =>
          assert.rejects(selectRedaction(store, t), (e: unknown) => e instanceof CpError && e.code === code);
        await refused({ exchange: inline?.id }, 'ERR_LEDGER_REDACT_INLINE');
        await refused({ exchange: 'LED-ffffffff' }, 'ERR_LEDGER_REDACT_NOT_FOUND');
        await refused({ session: 'S-none' }, 'ERR_LEDGER_REDACT_NOT_FOUND');
        await refused({ block: 'a'.repeat(64) }, 'ERR_LEDGER_REDACT_NOT_FOUND');

        const done = await store.redact([target.digest, target.digest], {
          reason: 'pasted key',
          by: 'tester',
          exchanges: [first?.id as string],
        });
        assert.deepEqual([done.redacted, done.already], [1, 0]);
        assert.deepEqual(
          [done.entry.event_type, done.entry.submission_id, done.entry.decision, done.entry.reason],
          ['REDACTED', 'LEDGER', 'REDACTED', 'pasted key'],
        );
        assert.deepEqual(done.entry.metadata, { blocks: [target.digest], by: 'tester', exchanges: [first?.id] });
        assert.deepEqual(await store.headAnchor(), { seq: 4, hash: done.entry.entry_hash });
        // Every exchange holding the block reads the marker in its place; the rest of the text is there.
        const marker = `[REDACTED:${done.entry.id}]`;
        assert.equal((await store.get(first?.id as string))?.metadata.prompt, `{"messages":[${marker}]}`);
        assert.equal(
          (await store.get(second?.id as string))?.metadata.prompt,
          `{"messages":[${marker},{"role":"user","content":"next"}]}`,
        );
        const [oldest] = await store.query({ session_id: 'S1', event_type: 'EXCHANGE', order: 'oldest', limit: 1 });
        assert.equal(oldest?.metadata.prompt, `{"messages":[${marker}]}`);
        assert.deepEqual((await store.block(target.digest))?.redacted_by, done.entry.id);
        assert.equal((await store.block(target.digest))?.text, undefined);
        const verified = await verifyStore(store);
        assert.equal(verified.ok, true, JSON.stringify(verified));
        assert.equal(verified.content?.redacted_blocks, 1);
        // Again, with one more block: the first counts as already redacted and keeps its first record.
        const again = await store.redact(
          [target.digest, ...one.blocks.filter((b) => b !== target.digest).slice(0, 1)],
          {
            reason: 'again',
            by: 'tester',
            exchanges: [],
          },
        );
        assert.deepEqual([again.redacted, again.already], [1, 1]);
        assert.equal((await store.block(target.digest))?.redacted_by, done.entry.id);
        const twice = await verifyStore(store);
        assert.equal(twice.ok, true, JSON.stringify(twice));
        assert.equal(twice.content?.redacted_blocks, 2);
      } finally {
        await store.close();
      }
    });

    test('a block emptied, deleted or edited outside redact FAILS verify, each named; the one redacted through it passes', async () => {
      const { store, tamper } = await backend.fresh();
      try {
        await store.appendBatch([
          exchange('S1', 0),
          { ...exchange('S2', 0), content: { prompt: ['[', '"x"', ']'], response: ['y'] } },
        ]);
        const blocks = (await selectRedaction(store, { session: 'S1' })).blocks;
        const others = (await selectRedaction(store, { session: 'S2' })).blocks.filter((b) => !blocks.includes(b));
        assert.ok(others.length >= 3, JSON.stringify(others));
        const [emptied, deleted, edited] = others as [string, string, string];
        const { entry } = await store.redact([blocks[0] as string], { reason: 'r', by: 't', exchanges: [] });
        assert.equal((await verifyStore(store)).ok, true);
        const problems = async (): Promise<string> => {
          const v = await verifyStore(store);
          assert.equal(v.ok, false, 'verify passed a tampered block');
          return v.content_problems.join('\n');
        };
        // Emptied as a redaction would, naming a real REDACTED entry that does not name this block.
        await tamper('empty', emptied, entry.id);
        assert.match(await problems(), new RegExp(`block ${emptied} has no text and no REDACTED entry`));
        await tamper('delete', deleted);
        assert.match(await problems(), new RegExp(`block ${deleted} \\(in list node [0-9a-f]{64}\\) is missing`));
        await tamper('edit', edited);
        assert.match(await problems(), new RegExp(`block ${edited} (does not hash to its digest: it )?was edited`));
        assert.equal(
          (await verifyStore(store)).content?.redacted_blocks,
          1,
          'only the block redacted through it counts',
        );
      } finally {
        await store.close();
      }
    });
  });
}

/** A clock stepping `stepMs` from a fixed time and sequential ids: the same appends hash the same on any backend. */
const fixedClockAndIds = (stepMs: number): { clock: () => number; idSource: IdSource } => {
  let t = Date.parse('2026-01-01T10:00:00.000Z');
  return { clock: () => (t += stepMs), idSource: (seq) => `LED-${(0xabc00000 + seq).toString(16)}` };
};

test('the same appends with the same clock and ids give the same head hash on SQLite and PostgreSQL', {
  skip: skipPg,
}, async () => {
  const heads: string[] = [];
  for (const backend of backends) {
    const { store } = await backend.fresh(fixedClockAndIds(7));
    try {
      for (let turn = 0; turn < 5; turn += 1)
        await store.appendBatch([
          exchange('S1', turn, ' \u0000'),
          { event_type: 'NOTE', submission_id: 's', decision: 'OK', reason: `n${turn}`, metadata: {} },
        ]);
      // A redaction appends the same REDACTED entry on both.
      const { blocks } = await selectRedaction(store, { session: 'S1' });
      await store.redact(blocks.slice(0, 3), { reason: 'r', by: 'tester', exchanges: ['LED-x'] });
      heads.push((await store.headAnchor()).hash);
    } finally {
      await store.close();
    }
  }
  assert.equal(heads[0], heads[1]);
});

/** Text in every field that the COPY text format or bytea's input would read otherwise if it were not escaped. */
const awkward = (n: number): AppendInput => {
  const odd = ['tab\there', 'new\nline', 'cr\rhere', 'back\\slash', '\\N', '\\x41', '\u0000nul', 'é ü 中 😀', '', ' '][
    n % 10
  ] as string;
  return {
    event_type: 'NOTE',
    submission_id: `sub ${odd}`,
    decision: n % 3 === 0 ? odd || 'OK' : 'OK',
    reason: `reason ${n} ${odd}`,
    metadata: { n, text: odd, session_id: n % 4 === 0 ? `SES ${odd}` : 'S1', agent_id: n % 5 === 0 ? odd : 'A1' },
    ...(n % 7 === 0 ? { content: { prompt: [`p ${n}`, odd || 'x'], response: [`r ${odd}`] } } : {}),
  };
};

test('a batch large enough to go by COPY stores every field as the one statement does, on both backends', {
  skip: skipPg,
}, async () => {
  const size = COPY_FROM + 13;
  const stored: { head: string; rows: unknown[]; reads: unknown[] }[] = [];
  for (const backend of backends) {
    const { store } = await backend.fresh(fixedClockAndIds(3));
    try {
      // One small batch (one statement on PostgreSQL), then the same entries again as one large batch (COPY).
      await store.appendBatch(Array.from({ length: 10 }, (_, n) => awkward(n)));
      const large = await store.appendBatch(Array.from({ length: size }, (_, n) => awkward(n)));
      assert.equal(large.length, size);
      const verified = await verifyStore(store);
      assert.equal(verified.ok, true, JSON.stringify(verified.first_bad));
      assert.equal(verified.entries, 10 + size);
      const rows = [];
      for await (const row of store.rows()) rows.push(row);
      const reads = [];
      for (const entry of large.filter((_, n) => n % 7 === 0 || n % 10 === 6)) reads.push(await store.get(entry.id));
      stored.push({ head: (await store.headAnchor()).hash, rows, reads });
    } finally {
      await store.close();
    }
  }
  const [sqlite, postgres] = stored as [(typeof stored)[0], (typeof stored)[0]];
  assert.deepEqual(postgres.rows, sqlite.rows);
  assert.deepEqual(postgres.reads, sqlite.reads);
  assert.equal(postgres.head, sqlite.head);
  // The odd text really went through both paths: the first small and the first large entry hold the same fields.
  const nul = postgres.rows.filter((r) => (r as { reason: string }).reason.includes('\u0000'));
  assert.equal(nul.length, 1 + Math.ceil((size - 6) / 10));
});

test('writers racing with batches that go by COPY never fork the chain', { skip: skipPg }, async () => {
  const { store, open } = await (backends[1] as Backend).fresh();
  const writers = [store, await open(), await open()];
  try {
    await Promise.all(
      writers.map(async (w, k) => {
        for (let i = 0; i < 4; i += 1)
          await w.appendBatch(Array.from({ length: COPY_FROM }, (_, n) => exchange(`S${k}`, n % 3, ` ${i}`)));
      }),
    );
    const verified = await verifyStore(store);
    assert.equal(verified.ok, true, JSON.stringify(verified.first_bad));
    assert.equal(verified.entries, 3 * 4 * COPY_FROM);
    // Each batch is contiguous in the chain.
    const sessions: string[] = [];
    for await (const row of store.rows()) sessions.push(JSON.parse(row.metadata).session_id);
    for (let i = 0; i < sessions.length; i += COPY_FROM)
      assert.equal(new Set(sessions.slice(i, i + COPY_FROM)).size, 1, `batch at ${i} is interleaved`);
    assert.ok(writers.reduce((n, w) => n + (w as PgLedgerT).stats.conflicts, 0) > 0, 'no batch ever conflicted');
  } finally {
    for (const w of writers) await w.close();
  }
});

test('G6 reads the DISPATCH link of an EXCHANGE whose metadata holds U+0000 on PostgreSQL', {
  skip: skipPg,
}, async () => {
  const { store } = await (backends[1] as Backend).fresh();
  try {
    const [dispatch, other] = await store.appendBatch([
      {
        event_type: 'DISPATCH',
        submission_id: 's',
        decision: 'DISPATCHED',
        reason: 'r',
        metadata: { session_id: 'S' },
      },
      {
        event_type: 'DISPATCH',
        submission_id: 's',
        decision: 'DISPATCHED',
        reason: 'r',
        metadata: { session_id: 'S' },
      },
    ]);
    const exchangeOf = (link: string, text: string): AppendInput => ({
      event_type: 'EXCHANGE',
      submission_id: 's',
      decision: 'ERROR',
      reason: 'r',
      metadata: { dispatch_entry_id: link, error_message: text, session_id: 'S' },
    });
    await store.appendBatch([
      exchangeOf(dispatch?.id as string, 'odd \u0000 bytes'),
      exchangeOf(other?.id as string, 'a backslash \\u0000 spelled out'),
    ]);
    const records = await pgDispatchRecords(store as PgLedgerT);
    assert.deepEqual(
      records.map((r) => [r.event_type, r.link]),
      [
        ['DISPATCH', undefined],
        ['DISPATCH', undefined],
        ['EXCHANGE', dispatch?.id],
        ['EXCHANGE', other?.id],
      ],
    );
  } finally {
    await store.close();
  }
});

test('PostgreSQL refuses rewriting history, and a URL holding a password', { skip: skipPg }, async () => {
  const { store } = await (backends[1] as Backend).fresh();
  try {
    const entry = await store.append(exchange('S1', 0));
    const pool = (store as PgLedgerT).pool;
    await assert.rejects(pool.query("UPDATE cplane_entries SET reason = 'x'::bytea"), /append-only/);
    await assert.rejects(pool.query('DELETE FROM cplane_entries'), /append-only/);
    await assert.rejects(pool.query('TRUNCATE cplane_entries'), /append-only/);
    await assert.rejects(pool.query('DELETE FROM cplane_content_lists'), /append-only/);
    await assert.rejects(pool.query("UPDATE cplane_content_blocks SET text = 'x'::bytea"), /only by redaction/);
    assert.equal((await store.get(entry.id))?.entry_hash, entry.entry_hash);
  } finally {
    await store.close();
  }
  await assert.rejects(
    PgLedger.open('postgres://cplane:hunter2@127.0.0.1:1/cplane'),
    (e: unknown) => e instanceof CpError && e.code === 'ERR_STORE_URL' && !e.message.includes('hunter2'),
  );
});

test('a store URL carrying its password as a query parameter is refused before connecting, and not echoed', async () => {
  // node-postgres reads `?password=` as the password (over the userinfo's): on argv it is as seen as user:pass@.
  for (const url of [
    'postgres://cplane@127.0.0.1:1/cplane?password=hunter2',
    'postgresql://cplane@127.0.0.1:1/cplane?sslmode=disable&password=hunter2',
    'postgres://cplane@127.0.0.1:1/cplane?pass%77ord=hunter2',
  ])
    await assert.rejects(
      PgLedger.open(url),
      (e: unknown) => e instanceof CpError && e.code === 'ERR_STORE_URL' && !e.message.includes('hunter2'),
      url,
    );
});

test('a database laid out with the kind index on every row gets the rare-kind index on open; queries answer the same', {
  skip: skipPg,
}, async () => {
  const url = await createDatabase(server as PgServer, 'kind_index');
  const first = await PgLedger.open(url, { create: true });
  try {
    await first.appendBatch([exchange('S1', 0), exchange('S1', 1)]);
    await first.pool.query('DROP INDEX cplane_entries_rare_kind');
    await first.pool.query('CREATE INDEX cplane_entries_event_type ON cplane_entries (event_type, seq)');
    await first.append({
      event_type: 'KEY_REVOKED',
      submission_id: 'k',
      decision: 'REVOKED',
      reason: 'r',
      metadata: {},
    });
  } finally {
    await first.close();
  }
  const again = await PgLedger.open(url, { create: true });
  try {
    const indexes = await again.pool.query<{ indexname: string; indexdef: string }>(
      "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'cplane_entries' AND indexdef LIKE '%(event_type, seq)%'",
    );
    assert.deepEqual(
      indexes.rows.map((r) => r.indexname),
      ['cplane_entries_rare_kind'],
    );
    assert.match(indexes.rows[0]?.indexdef ?? '', /WHERE .*EXCHANGE/);
    // The rare kind is found through the partial index; the dense one by the primary key.
    const client = await again.pool.connect();
    try {
      await client.query('SET enable_seqscan = off');
      const plan = async (kind: string): Promise<string> =>
        (
          await client.query<{ 'QUERY PLAN': string }>(
            'EXPLAIN SELECT seq FROM cplane_entries WHERE event_type = $1 ORDER BY seq LIMIT 5',
            [kind],
          )
        ).rows
          .map((r) => r['QUERY PLAN'])
          .join('\n');
      assert.match(await plan('KEY_REVOKED'), /cplane_entries_rare_kind/);
      assert.doesNotMatch(await plan('EXCHANGE'), /cplane_entries_rare_kind/);
    } finally {
      client.release(true);
    }
    assert.deepEqual(
      (await again.query({ event_type: 'KEY_REVOKED' })).map((e) => e.submission_id),
      ['k'],
    );
    assert.equal((await again.query({ event_type: 'EXCHANGE' })).length, 2);
  } finally {
    await again.close();
  }
});

test('PostgreSQL verify pages through a content store larger than a page, counts every row, and finds an edit late in it', {
  skip: skipPg,
}, async () => {
  const { store } = await (backends[1] as Backend).fresh();
  const pg = store as PgLedgerT;
  try {
    // 2 100 distinct one-piece prompts and responses: over 4 000 blocks and list nodes, more than two pages each.
    for (let batch = 0; batch < 3; batch += 1)
      await store.appendBatch(
        Array.from({ length: 700 }, (_, i) => ({
          event_type: 'EXCHANGE',
          submission_id: 's',
          decision: 'SUCCESS',
          reason: 'r',
          metadata: { session_id: 'S' },
          content: { prompt: [`prompt ${batch}-${i}`], response: [`answer ${batch}-${i}`] },
        })),
      );
    const count = async (table: string): Promise<number> =>
      Number((await pg.pool.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n);
    const clean = await verifyStore(store);
    assert.equal(clean.ok, true, JSON.stringify(clean.content_problems));
    assert.equal(clean.content?.blocks, await count('cplane_content_blocks'));
    assert.equal(clean.content?.lists, await count('cplane_content_lists'));
    assert.ok((clean.content?.blocks ?? 0) > 4000);
    // The block with the greatest digest: on the last page.
    const last = await pg.pool.query('SELECT digest FROM cplane_content_blocks ORDER BY digest DESC LIMIT 1');
    await pg.pool.query('ALTER TABLE cplane_content_blocks DISABLE TRIGGER ALL');
    await pg.pool.query("UPDATE cplane_content_blocks SET text = convert_to('forged', 'UTF8') WHERE digest = $1", [
      last.rows[0].digest,
    ]);
    // Enabled again: verify names disabled triggers too, and this test is about the edit.
    await pg.pool.query('ALTER TABLE cplane_content_blocks ENABLE TRIGGER ALL');
    const edited = await verifyStore(store);
    assert.equal(edited.ok, false);
    assert.deepEqual(edited.content_problems, [`block ${last.rows[0].digest.toString('hex')} was edited`]);
  } finally {
    await store.close();
  }
});

test('PostgreSQL verify FAILS an entry whose content list was deleted, though no other node points to it', {
  skip: skipPg,
}, async () => {
  const { store } = await (backends[1] as Backend).fresh();
  const pg = store as PgLedgerT;
  try {
    const [written] = await store.appendBatch([exchange('S1', 1)]);
    let head = '';
    for await (const row of store.rows())
      if (row.id === written?.id)
        head = (JSON.parse(row.metadata) as { content: { response: string } }).content.response;
    assert.match(head, /^[0-9a-f]{64}$/);
    assert.equal((await verifyStore(store)).ok, true);
    await pg.pool.query('ALTER TABLE cplane_content_lists DISABLE TRIGGER ALL');
    const gone = await pg.pool.query('DELETE FROM cplane_content_lists WHERE digest = $1', [Buffer.from(head, 'hex')]);
    assert.equal(gone.rowCount, 1);
    await pg.pool.query('ALTER TABLE cplane_content_lists ENABLE TRIGGER ALL');
    const v = await verifyStore(store);
    assert.equal(v.ok, false);
    assert.deepEqual(v.content_problems, [
      `list node ${head} (the content of entry ${written?.id}) is missing: it was deleted`,
    ]);
  } finally {
    await store.close();
  }
});

test('PostgreSQL metadata edited into text that is no JSON object: every read names the entry ERR_LEDGER_DAMAGED', {
  skip: skipPg,
}, async () => {
  const { store } = await (backends[1] as Backend).fresh();
  const pg = store as PgLedgerT;
  try {
    await store.appendBatch([exchange('S1', 0)]);
    const [edited] = await store.appendBatch([
      { ...exchange('S1', 1), metadata: { session_id: 'S1', work_order_id: 'W1', dispatch_entry_id: 'D1' } },
    ]);
    const id = edited?.id as string;
    // Text that still matches the reads' narrowing (the work order, a U+0000 escape), and a JSON value that is not
    // an object, each written behind the append-only trigger.
    for (const metadata of [
      '{"work_order_id":"W1","x":"\\u0000",',
      '{"work_order_id":"W1"',
      'null',
      '["work_order_id":"W1"]',
    ]) {
      await pg.pool.query('ALTER TABLE cplane_entries DISABLE TRIGGER cplane_entries_append_only');
      await pg.pool.query('UPDATE cplane_entries SET metadata = $1 WHERE id = $2', [metadata, id]);
      await pg.pool.query('ALTER TABLE cplane_entries ENABLE TRIGGER cplane_entries_append_only');
      const damaged = (e: unknown): boolean =>
        e instanceof CpError && e.code === 'ERR_LEDGER_DAMAGED' && e.message.includes(id);
      const reads: [string, () => Promise<unknown>][] = [
        ['get', () => store.get(id)],
        ['query', () => store.query({ event_type: 'EXCHANGE' })],
        ['query by work order', () => store.query({ work_order_id: 'W1' })],
        ['exchange blocks', () => pg.exchangeBlocks(id)],
        ['sessions', () => pgListSessions(pg)],
        ['turns', () => pgSessionTurns(pg, 'S1')],
        ['dispatch links', () => pgDispatchRecords(pg)],
      ];
      for (const [what, read] of reads) {
        // `null` names no work order and is JSON the gate's read takes as having no link: neither reaches the row.
        if (metadata === 'null' && (what === 'dispatch links' || what === 'query by work order')) continue;
        await assert.rejects(read(), damaged, `${what} of ${metadata}`);
      }
      const v = await verifyStore(store);
      assert.equal(v.ok, false);
      assert.equal(v.first_bad?.id, id);
      assert.equal(v.first_bad?.problem, 'edited');
    }
  } finally {
    await store.close();
  }
});
