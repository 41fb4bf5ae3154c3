// Three `cplane serve` processes, each on its own root, sharing one PostgreSQL database (one by --store, one by
// CPLANE_DATABASE_URL, one by the root's gateway config), driven by the official Anthropic SDK: one unbroken chain,
// a budget that holds across hosts, a breaker opened on one host refusing on the others.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import pg from 'pg';
import { createDatabase, pgSkip, startPgServer, type PgServer } from '../../scripts/lib/pg-server.js';
import { bootstrapSignedRoot } from '../lib/signed-root.js';
import { AUTH_SECRET, cli, configSet, issueKey, KEYS } from '../gateway/harness.js';
import { startUpstream, type Upstream } from '../gateway/upstream.js';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';

const { chainBudgetRecords } =
  await fromDevRoot<typeof import('../../staging/PKG-BUDGETER-001/HOT/budgeter/records.js')>('HOT/budgeter/records.js');

const skip = pgSkip();

interface Host {
  root: string;
  url: string;
  child: ChildProcess;
  stderr: () => string;
  stop(): Promise<number | null>;
}

let server: PgServer | undefined;
let storeUrl = '';
let work = '';
let upstream: Upstream;
let hosts: Host[] = [];
let key = '';
let db: pg.Pool;

/** How host i is told about the store: a flag, the environment, the root's config. */
function start(root: string, i: number): Promise<Host> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    CPLANE_AUTH_SECRET: AUTH_SECRET,
    ANTHROPIC_BASE_URL: upstream.url,
    ANTHROPIC_API_KEY: KEYS.anthropic,
    OPENAI_BASE_URL: upstream.url,
    OPENAI_API_KEY: KEYS.openai,
    CPLANE_DATABASE_URL: i === 1 ? storeUrl : '',
  };
  const args = [join(root, 'HOT', 'scripts', 'cplane.js'), 'serve', '--root', root, '--port', '0', '--json-log'];
  if (i === 0) args.push('--store', storeUrl);
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise<Host>((resolve, reject) => {
    child.stderr?.on('data', (d: Buffer) => {
      err += d.toString('utf8');
      const match = /"url":"([^"]+)"/.exec(err);
      if (match?.[1])
        resolve({
          root,
          url: match[1],
          child,
          stderr: () => err,
          async stop() {
            if (child.exitCode === null) child.kill('SIGTERM');
            return exited;
          },
        });
    });
    child.once('exit', (code) => reject(new Error(`cplane serve (host ${i}) exited ${code}: ${err}`)));
  });
}

async function startAll(): Promise<void> {
  hosts = await Promise.all([0, 1, 2].map((i) => start(join(work, `root-${i}`), i)));
}

async function stopAll(): Promise<void> {
  const codes = await Promise.all(hosts.map((h) => h.stop()));
  assert.deepEqual(codes, [0, 0, 0], hosts.map((h) => h.stderr()).join('\n'));
  hosts = [];
}

const client = (host: Host, session: string): Anthropic =>
  new Anthropic({
    apiKey: key,
    baseURL: host.url,
    maxRetries: 0,
    defaultHeaders: { 'x-cplane-session': session },
  });

// Larger than the upstream's reported input (55 tokens), so each call's settled usage is within its reservation.
const PROMPT = `Summarise: ${'the quick brown fox jumps over the lazy dog. '.repeat(20)}`;
const ask = (host: Host, session: string) =>
  client(host, session).messages.create({
    model: 'claude-sonnet-4-5',
    max_tokens: 64,
    messages: [{ role: 'user', content: PROMPT }],
  });

async function entries(eventType: string, session?: string): Promise<Array<Record<string, unknown>>> {
  const rows = await db.query(
    `SELECT id, decision, metadata FROM cplane_entries WHERE event_type = $1 ${session === undefined ? '' : 'AND session_id = $2'} ORDER BY seq`,
    session === undefined ? [eventType] : [eventType, Buffer.from(session, 'utf8')],
  );
  return rows.rows.map((r: { id: string; decision: Buffer; metadata: string }) => ({
    ...JSON.parse(r.metadata),
    id: r.id,
    decision: r.decision.toString('utf8'),
  }));
}

/** The session's budget records as entries() shows them: standalone, or unfolded from its DISPATCHes and EXCHANGEs. */
async function budgetEntries(eventType: string, session: string): Promise<Array<Record<string, unknown>>> {
  const rows = await db.query(
    'SELECT id, event_type, submission_id, decision, metadata FROM cplane_entries WHERE session_id = $1 ORDER BY seq',
    [Buffer.from(session, 'utf8')],
  );
  const chain = rows.rows.map(
    (r: { id: string; event_type: string; submission_id: Buffer; decision: Buffer; metadata: string }) => ({
      id: r.id,
      event_type: r.event_type,
      submission_id: r.submission_id.toString('utf8'),
      decision: r.decision.toString('utf8'),
      metadata: JSON.parse(r.metadata) as Record<string, unknown>,
    }),
  );
  return chainBudgetRecords(chain)
    .filter((r) => r.event_type === eventType)
    .map((r) => ({ ...r.metadata, id: r.id, decision: r.decision }));
}

function verifyStore(): void {
  const r = cli(['ledger', 'verify', '--store', storeUrl, '--json']);
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.equal((JSON.parse(r.stdout) as { ok: boolean }).ok, true);
}

describe('three gateway hosts on one PostgreSQL database', { skip, concurrency: false }, () => {
  before(async () => {
    server = await startPgServer();
    storeUrl = await createDatabase(server, 'three_hosts');
    db = new pg.Pool({ connectionString: storeUrl, max: 2 });
    // The database is stopped under load below: an idle connection of this pool is dropped then.
    db.on('error', () => {});
    work = mkdtempSync(join(tmpdir(), 'cp-three-'));
    const first = join(work, 'root-0');
    bootstrapSignedRoot(join(work, 'build'), first);
    for (const scope of ['agent', 'work_order']) configSet(first, `budget.limits.${scope}.default.max_tokens`, '1e12');
    configSet(first, 'budget.limits.session.default.max_tokens', '1e12');
    configSet(first, 'budget.limits.session.default.max_cost', '1000000');
    cpSync(first, join(work, 'root-1'), { recursive: true });
    cpSync(first, join(work, 'root-2'), { recursive: true });
    configSet(join(work, 'root-2'), 'gateway.store', storeUrl);
    upstream = await startUpstream(KEYS);
    key = issueKey('AGENT-3H');
    await startAll();
  });
  after(async () => {
    for (const h of hosts) h.child.kill('SIGKILL');
    await db?.end();
    await upstream?.close();
    server?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  test('300 concurrent SDK calls spread over three hosts: 300 EXCHANGEs, one unbroken chain', async () => {
    const replies = await Promise.all(
      Array.from({ length: 300 }, (_, i) => ask(hosts[i % 3] as Host, `SES-3H-${i % 30}`)),
    );
    assert.equal(replies.length, 300);
    for (const reply of replies) assert.equal((reply.content[0] as { text: string }).text, 'Hello from upstream');
    const exchanges = await entries('EXCHANGE');
    assert.equal(exchanges.length, 300);
    const dispatches = await entries('DISPATCH');
    assert.equal(dispatches.length, 300);
    // Each DISPATCH has exactly one EXCHANGE: nothing recorded twice, nothing lost.
    assert.deepEqual(exchanges.map((e) => e.dispatch_entry_id).sort(), dispatches.map((d) => d.id).sort());
    const seqs = await db.query(
      'SELECT min(seq)::int AS lo, max(seq)::int AS hi, count(*)::int AS n FROM cplane_entries',
    );
    const { lo, hi, n } = seqs.rows[0] as { lo: number; hi: number; n: number };
    assert.equal(lo, 1);
    assert.equal(hi, n, 'no gap in the chain');
    verifyStore();
  });

  test('a budget sized for exactly 100 calls: 100 succeed, 200 are refused, settled spend within the limit', async () => {
    const [allocation] = await budgetEntries('BUDGET_ALLOCATED', 'SES-3H-0');
    const bound = (allocation?.reserved_tokens ?? 0) as number;
    assert.ok(bound > 550, `each call reserves its bound (${bound})`);
    const limit = bound * 100;
    await stopAll();
    for (let i = 0; i < 3; i++)
      configSet(
        join(work, `root-${i}`),
        'budget.limits.session',
        JSON.stringify({ default: { max_tokens: 1e12, max_cost: 1e6 }, by_id: { 'SES-100': { max_tokens: limit } } }),
      );
    await startAll();
    // The upstream holds every reply until all 300 were decided, so no settlement frees room for a 101st.
    let release: () => void = () => {};
    upstream.gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const seen = upstream.requests.length;
    let refusedSoFar = 0;
    const outcomes = Array.from({ length: 300 }, (_, i) =>
      ask(hosts[i % 3] as Host, 'SES-100').then(
        () => 'ok' as const,
        (error: unknown) => {
          if (error instanceof Anthropic.APIError && error.status === 429) {
            refusedSoFar += 1;
            return 'refused' as const;
          }
          throw error;
        },
      ),
    );
    // Every call is decided (held upstream, or refused) before any reply is let go.
    const deadline = Date.now() + 60_000;
    while (upstream.requests.length - seen + refusedSoFar < 300 && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 20));
    release();
    upstream.gate = null;
    const results = await Promise.all(outcomes);
    assert.equal(results.filter((r) => r === 'ok').length, 100);
    assert.equal(results.filter((r) => r === 'refused').length, 200);
    assert.equal(upstream.requests.length - seen, 100, 'no refused call reached the upstream');
    const settled = await budgetEntries('BUDGET_SETTLED', 'SES-100');
    assert.equal(settled.length, 100);
    const spent = settled.reduce((sum, s) => sum + ((s.charged_tokens as number) ?? 0), 0);
    assert.ok(spent <= limit, `settled ${spent} <= limit ${limit}`);
    assert.equal((await entries('BUDGET_EXCEEDED', 'SES-100')).filter((e) => e.decision === 'REFUSED').length, 200);
    verifyStore();
  });

  test('the database stopped and restarted under load: nothing lost, nothing twice, no fork', async () => {
    const sessions = Array.from({ length: 10 }, (_, i) => `SES-RST-${i}`);
    const calls = Array.from({ length: 150 }, (_, i) =>
      ask(hosts[i % 3] as Host, sessions[i % 10] as string).then(
        () => 'ok',
        (error: unknown) => {
          if (error instanceof Anthropic.APIError) return `status ${error.status}`;
          throw error;
        },
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    server?.halt();
    // While it is away every host says it is not ready.
    const deadline = Date.now() + 10_000;
    const ready = async (): Promise<number[]> =>
      Promise.all(hosts.map(async (h) => (await fetch(`${h.url}/readyz`)).status));
    let statuses = await ready();
    while (statuses.some((s) => s !== 503) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      statuses = await ready();
    }
    assert.deepEqual(statuses, [503, 503, 503]);
    server?.start();
    const results = await Promise.all(calls);
    const ok = results.filter((r) => r === 'ok').length;
    // The hosts reconnect by themselves and append what they spooled: wait until every DISPATCH has its EXCHANGE.
    const settle = Date.now() + 30_000;
    const count = async (type: string) => (await Promise.all(sessions.map((s) => entries(type, s)))).flat();
    let dispatches = await count('DISPATCH');
    let exchanges = await count('EXCHANGE');
    while (exchanges.length < dispatches.length && Date.now() < settle) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      dispatches = await count('DISPATCH');
      exchanges = await count('EXCHANGE');
    }
    assert.deepEqual(
      exchanges.map((e) => e.dispatch_entry_id).sort(),
      dispatches.map((d) => d.id).sort(),
      'every admitted call has exactly one EXCHANGE',
    );
    assert.ok(
      exchanges.filter((e) => e.decision === 'SUCCESS').length >= ok,
      `every answer a client got (${ok}) is recorded`,
    );
    const back = Date.now() + 10_000;
    while ((await ready()).some((s) => s !== 200) && Date.now() < back)
      await new Promise((resolve) => setTimeout(resolve, 100));
    assert.deepEqual(await ready(), [200, 200, 200], 'every host is ready again once the database answers');
    verifyStore();
  });

  test('failures through one host open the breaker on all three', async () => {
    // The breaker counts consecutive failures: a call of the test before that failed on a loaded machine (a timeout
    // is retryable) would leave host 0 part of the way to open. One success starts the count from zero.
    await ask(hosts[0] as Host, 'SES-BRK');
    const seen = upstream.requests.length;
    for (let i = 0; i < 3; i++) upstream.faults.push({ status: 503, body: { error: { type: 'overloaded_error' } } });
    // The router's one retry loop retries a 503; three failures open this host's breaker (threshold 3).
    await assert.rejects(ask(hosts[0] as Host, 'SES-BRK'));
    assert.equal(upstream.requests.length - seen, 3);
    for (const host of hosts.slice(1)) {
      const deadline = Date.now() + 10_000;
      let refused = false;
      while (!refused && Date.now() < deadline) {
        try {
          await ask(host, 'SES-BRK');
          await new Promise((resolve) => setTimeout(resolve, 50));
        } catch (error) {
          refused = error instanceof Anthropic.APIError && error.status === 503;
          if (!refused) throw error;
        }
      }
      assert.ok(refused, `host ${host.url} refuses while the breaker is open`);
    }
    const open = await entries('PROMPT_REJECTED', 'SES-BRK');
    assert.ok(open.some((e) => e.error_code === 'CIRCUIT_OPEN' || JSON.stringify(e).includes('CIRCUIT_OPEN')));
    await stopAll();
    verifyStore();
  });
});
