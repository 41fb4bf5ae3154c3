// The console of a gateway on a shared PostgreSQL store, end to end: `cplane serve --store` as a real process, calls
// through the official Anthropic SDK (a conversation, another session, a call the upstream refuses), then the
// console's API with a console key, each view checked against the chain itself (`cplane ledger query --store`).
// Without PostgreSQL installed the suite prints one SKIP line (in CI a missing server fails).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import pg from 'pg';
import { createDatabase, pgSkip, startPgServer, type PgServer } from '../../scripts/lib/pg-server.js';
import { cli, issueKey, startServed, type Served } from '../gateway/harness.js';
import type { SessionPage, TurnPage } from '../../staging/PKG-KERNEL-001/HOT/kernel/ledger/sessions.js';
import type {
  AlertsView,
  BreakersView,
  ExchangeView,
  PlotsView,
  RootView,
} from '../../staging/PKG-GATEWAY-001/HOT/gateway/console/data.js';
import type { BudgetStatus } from '../../staging/PKG-BUDGETER-001/HOT/budgeter/status.js';
import type { SessionSummary, SessionTurn } from '../../staging/PKG-KERNEL-001/HOT/kernel/ledger/sessions.js';

const skip = pgSkip();

let server: PgServer | undefined;
let served: Served | undefined;
let storeUrl = '';
let consoleKey = '';
const answers: string[] = [];

interface Entry {
  id: string;
  event_type: string;
  decision: string;
  metadata: Record<string, unknown>;
}

const get = async <T = unknown>(
  path: string,
  key: string | null = consoleKey,
): Promise<{ status: number; body: T }> => {
  const res = await fetch(`${(served as Served).url}${path}`, {
    headers: key === null ? {} : { authorization: `Bearer ${key}` },
  });
  const text = await res.text();
  return {
    status: res.status,
    body: (res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text) as T,
  };
};

/** The data `cplane report --html` embedded in its page, as console.js reads it. */
interface ReportData {
  generated_at: string;
  root: RootView;
  sessions: SessionSummary[];
  turns: Record<string, SessionTurn[]>;
  turns_cut: Record<string, number>;
  budgets: BudgetStatus;
  breakers: BreakersView;
  alerts: AlertsView;
  plots: PlotsView;
}

function embedded(html: string): ReportData {
  const m = /<script type="application\/json" id="cplane-data">([^<]*)<\/script>/.exec(html);
  assert.ok(m, 'the page holds its data element');
  return JSON.parse(m[1] as string) as ReportData;
}

function exchanges(): Entry[] {
  const r = cli(['ledger', 'query', '--store', storeUrl, '--event-type', 'EXCHANGE', '--limit', '1000', '--json']);
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as Entry[];
}

describe('the console on a gateway whose store is PostgreSQL', { skip, concurrency: false }, () => {
  before(async () => {
    server = await startPgServer();
    storeUrl = await createDatabase(server, 'console_served');
    served = await startServed(['--store', storeUrl]);
    const client = (session: string, agent: string): Anthropic =>
      new Anthropic({
        apiKey: issueKey(agent),
        baseURL: (served as Served).url,
        maxRetries: 0,
        defaultHeaders: { 'x-cplane-session': session },
      });
    const alpha = client('SES-PG-ALPHA', 'AGENT-PG-1');
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'what is the weather in Oslo?' }];
    const first = await alpha.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 100, messages });
    messages.push({ role: 'assistant', content: first.content }, { role: 'user', content: 'and tomorrow?' });
    const second = await alpha.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 100, messages });
    for (const m of [first, second])
      answers.push(m.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join(''));
    await client('SES-PG-BETA', 'AGENT-PG-2').messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'hello from beta' }],
    });
    served.upstream.faults.push({
      status: 400,
      body: { type: 'error', error: { type: 'invalid_request_error', message: 'bad' } },
    });
    await assert.rejects(
      client('SES-PG-GAMMA', 'AGENT-PG-1').messages.create({
        model: 'claude-sonnet-4-5',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'this one fails' }],
      }),
    );
    consoleKey = issueKey('ADMIN', ['console:read']);
  });
  after(async () => {
    await served?.cleanup();
    server?.stop();
  });

  test('serve does not say the console is unavailable; a console key is required, a route key refused', async () => {
    assert.doesNotMatch((served as Served).stderr(), /console:/);
    assert.equal((await get('/console/api/root', null)).status, 401);
    assert.equal((await get('/console/api/sessions', issueKey('AGENT-PG-1'))).status, 401);
    const shell = await get('/console/');
    assert.equal(shell.status, 200);
  });

  test('sessions, turns and exchanges show the calls as the chain holds them', async () => {
    const chain = exchanges();
    assert.equal(chain.length, 4);
    const sessions = await get<SessionPage>('/console/api/sessions');
    assert.equal(sessions.status, 200);
    assert.deepEqual(
      sessions.body.sessions.map((s) => s.session_id),
      ['SES-PG-GAMMA', 'SES-PG-BETA', 'SES-PG-ALPHA'],
    );
    const alpha = sessions.body.sessions[2];
    assert.equal(alpha?.requests, 2);
    assert.deepEqual(alpha?.agents, ['AGENT-PG-1']);
    assert.equal(sessions.body.sessions[0]?.errors, 1);
    const paged = await get<SessionPage>('/console/api/sessions?limit=1');
    assert.equal(paged.body.sessions[0]?.session_id, 'SES-PG-GAMMA');
    const next = await get<SessionPage>(`/console/api/sessions?limit=2&before=${paged.body.next_before}`);
    assert.deepEqual(
      next.body.sessions.map((s) => s.session_id),
      ['SES-PG-BETA', 'SES-PG-ALPHA'],
    );

    const turns = await get<TurnPage>('/console/api/session?id=SES-PG-ALPHA');
    assert.equal(turns.status, 200);
    // The query lists newest first, a session's turns are oldest first.
    const alphaIds = chain.filter((e) => e.metadata.session_id === 'SES-PG-ALPHA').map((e) => e.id);
    assert.deepEqual(
      turns.body.turns.map((t) => t.id),
      alphaIds.reverse(),
    );
    assert.equal(turns.body.turns[1]?.continues, true);
    assert.ok(turns.body.turns[1]?.prompt_new.join('').includes('and tomorrow?'));
    assert.ok(!turns.body.turns[1]?.prompt_new.join('').includes('Oslo'), 'only the new messages of the turn');
    for (const [i, turn] of turns.body.turns.entries()) {
      assert.ok(turn.response.includes(answers[i] as string), `turn ${i} shows the answer the SDK got`);
      const fromChain = chain.find((e) => e.id === turn.id) as Entry;
      assert.equal(turn.response, fromChain.metadata.response);
    }

    for (const entry of chain) {
      const view = await get<ExchangeView>(`/console/api/exchange?id=${entry.id}`);
      assert.equal(view.status, 200);
      assert.equal(view.body.prompt.join(''), entry.metadata.prompt);
      assert.equal(view.body.response, entry.metadata.response);
      assert.equal(view.body.decision, entry.decision);
    }
    assert.equal((await get('/console/api/exchange?id=LED-00000000')).status, 404);
  });

  test('breakers, plots, budgets and the root view (with a verify of the shared chain)', async () => {
    const failed = exchanges().find((e) => e.decision !== 'SUCCESS') as Entry;
    const breakers = await get<BreakersView>('/console/api/breakers');
    assert.equal(breakers.status, 200);
    assert.deepEqual(
      breakers.body.recent_failures.map((f) => [f.id, f.session_id]),
      [[failed.id, 'SES-PG-GAMMA']],
    );
    assert.ok(Array.isArray(breakers.body.breakers));
    // The alerts page reads the shared chain too: no webhook is configured here, so nothing was delivered.
    const alerts = await get<AlertsView>('/console/api/alerts');
    assert.equal(alerts.status, 200);
    assert.deepEqual(alerts.body, { recent_alerts: [] });
    const plots = await get<PlotsView>('/console/api/plots');
    assert.equal(
      plots.body.latency.reduce((n, b) => n + b.count, 0),
      4,
    );
    const budgets = await get<BudgetStatus>('/console/api/budgets');
    assert.equal(budgets.status, 200);
    assert.equal(budgets.body.db_path, 'postgres');
    // The shared totals: the conversation's two calls, charged on the database every host charges.
    const alphaScope = budgets.body.scopes.find((x) => x.scope === 'session' && x.scope_id === 'SES-PG-ALPHA');
    assert.equal(alphaScope?.requests, 2, JSON.stringify(budgets.body.scopes));
    const head = cli(['ledger', 'head', '--store', storeUrl, '--json']);
    assert.equal(head.status, 0, head.stderr);
    const root = await get<RootView>('/console/api/root?verify=1');
    assert.equal(root.status, 200);
    assert.equal(root.body.root, (served as Served).root);
    assert.deepEqual(root.body.ledger.head.seq, (JSON.parse(head.stdout) as { seq: number }).seq);
    assert.equal(root.body.ledger.verify?.ok, true);
    assert.equal(root.body.ledger.verify?.entries, root.body.ledger.head.seq);
  });

  test('the keys view reads the shared inventory; proofs are said to be unavailable on PostgreSQL', async () => {
    const admin = issueKey('OPS', ['keys:admin']);
    const res = await fetch(`${(served as Served).url}/admin/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ agent: 'AGENT-PG-KEYED', scopes: ['route:*'], ttl_s: 600 }),
    });
    assert.equal(res.status, 201);
    const issued = (await res.json()) as { token: string; key_id: string };
    const keys = await get<{ keys: { key_id: string; agent: string }[] }>('/console/api/keys');
    assert.equal(keys.status, 200);
    assert.equal(keys.body.keys.find((k) => k.key_id === issued.key_id)?.agent, 'AGENT-PG-KEYED');
    assert.ok(!JSON.stringify(keys.body).includes(issued.token), 'a key is never shown');
    assert.equal((await get('/console/api/keys', null)).status, 401);
    const [exchange] = exchanges() as [Entry];
    const proof = await get<{ error: { message: string } }>(`/console/api/proof?id=${exchange.id}`);
    assert.equal(proof.status, 501);
    assert.match(proof.body.error.message, /not available on a PostgreSQL store/);
  });

  test('`cplane report --html --store` embeds the shared views: sessions, turns, budgets, breakers', async () => {
    const root = (served as Served).root;
    // A breaker another host published: the report reads the shared table, not this root's breakers.json.
    const db = new pg.Client({ connectionString: storeUrl });
    const openedAt = Date.now();
    await db.connect();
    try {
      await db.query(
        `INSERT INTO cplane_breakers (key, state, consecutive_failures, opened_at_ms, changed_at_ms, host)
         VALUES ('mock/report-elsewhere', 'OPEN', 5, $1, $1, 'another-host')`,
        [openedAt],
      );
    } finally {
      await db.end();
    }
    const work = mkdtempSync(join(tmpdir(), 'cp-report-pg-'));
    try {
      const out = join(work, 'report.html');
      const r = cli(['report', '--root', root, '--store', storeUrl, '--html', out, '--json'], {
        CPLANE_DATABASE_URL: '',
      });
      assert.equal(r.status, 0, r.stderr);
      assert.deepEqual(JSON.parse(r.stdout), { path: out, store: 'postgres', sessions: 3 });
      const data = embedded(readFileSync(out, 'utf8'));
      // The shape of the SQLite report, view for view.
      assert.deepEqual(Object.keys(data), [
        'generated_at',
        'root',
        'sessions',
        'turns',
        'turns_cut',
        'budgets',
        'breakers',
        'alerts',
        'plots',
      ]);
      assert.deepEqual(data.turns_cut, {}, 'a small history is embedded whole');
      // Each view as the gateway's console answers it from the same store.
      const sessions = await get<SessionPage>('/console/api/sessions');
      assert.deepEqual(
        data.sessions.map((s) => s.session_id),
        ['SES-PG-GAMMA', 'SES-PG-BETA', 'SES-PG-ALPHA'],
      );
      assert.deepEqual(data.sessions, sessions.body.sessions);
      assert.deepEqual(Object.keys(data.turns).sort(), ['SES-PG-ALPHA', 'SES-PG-BETA', 'SES-PG-GAMMA']);
      for (const s of data.sessions) {
        const turns = await get<TurnPage>(`/console/api/session?id=${s.session_id}`);
        assert.deepEqual(data.turns[s.session_id], turns.body.turns, s.session_id);
      }
      const alphaIds = exchanges()
        .filter((e) => e.metadata.session_id === 'SES-PG-ALPHA')
        .map((e) => e.id)
        .reverse();
      assert.deepEqual(
        data.turns['SES-PG-ALPHA']?.map((t) => t.id),
        alphaIds,
      );
      assert.equal(data.budgets.db_path, 'postgres');
      assert.deepEqual(data.budgets, (await get<BudgetStatus>('/console/api/budgets')).body);
      const alphaScope = data.budgets.scopes.find((x) => x.scope === 'session' && x.scope_id === 'SES-PG-ALPHA');
      assert.equal(alphaScope?.requests, 2);
      assert.deepEqual(
        data.breakers.breakers.find((b) => b.key === 'mock/report-elsewhere'),
        {
          key: 'mock/report-elsewhere',
          state: 'OPEN',
          consecutive_failures: 5,
          opened_at: new Date(openedAt).toISOString(),
          probes_in_flight: 0,
        },
      );
      assert.deepEqual(
        data.breakers.recent_failures,
        (await get<BreakersView>('/console/api/breakers')).body.recent_failures,
      );
      assert.equal(data.breakers.recent_failures[0]?.session_id, 'SES-PG-GAMMA');
      assert.deepEqual(data.alerts, (await get<AlertsView>('/console/api/alerts')).body);
      assert.deepEqual(data.plots, (await get<PlotsView>('/console/api/plots')).body);
      assert.equal(data.root.root, root);
      assert.equal(data.root.ledger.verify?.ok, true);
      assert.equal(data.root.ledger.verify?.entries, data.root.ledger.head.seq);
      // Without the flag the root's store is found as `status` finds it: here from CPLANE_DATABASE_URL.
      const fromEnv = cli(['report', '--root', root, '--html', out, '--json'], { CPLANE_DATABASE_URL: storeUrl });
      assert.equal(fromEnv.status, 0, fromEnv.stderr);
      assert.deepEqual(JSON.parse(fromEnv.stdout), { path: out, store: 'postgres', sessions: 3 });
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });

  test('`cplane report --store` on a chain with no budget or breaker tables shows none, and lays none out', async () => {
    const root = (served as Served).root;
    const work = mkdtempSync(join(tmpdir(), 'cp-report-pg-'));
    try {
      // The served chain alone, imported into a database no gateway has served from (so no budget, no breakers).
      const exported = join(work, 'chain.jsonl');
      const dump = cli(['ledger', 'export', '--store', storeUrl, '--out', exported]);
      assert.equal(dump.status, 0, dump.stderr);
      const bare = await createDatabase(server as PgServer, 'report_bare');
      const imported = cli(['ledger', 'import', '--store', bare, '--from', exported]);
      assert.equal(imported.status, 0, imported.stderr);
      const out = join(work, 'report.html');
      const r = cli(['report', '--root', root, '--store', bare, '--html', out, '--json'], { CPLANE_DATABASE_URL: '' });
      assert.equal(r.status, 0, r.stderr);
      const data = embedded(readFileSync(out, 'utf8'));
      assert.equal(data.sessions.length, 3);
      assert.deepEqual(
        [data.budgets.db_path, data.budgets.scopes, data.budgets.pending_reservations],
        ['postgres', [], 0],
      );
      assert.deepEqual(data.breakers.breakers, []);
      const db = new pg.Client({ connectionString: bare });
      await db.connect();
      try {
        const tables = await db.query(
          "SELECT to_regclass('cplane_budget_meta') IS NULL AS no_budget, to_regclass('cplane_breakers') IS NULL AS no_breakers",
        );
        assert.deepEqual(tables.rows[0], { no_budget: true, no_breakers: true });
      } finally {
        await db.end();
      }
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });

  test('`cplane report --store`: a password in the URL is refused, an unreachable store is ERR_STORE_UNAVAILABLE; no file', () => {
    const root = (served as Served).root;
    const work = mkdtempSync(join(tmpdir(), 'cp-report-pg-'));
    try {
      const out = join(work, 'report.html');
      const secret = cli(
        ['report', '--root', root, '--store', 'postgres://cplane:hunter2@127.0.0.1:1/cplane', '--html', out],
        { CPLANE_DATABASE_URL: '' },
      );
      assert.equal(secret.status, 3, secret.stderr);
      assert.match(secret.stderr, /ERR_STORE_URL/);
      assert.doesNotMatch(secret.stderr + secret.stdout, /hunter2/);
      assert.equal(existsSync(out), false);
      const away = cli(['report', '--root', root, '--store', 'postgres://cplane@127.0.0.1:1/cplane', '--html', out], {
        CPLANE_DATABASE_URL: '',
      });
      assert.equal(away.status, 3, away.stderr);
      assert.match(away.stderr, /ERR_STORE_UNAVAILABLE/);
      assert.equal(existsSync(out), false);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });

  test('a database that cannot answer is a 503 naming the store, and the console reads again once it is back', async () => {
    const pgServer = server as PgServer;
    pgServer.halt();
    try {
      for (const path of ['/console/api/sessions', '/console/api/root', '/console/api/plots', '/console/api/budgets']) {
        const down = await get<{ error: { code: string } }>(path);
        assert.equal(down.status, 503, path);
        assert.equal(down.body.error.code, 'ERR_STORE_UNAVAILABLE');
      }
    } finally {
      pgServer.start();
    }
    const deadline = Date.now() + 30_000;
    let back = await get<SessionPage>('/console/api/sessions');
    while (back.status !== 200 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      back = await get<SessionPage>('/console/api/sessions');
    }
    assert.equal(back.status, 200);
    assert.equal(back.body.sessions.length, 3);
  });
});
