// The two chores a root on SQLite does for itself, done on a shared PostgreSQL store: budget reservations a host
// left pending when it died mid-call are settled (as unknown usage, kept charged) by the next host to open, by a
// long-running host's periodic pass, and by `cplane ledger orphans --reconcile --store`; and the gateway's periodic
// checkpoints sign the PostgreSQL chain's head into its root, which gate G4 then checks against that chain.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import pg from 'pg';
import { createDatabase, pgSkip, startPgServer, type PgServer } from '../../scripts/lib/pg-server.js';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';
import { bootstrapSignedRoot } from '../lib/signed-root.js';
import { AUTH_SECRET, cli, configSet, issueKey, KEYS } from '../gateway/harness.js';
import { startUpstream, type Upstream } from '../gateway/upstream.js';
import type { EntryRow as EntryRowT } from '../../staging/PKG-KERNEL-001/HOT/kernel/ledger/ledger.js';

const { openSharedStore } = await fromDevRoot<
  typeof import('../../staging/PKG-ROUTER-001/HOT/router/pg/shared-store.js')
>('HOT/router/pg/shared-store.js');
const { PgBudgeter } = await fromDevRoot<
  typeof import('../../staging/PKG-BUDGETER-001/HOT/budgeter/pg/pg-budgeter.js')
>('HOT/budgeter/pg/pg-budgeter.js');
const { sha256Hex } =
  await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/canonical.js')>('HOT/kernel/canonical.js');
const { hashInputFromColumns } =
  await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/entry.js')>(
    'HOT/kernel/ledger/entry.js',
  );
const { PgLedger } = await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/pg/pg-ledger.js')>(
  'HOT/kernel/ledger/pg/pg-ledger.js',
);

const skip = pgSkip();

interface Host {
  child: ChildProcess;
  url: string;
  stderr: () => string;
  exited: Promise<number | null>;
}

let server: PgServer | undefined;
let work = '';
let upstream: Upstream;
let key = '';

/** `cplane serve` on `root` and the store at `storeUrl`, resolved once it listens (its open, reconciliation included, is done). */
function serve(root: string, storeUrl: string): Promise<Host> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    CPLANE_AUTH_SECRET: AUTH_SECRET,
    ANTHROPIC_BASE_URL: upstream.url,
    ANTHROPIC_API_KEY: KEYS.anthropic,
    OPENAI_BASE_URL: upstream.url,
    OPENAI_API_KEY: KEYS.openai,
    CPLANE_DATABASE_URL: '',
  };
  const child = spawn(
    process.execPath,
    [
      join(root, 'HOT', 'scripts', 'cplane.js'),
      'serve',
      '--root',
      root,
      '--store',
      storeUrl,
      '--port',
      '0',
      '--json-log',
    ],
    { env, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let err = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise<Host>((resolve, reject) => {
    child.stderr?.on('data', (d: Buffer) => {
      err += d.toString('utf8');
      const match = /"url":"([^"]+)"/.exec(err);
      if (match?.[1]) resolve({ child, url: match[1], stderr: () => err, exited });
    });
    child.once('exit', (code) => reject(new Error(`cplane serve exited ${code}: ${err}`)));
  });
}

const ask = (host: Host, session: string) =>
  new Anthropic({
    apiKey: key,
    baseURL: host.url,
    maxRetries: 0,
    defaultHeaders: { 'x-cplane-session': session },
  }).messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'hello' }] });

async function rows(db: pg.Pool, eventType: string, session: string): Promise<Array<Record<string, unknown>>> {
  const r = await db.query(
    'SELECT id, metadata FROM cplane_entries WHERE event_type = $1 AND session_id = $2 ORDER BY seq',
    [eventType, Buffer.from(session, 'utf8')],
  );
  return r.rows.map((row: { id: string; metadata: string }) => ({ ...JSON.parse(row.metadata), id: row.id }));
}

async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** What a host that died mid-call leaves behind, made at `at` by its clock: a reservation and its DISPATCH. */
async function deadHostCall(url: string, budgetConfig: unknown, requestId: string, session: string, at: number) {
  const budget = await PgBudgeter.open(url, { config: budgetConfig, clock: () => at, create: true });
  const ledger = await PgLedger.open(url, { create: true });
  try {
    const reserved = await budget.reserve({
      request_id: requestId,
      session_id: session,
      model: 'm1',
      estimated_input_tokens: 100,
      max_output_tokens: 50,
    });
    assert.equal(reserved.ok, true);
    const entries = await ledger.appendBatch([
      ...reserved.records,
      {
        event_type: 'DISPATCH',
        submission_id: `PRC-${requestId}`,
        decision: 'DISPATCHED',
        reason: 'Dispatching to mock/m1',
        metadata: { contract_id: `PRC-${requestId}`, agent_id: 'A1', session_id: session },
      },
    ]);
    return (entries[entries.length - 1] as { id: string }).id;
  } finally {
    await ledger.close();
    await budget.close();
  }
}

const BUDGET = {
  schema_version: '1',
  mode: 'enforce',
  currency: 'USD',
  pricing: {
    m1: {
      input_per_mtok: 2,
      output_per_mtok: 10,
      cache_read_per_mtok: 0.2,
      cache_write_5m_per_mtok: 2.5,
      cache_write_1h_per_mtok: 4,
    },
  },
  limits: {},
  rate_limits: {},
};

describe('a shared store settles orphaned reservations and checkpoints its chain', { skip, concurrency: false }, () => {
  before(async () => {
    server = await startPgServer();
    work = mkdtempSync(join(tmpdir(), 'cp-pgops-'));
    upstream = await startUpstream(KEYS);
    key = issueKey('AGENT-OPS');
  });
  after(async () => {
    await upstream?.close();
    server?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  test('a host killed mid-call: the next host to open settles its reservation once, naming its DISPATCH', async () => {
    const url = await createDatabase(server as PgServer, 'killed');
    const root = join(work, 'root-killed');
    bootstrapSignedRoot(join(work, 'build-killed'), root);
    const db = new pg.Pool({ connectionString: url, max: 2 });
    try {
      const first = await serve(root, url);
      // The upstream holds the reply: the call is admitted (reservation and DISPATCH) when the process is killed.
      let release: () => void = () => {};
      upstream.gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      const seen = upstream.requests.length;
      const call = ask(first, 'SES-KILLED').catch(() => 'killed');
      await until('the call reached the upstream', async () => upstream.requests.length > seen);
      first.child.kill('SIGKILL');
      assert.equal(await first.exited, null);
      release();
      upstream.gate = null;
      assert.equal(await call, 'killed');
      const [dispatch] = await rows(db, 'DISPATCH', 'SES-KILLED');
      assert.ok(dispatch, 'the DISPATCH was appended before the kill');
      assert.deepEqual(await rows(db, 'EXCHANGE', 'SES-KILLED'), []);
      const pending = await db.query("SELECT request_id FROM cplane_budget_reservations WHERE state = 'reserved'");
      assert.equal(pending.rows.length, 1);
      const requestId = (pending.rows[0] as { request_id: string }).request_id;

      // A host opening before the orphan timeout leaves a call that may still be in flight alone.
      const early = await serve(root, url);
      early.child.kill('SIGTERM');
      assert.equal(await early.exited, 0, early.stderr());
      assert.deepEqual(await rows(db, 'BUDGET_SETTLED', 'SES-KILLED'), []);

      // The orphan timeout passed (the reservation made ten minutes ago); two hosts open at the same moment.
      await db.query('UPDATE cplane_budget_reservations SET created_at = $1 WHERE request_id = $2', [
        new Date(Date.now() - 10 * 60_000).toISOString(),
        requestId,
      ]);
      const second = join(work, 'root-killed-2');
      bootstrapSignedRoot(join(work, 'build-killed-2'), second);
      const hosts = await Promise.all([serve(root, url), serve(second, url)]);
      const settled = await rows(db, 'BUDGET_SETTLED', 'SES-KILLED');
      assert.equal(settled.length, 1, JSON.stringify(settled));
      const [record] = settled as [Record<string, unknown>];
      assert.equal(record.request_id, requestId);
      assert.equal(record.dispatch_entry_id, dispatch.id);
      assert.equal(record.reconciled, true);
      const row = await db.query(
        'SELECT state, charged_tokens, reserved_tokens FROM cplane_budget_reservations WHERE request_id = $1',
        [requestId],
      );
      const r = row.rows[0] as { state: string; charged_tokens: string; reserved_tokens: string };
      assert.equal(r.state, 'settled');
      assert.equal(r.charged_tokens, r.reserved_tokens, 'charged at its bound, never released');
      for (const h of hosts) h.child.kill('SIGTERM');
      assert.deepEqual(await Promise.all(hosts.map((h) => h.exited)), [0, 0]);
      const verified = cli(['ledger', 'verify', '--store', url, '--json']);
      assert.equal(verified.status, 0, verified.stdout + verified.stderr);
    } finally {
      await db.end();
    }
  });

  test('a long-running host settles them in its periodic pass; a pass by two hosts at once charges once', async () => {
    const url = await createDatabase(server as PgServer, 'periodic');
    const T0 = Date.UTC(2026, 0, 1, 10);
    let now = T0;
    const clock = () => now;
    const hostA = await openSharedStore(url, { budgetConfig: BUDGET, clock, orphanTimeoutMs: 60_000 });
    const hostB = await openSharedStore(url, { budgetConfig: BUDGET, clock, orphanTimeoutMs: 60_000 });
    const db = new pg.Pool({ connectionString: url, max: 2 });
    try {
      const dispatch = await deadHostCall(url, BUDGET, 'req-dead-1', 'SES-P', T0);
      // Not stale yet by the hosts' clock: a pass leaves it alone.
      assert.deepEqual(await hostA.reconcile(), []);
      now = T0 + 61_000;
      const problems: unknown[] = [];
      hostA.reconcileEvery(10, (e) => problems.push(e));
      hostB.reconcileEvery(10, (e) => problems.push(e));
      await until('the periodic pass settled it', async () => (await rows(db, 'BUDGET_SETTLED', 'SES-P')).length > 0);
      // Both hosts keep passing: nothing more is settled (a call made while a host's pass runs shares that pass,
      // so it may report the one it settled; the other host's is skipped or finds nothing).
      const passes = await Promise.all([hostA.reconcile(), hostB.reconcile(), hostA.reconcile()]);
      for (const p of passes) assert.ok(p === null || p.every((r) => r.request_id === 'req-dead-1'), JSON.stringify(p));
      const settled = await rows(db, 'BUDGET_SETTLED', 'SES-P');
      assert.equal(settled.length, 1);
      assert.equal(settled[0]?.dispatch_entry_id, dispatch);
      assert.deepEqual(problems, []);

      // Two at once on fresh orphans: every one settled exactly once between them.
      for (let i = 0; i < 5; i += 1) await deadHostCall(url, BUDGET, `req-burst-${i}`, 'SES-B', T0);
      const [a, b] = await Promise.all([hostA.reconcile(), hostB.reconcile()]);
      await until('the burst is settled', async () => (await rows(db, 'BUDGET_SETTLED', 'SES-B')).length >= 5);
      const burst = await rows(db, 'BUDGET_SETTLED', 'SES-B');
      assert.deepEqual(burst.map((s) => s.request_id).sort(), [
        'req-burst-0',
        'req-burst-1',
        'req-burst-2',
        'req-burst-3',
        'req-burst-4',
      ]);
      assert.ok((a?.length ?? 0) + (b?.length ?? 0) <= 5);
      const left = await db.query("SELECT count(*)::int AS n FROM cplane_budget_reservations WHERE state = 'reserved'");
      assert.equal((left.rows[0] as { n: number }).n, 0);
    } finally {
      await hostA.close();
      await hostB.close();
      await db.end();
    }
  });

  test('`cplane ledger orphans --store` lists the orphan; with --reconcile it settles it once', async () => {
    const url = await createDatabase(server as PgServer, 'cli');
    const root = join(work, 'root-cli');
    bootstrapSignedRoot(join(work, 'build-cli'), root);
    // The scopes a reservation charges do not depend on the config: the root's own reconciles this one.
    const dispatch = await deadHostCall(url, BUDGET, 'req-cli', 'SES-CLI', Date.now() - 60_000);
    const listed = cli(['ledger', 'orphans', '--store', url, '--timeout-ms', '0', '--json']);
    assert.equal(listed.status, 0, listed.stderr);
    assert.deepEqual(
      (JSON.parse(listed.stdout) as { id: string }[]).map((e) => e.id),
      [dispatch],
    );
    const run = () =>
      cli(['ledger', 'orphans', '--reconcile', '--store', url, '--root', root, '--timeout-ms', '1000', '--json']);
    const first = run();
    assert.equal(first.status, 0, first.stderr);
    const done = JSON.parse(first.stdout) as { reconciled: { request_id: string; dispatch_entry_id: string }[] };
    assert.deepEqual(
      done.reconciled.map((r) => [r.request_id, r.dispatch_entry_id]),
      [['req-cli', dispatch]],
    );
    const again = JSON.parse(run().stdout) as { reconciled: unknown[] };
    assert.deepEqual(again.reconciled, []);
  });

  test('a gateway on PostgreSQL checkpoints the chain per its config; G4 passes, then fails on an entry edited below', async () => {
    const url = await createDatabase(server as PgServer, 'checkpoints');
    const root = join(work, 'root-cp');
    bootstrapSignedRoot(join(work, 'build-cp'), root);
    // The root's chain moved to the store, so its genesis checkpoints are of that chain too.
    const migrated = cli(['ledger', 'migrate', '--root', root, '--to', url]);
    assert.equal(migrated.status, 0, migrated.stderr);
    configSet(root, 'gateway.checkpoint.every_entries', '2');
    configSet(root, 'gateway.store', url);
    const checkpoints = () =>
      readdirSync(join(root, 'HOT', 'ledger', 'checkpoints')).filter((f) => f.endsWith('.json'));
    const before = checkpoints();
    const host = await serve(root, url);
    const db = new pg.Pool({ connectionString: url, max: 2 });
    try {
      for (let i = 0; i < 4; i += 1) await ask(host, 'SES-CP');
      host.child.kill('SIGTERM');
      assert.equal(await host.exited, 0, host.stderr());
      const head = (await db.query('SELECT max(seq)::int AS seq FROM cplane_entries')).rows[0] as { seq: number };
      const written = checkpoints().filter((f) => !before.includes(f));
      const seqs = written.map((f) => Number(f.slice(0, 16)));
      // Each exchange appends two entries (DISPATCH with its reservation, EXCHANGE with its settlement): every one is due.
      assert.ok(written.length >= 3, `checkpoints written: ${written.join(', ')}`);
      assert.ok(seqs.every((s) => s <= head.seq));
      assert.equal(Math.max(...seqs), head.seq, 'the last exchange was checkpointed');

      const gates = () => cli(['gate-check', '--root', root, '--gate', 'G4', '--json'], { CPLANE_DATABASE_URL: '' });
      const passed = gates();
      assert.equal(passed.status, 0, passed.stdout + passed.stderr);
      const g4 = (JSON.parse(passed.stdout) as { gates: { status: string; message: string }[] }).gates[0];
      assert.equal(g4?.status, 'PASS', g4?.message);
      assert.match(g4?.message ?? '', /^postgres: /);
      assert.match(g4?.message ?? '', new RegExp(`checkpoint\\(s\\) match up to #${head.seq}`));

      // An entry below the new checkpoints rewritten inside the database and every hash after it recomputed, so the
      // chain alone verifies: only the signed checkpoints can tell.
      const target = Math.min(...seqs) - 1;
      const store = await PgLedger.open(url);
      const rewritten: EntryRowT[] = [];
      try {
        let previous: string | null = null;
        for await (const row of store.rows(target)) {
          const next = { ...row, ...(row.seq === target ? { reason: 'approved by nobody' } : {}) };
          if (previous !== null) next.previous_hash = previous;
          next.entry_hash = sha256Hex(hashInputFromColumns(next));
          previous = next.entry_hash;
          rewritten.push(next);
        }
      } finally {
        await store.close();
      }
      await db.query('ALTER TABLE cplane_entries DISABLE TRIGGER cplane_entries_append_only');
      for (const row of rewritten)
        await db.query('UPDATE cplane_entries SET reason = $1, previous_hash = $2, entry_hash = $3 WHERE seq = $4', [
          Buffer.from(row.reason, 'utf8'),
          row.previous_hash,
          row.entry_hash,
          row.seq,
        ]);
      await db.query('ALTER TABLE cplane_entries ENABLE TRIGGER cplane_entries_append_only');
      const chainAlone = cli(['ledger', 'verify', '--store', url, '--json']);
      assert.equal(chainAlone.status, 0, 'the rewritten chain verifies without the checkpoints');
      const failed = gates();
      assert.equal(failed.status, 1, failed.stdout + failed.stderr);
      const g4f = (JSON.parse(failed.stdout) as { gates: { status: string; findings: { code: string }[] }[] }).gates[0];
      assert.equal(g4f?.status, 'FAIL');
      assert.ok(
        g4f?.findings.some((f) => f.code === 'CHECKPOINT_MISMATCH'),
        JSON.stringify(g4f?.findings),
      );
    } finally {
      await db.end();
    }
  });
});
