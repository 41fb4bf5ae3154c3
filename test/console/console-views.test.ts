// The console's views of what landed after it: a prompt read as a conversation (hostile text stays text), a
// routed call's attempts and the fallback rate per alias, the key inventory (never a key), and an inclusion proof
// downloaded from the exchange view that `cplane ledger verify-proof` accepts. One gateway, one browser page.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { chromium, type Browser, type Page } from 'playwright-core';
import { cli, configSet, issueKey, startServed, type Served } from '../gateway/harness.js';
import { startUpstream, type Upstream } from '../gateway/upstream.js';

const CHROMIUM = process.env.CPLANE_CHROMIUM ?? '/usr/bin/chromium';
const HOSTILE =
  '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">' +
  '<a href="javascript:window.__pwned = 3">click</a> javascript:window.__pwned=4 ]}';
const browserMissing = existsSync(CHROMIUM) ? false : `SKIP: no Chromium at ${CHROMIUM}`;
if (browserMissing !== false && process.env.CI === 'true')
  throw new Error(`the console's browser tests need Chromium at ${CHROMIUM} in CI (.ci/run installs it)`);

const KEYS_A = { anthropic: 'sk-ant-views-A-0123456789abcdef', openai: 'sk-oai-views-A-0123456789abcdef' };
const KEYS_B = { anthropic: 'sk-ant-views-B-0123456789abcdef', openai: 'sk-oai-views-B-0123456789abcdef' };
const overloaded = { status: 529, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } };

interface Entry {
  id: string;
  metadata: Record<string, unknown>;
}

let served: Served;
let A: Upstream;
let B: Upstream;
let browser: Browser | undefined;
let page: Page;
let issued: { token: string; key_id: string };
const work = mkdtempSync(join(tmpdir(), 'cp-console-views-'));

function exchanges(): Entry[] {
  const r = cli(['ledger', 'query', '--root', served.root, '--event-type', 'EXCHANGE', '--limit', '1000', '--json']);
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as Entry[];
}

const inSession = (id: string): Entry[] => exchanges().filter((e) => e.metadata.session_id === id);

before(async () => {
  [A, B] = await Promise.all([startUpstream(KEYS_A), startUpstream(KEYS_B)]);
  Object.assign(process.env, { VIEWS_ANT_A: KEYS_A.anthropic, VIEWS_ANT_B: KEYS_B.anthropic });
  const routing = {
    deployments: [
      {
        id: 'first',
        provider: 'anthropic',
        base_url: A.url,
        credential_env: 'VIEWS_ANT_A',
        model: 'claude-sonnet-4-5',
      },
      {
        id: 'second',
        provider: 'anthropic',
        base_url: B.url,
        credential_env: 'VIEWS_ANT_B',
        model: 'claude-sonnet-4-5',
      },
    ],
    aliases: { duo: { targets: ['first', 'second'] } },
  };
  served = await startServed([], (root) => {
    configSet(root, 'gateway.routing', JSON.stringify(routing));
    // Limits that reset (the periods view): every key's monthly, one session's weekly.
    configSet(root, 'budget.limits.key', '{"period": "month", "default": {"max_cost": 50}}');
    configSet(root, 'budget.limits.session.by_id', '{"SES-ROUTED": {"max_tokens": 1000000, "period": "week"}}');
  });
  const anthropic = (session: string, apiKey = issueKey('AGENT-V')): Anthropic =>
    new Anthropic({ apiKey, baseURL: served.url, maxRetries: 0, defaultHeaders: { 'x-cplane-session': session } });
  // A conversation with a system prompt, a tool, a tool call and a hostile tool result, over two turns.
  const client = anthropic('SES-CONV');
  const tools = [
    {
      name: 'get_weather',
      description: 'the weather in a city',
      input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } },
    },
  ];
  const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'weather in Paris?' }];
  const first = await client.messages.create({
    model: 'claude-sonnet-4-5',
    max_tokens: 100,
    system: 'be brief',
    tools,
    messages,
  });
  messages.push({ role: 'assistant', content: first.content });
  const call = first.content.find((b) => b.type === 'tool_use');
  assert.ok(call, 'the upstream asked for a tool');
  messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: HOSTILE }] });
  await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 100, system: 'be brief', tools, messages });
  // Chat Completions with a tool call and a role "tool" message.
  const openai = new OpenAI({
    apiKey: issueKey('AGENT-V'),
    baseURL: `${served.url}/v1`,
    maxRetries: 0,
    defaultHeaders: { 'x-cplane-session': 'SES-CHAT' },
  });
  await openai.chat.completions.create({
    model: 'gpt-4.1-mini',
    messages: [
      { role: 'system', content: 'terse' },
      { role: 'user', content: 'weather?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"Paris"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: HOSTILE },
    ],
  });
  // The alias: one call falls back (first answers 529), one does not.
  A.faults.push(overloaded);
  await anthropic('SES-ROUTED').messages.create({
    model: 'duo',
    max_tokens: 50,
    messages: [{ role: 'user', content: 'hi' }],
  });
  await anthropic('SES-ROUTED').messages.create({
    model: 'duo',
    max_tokens: 50,
    messages: [{ role: 'user', content: 'again' }],
  });
  // A key issued over the key admin API, then used.
  const admin = issueKey('OPS', ['keys:admin']);
  const res = await fetch(`${served.url}/admin/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
    body: JSON.stringify({ agent: 'AGENT-KEYED', scopes: ['route:*'], ttl_s: 3600 }),
  });
  assert.equal(res.status, 201, await res.clone().text());
  issued = (await res.json()) as typeof issued;
  await anthropic('SES-KEYED', issued.token).messages.create({
    model: 'claude-sonnet-4-5',
    max_tokens: 50,
    messages: [{ role: 'user', content: 'keyed' }],
  });
  if (browserMissing === false) {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run'],
    });
    const context = await browser.newContext({ acceptDownloads: true });
    await context.addCookies([
      { name: 'cplane_console', value: issueKey('ADMIN', ['console:read']), url: `${served.url}/console/` },
    ]);
    page = await context.newPage();
    page.on('pageerror', (e) => assert.fail(`page error: ${e.message}`));
  }
});

after(async () => {
  await browser?.close();
  await served?.cleanup();
  await Promise.all([A?.close(), B?.close()]);
  rmSync(work, { recursive: true, force: true });
});

async function open(hash: string, selector: string): Promise<void> {
  await page.goto(`${served.url}/console/${hash}`);
  await page.waitForSelector(selector, { state: 'attached' });
}

const noScriptRan = async (): Promise<void> => {
  assert.equal(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned), undefined);
  assert.equal(await page.locator('#view img, #view script, a[href^="javascript"]').count(), 0);
};

test('a prompt reads as a conversation: roles, tools, tool calls and results, no JSON punctuation', {
  skip: browserMissing,
}, async () => {
  const [firstTurn, secondTurn] = inSession('SES-CONV').reverse() as [Entry, Entry];
  await open(`#/exchange/${secondTurn.id}`, `#view [data-field="id"]:text-is("${secondTurn.id}")`);
  const roles = await page.locator('#view [data-role]').evaluateAll((xs) => xs.map((x) => x.getAttribute('data-role')));
  assert.deepEqual(roles, ['system', 'user', 'assistant', 'user']);
  assert.equal(await page.locator('#view [data-tool="get_weather"]').count(), 1, 'the tool definition');
  const view = (await page.locator('#view').textContent()) ?? '';
  assert.match(view, /→ tool call get_weather/);
  assert.match(view, /← tool result toolu_/);
  assert.ok(view.includes(HOSTILE), 'the hostile tool result is shown as the text it is');
  // The pieces the content store split the prompt into are not what is shown.
  const shown = await page.locator('#view .piece > pre').allTextContents();
  for (const text of shown) assert.doesNotMatch(text, /^\s*[\]}],?|^,"/, `a punctuation piece was shown: ${text}`);
  // The prompt as sent is still there, whole.
  assert.equal(await page.locator('[data-field="prompt"]').textContent(), secondTurn.metadata.prompt);
  await noScriptRan();
  // The session view: the second turn shows only the two messages it added.
  await open('#/session/SES-CONV', `section.turn[data-exchange="${secondTurn.id}"]`);
  const added = await page
    .locator(`section.turn[data-exchange="${secondTurn.id}"] details [data-role]`)
    .evaluateAll((xs) => xs.map((x) => x.getAttribute('data-role')));
  assert.deepEqual(added, ['assistant', 'user']);
  const whole = await page
    .locator(`section.turn[data-exchange="${firstTurn.id}"] details [data-role]`)
    .evaluateAll((xs) => xs.map((x) => x.getAttribute('data-role')));
  assert.deepEqual(whole, ['system', 'user']);
  await noScriptRan();
  // Chat Completions: the tool call and the role "tool" message.
  const [chat] = inSession('SES-CHAT') as [Entry];
  await open(`#/exchange/${chat.id}`, `#view [data-field="id"]:text-is("${chat.id}")`);
  const chatRoles = await page
    .locator('#view [data-role]')
    .evaluateAll((xs) => xs.map((x) => x.getAttribute('data-role')));
  assert.deepEqual(chatRoles, ['system', 'user', 'assistant', 'tool']);
  const chatView = (await page.locator('#view').textContent()) ?? '';
  assert.match(chatView, /→ tool call lookup \(call_1\)/);
  assert.match(chatView, /← tool result call_1/);
  assert.ok(chatView.includes(HOSTILE));
  await noScriptRan();
});

test('a routed exchange lists every attempt; the activity view gives the fallback rate per alias', {
  skip: browserMissing,
}, async () => {
  const [fellBack, direct] = inSession('SES-ROUTED').reverse() as [Entry, Entry];
  await open(`#/exchange/${fellBack.id}`, '[data-table="attempts"] tbody tr');
  const attempts = fellBack.metadata.attempts as Record<string, unknown>[];
  assert.equal(attempts.length, 2);
  const rows = page.locator('[data-table="attempts"] tbody tr');
  assert.equal(await rows.count(), attempts.length);
  for (const [i, a] of attempts.entries()) {
    const row = rows.nth(i);
    for (const name of ['deployment', 'provider', 'model', 'outcome'])
      assert.equal(await row.locator(`[data-field="${name}"]`).textContent(), String(a[name]), `attempt ${i} ${name}`);
    assert.equal(
      await row.locator('[data-field="latency_ms"]').textContent(),
      (a.latency_ms as number).toLocaleString('en-US'),
    );
    assert.equal(
      await row.locator('[data-field="upstream_request_id"]').textContent(),
      (a.upstream_request_id as string | null) ?? '—',
    );
  }
  assert.equal(attempts[0]?.deployment, 'first');
  assert.equal(attempts[1]?.deployment, 'second');
  assert.equal(await page.locator('#view [data-field="served_by"]').textContent(), fellBack.metadata.served_by);
  assert.equal(await page.locator('#view [data-field="model_alias"]').textContent(), 'duo');
  assert.equal(direct.metadata.served_by, 'first/claude-sonnet-4-5');
  await open('#/activity', '[data-table="fallbacks"] tbody tr');
  const duo = page.locator('[data-alias="duo"]');
  assert.equal(await duo.locator('[data-field="calls"]').textContent(), '2');
  assert.equal(await duo.locator('[data-field="fallbacks"]').textContent(), '1');
  assert.equal(await duo.locator('[data-field="rate"]').textContent(), '50.0%');
});

test('the keys view lists the inventory as GET /admin/keys does, and never a key', {
  skip: browserMissing,
}, async () => {
  const admin = issueKey('OPS', ['keys:admin']);
  const api = (await (
    await fetch(`${served.url}/admin/keys`, { headers: { authorization: `Bearer ${admin}` } })
  ).json()) as {
    keys: {
      key_id: string;
      agent: string;
      scopes: string[];
      expires_at: string;
      created_at: string;
      last_used_at: string | null;
      state: string;
      spend: { cost: number } | null;
    }[];
  };
  const mine = api.keys.find((k) => k.key_id === issued.key_id);
  assert.ok(mine?.last_used_at, 'the key was used');
  await open('#/keys', `[data-key="${issued.key_id}"]`);
  const row = page.locator(`[data-key="${issued.key_id}"]`);
  assert.equal(await row.locator('[data-field="agent"]').textContent(), 'AGENT-KEYED');
  assert.equal(await row.locator('[data-field="scopes"]').textContent(), 'route:*');
  assert.equal(await row.locator('[data-field="budget_scope"]').textContent(), `key:${issued.key_id}`);
  assert.equal(await row.locator('[data-field="expires_at"]').textContent(), mine.expires_at);
  assert.equal(await row.locator('[data-field="created_at"]').textContent(), mine.created_at);
  assert.equal(await row.locator('[data-field="last_used_at"]').textContent(), mine.last_used_at);
  assert.equal(await row.locator('[data-field="state"]').textContent(), mine.state);
  assert.ok(mine.spend !== null, 'the key was charged');
  assert.equal(await row.locator('[data-field="spend"]').textContent(), mine.spend.cost.toFixed(6));
  assert.equal(await page.locator('[data-table="keys"] tbody tr').count(), api.keys.length);
  assert.ok(!(await page.content()).includes(issued.token), 'the key itself is not on the page');
  const raw = await page.evaluate(async () => (await fetch('/console/api/keys')).text());
  assert.ok(!raw.includes(issued.token), 'nor in the API answer');
});

test('the periods view shows each scope whose limit resets: its window, spent against its limit, its reset', {
  skip: browserMissing,
}, async () => {
  await open('#/periods', '[data-table="periods"] tbody tr');
  const api = (await page.evaluate(async () => (await fetch('/console/api/budgets')).json())) as {
    scopes: {
      scope: string;
      scope_id: string;
      settled_tokens: number;
      reserved_tokens: number;
      settled_cost: number;
      reserved_cost: number;
      limit: { max_tokens?: number; max_cost?: number } | null;
      period: { every: string; start: string; end: string } | null;
      state: string;
    }[];
  };
  const periodic = api.scopes.filter((s) => s.period !== null);
  assert.equal(await page.locator('[data-table="periods"] tbody tr').count(), periodic.length);
  // The windows, computed here from the UTC calendar, not read from the gateway.
  const now = new Date();
  const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString();
  const monthEnd = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString();
  const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const weekStart = new Date(midnight - ((now.getUTCDay() + 6) % 7) * 86_400_000).toISOString();
  const key = `key:key:${issued.key_id}`;
  const field = async (scope: string, name: string) =>
    page.locator(`[data-period="${scope}"] [data-field="${name}"]`).textContent();
  assert.deepEqual(
    [await field(key, 'every'), await field(key, 'start'), await field(key, 'end')],
    ['month', monthStart, monthEnd],
  );
  assert.equal(await field(key, 'max_cost'), (50).toFixed(6));
  const routed = 'session:SES-ROUTED';
  assert.deepEqual([await field(routed, 'every'), await field(routed, 'start')], ['week', weekStart]);
  assert.equal(await field(routed, 'max_tokens'), (1_000_000).toLocaleString('en-US'));
  assert.equal(await page.locator('[data-period="session:SES-CONV"]').count(), 0, 'a lifetime limit has no period');
  for (const s of periodic) {
    const row = page.locator(`[data-period="${s.scope}:${s.scope_id}"]`);
    const text = async (name: string) => row.locator(`[data-field="${name}"]`).textContent();
    assert.equal(await text('end'), s.period?.end);
    assert.equal(await text('tokens'), (s.settled_tokens + s.reserved_tokens).toLocaleString('en-US'));
    assert.equal(await text('cost'), (s.settled_cost + s.reserved_cost).toFixed(6));
    assert.equal(await text('state'), s.state);
    assert.match((await text('resets_in')) ?? '', /^in \d+ (d|h|min)/);
  }
  const spent = periodic.find((s) => s.scope_id === `key:${issued.key_id}`);
  assert.ok(spent && spent.settled_cost > 0, 'the key spent in this period');
});

test('"download proof" gives the file `ledger prove --entry` writes, which verify-proof accepts', {
  skip: browserMissing,
}, async () => {
  assert.equal(
    (await fetch(`${served.url}/console/api/proof?id=x`)).status,
    401,
    'the proof route needs a console key',
  );
  const [exchange] = inSession('SES-KEYED') as [Entry];
  await open(`#/exchange/${exchange.id}`, 'a#proof');
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('a#proof')]);
  const file = join(work, 'exchange.proof.json');
  await download.saveAs(file);
  const proof = JSON.parse(readFileSync(file, 'utf8')) as { kind: string; entry: { id: string }; tree_size: number };
  assert.equal(proof.kind, 'cplane-inclusion-proof');
  assert.equal(proof.entry.id, exchange.id);
  const tiles = join(work, 'public-log');
  const exported = cli(['ledger', 'export-tiles', '--root', served.root, tiles]);
  assert.equal(exported.status, 0, exported.stderr);
  const checked = cli(['ledger', 'verify-proof', file, '--key', join(tiles, 'vkey')]);
  assert.equal(checked.status, 0, `${checked.stdout}${checked.stderr}`);
  // A proof edited after download is refused.
  const edited = join(work, 'edited.proof.json');
  const tampered = JSON.parse(readFileSync(file, 'utf8')) as { entry: { reason: string } };
  tampered.entry.reason += ' (edited)';
  writeFileSync(edited, JSON.stringify(tampered));
  assert.notEqual(cli(['ledger', 'verify-proof', edited, '--key', join(tiles, 'vkey')]).status, 0);
});
