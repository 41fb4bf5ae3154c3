// The console end to end: `cplane serve` on a root with a scripted history (the official SDKs as clients, a
// tool call, a failed call, a prompt full of markup), then the console's HTTP surface (401s, headers, bounds)
// and a real headless Chromium clicking through root → sessions → a session → an exchange, each value checked
// against `cplane ledger query --json`. `cplane report --html` is opened in the same browser.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { chromium, type Browser, type Page } from 'playwright-core';
import { REPO } from '../../scripts/lib/repo.js';
import { cli, issueKey, startServed, type Served } from '../gateway/harness.js';

const CHROMIUM = process.env.CPLANE_CHROMIUM ?? '/usr/bin/chromium';
const ARTIFACTS = join(REPO, 'build', 'test-artifacts', 'console');
const HOSTILE =
  'look: <script>window.__pwned = 1</script> <img src=x onerror="window.__pwned = 2"> ' +
  '<a href="javascript:window.__pwned = 3">click me</a> [md](javascript:window.__pwned=4) </pre></details>';
const browserMissing = existsSync(CHROMIUM)
  ? false
  : `SKIP: no Chromium at ${CHROMIUM}; install it with \`apt-get install chromium\` (CI installs it and fails without it)`;
if (browserMissing !== false && process.env.CI === 'true')
  throw new Error(`the console's browser tests need Chromium at ${CHROMIUM} in CI (.ci/run installs it)`);

interface Entry {
  id: string;
  event_type: string;
  decision: string;
  metadata: Record<string, unknown>;
}

let served: Served;
let consoleKey: string;
let browser: Browser | undefined;

function exchanges(): Entry[] {
  const r = cli(['ledger', 'query', '--root', served.root, '--event-type', 'EXCHANGE', '--limit', '1000', '--json']);
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as Entry[];
}

before(async () => {
  served = await startServed();
  const anthropic = (session: string, agent: string): Anthropic =>
    new Anthropic({
      apiKey: issueKey(agent),
      baseURL: served.url,
      maxRetries: 0,
      defaultHeaders: { 'x-cplane-session': session },
    });
  const alpha = anthropic('SES-ALPHA', 'AGENT-1');
  const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'what is the weather in Paris?' }];
  const tools = [
    {
      name: 'get_weather',
      description: 'the weather in a city',
      input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } },
    },
  ];
  const first = await alpha.messages.create({
    model: 'claude-sonnet-4-5',
    max_tokens: 200,
    system: 'be brief',
    tools,
    messages,
  });
  messages.push({ role: 'assistant', content: first.content });
  const call = first.content.find((b) => b.type === 'tool_use');
  assert.ok(call, 'the upstream asked for a tool');
  messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '18°C and sunny' }] });
  const second = await alpha.messages.create({
    model: 'claude-sonnet-4-5',
    max_tokens: 200,
    system: 'be brief',
    tools,
    messages,
  });
  messages.push({ role: 'assistant', content: second.content }, { role: 'user', content: 'thanks' });
  await alpha.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 200, system: 'be brief', tools, messages });
  await anthropic('SES-BETA', 'AGENT-2').messages.create({
    model: 'claude-sonnet-4-5',
    max_tokens: 200,
    messages: [{ role: 'user', content: HOSTILE }],
  });
  served.upstream.faults.push({
    status: 400,
    body: { type: 'error', error: { type: 'invalid_request_error', message: 'bad' } },
  });
  await assert.rejects(
    anthropic('SES-GAMMA', 'AGENT-1').messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 200,
      messages: [{ role: 'user', content: 'this one fails' }],
    }),
  );
  const openai = new OpenAI({
    apiKey: issueKey('AGENT-3'),
    baseURL: `${served.url}/v1`,
    maxRetries: 0,
    defaultHeaders: { 'x-cplane-session': 'SES-DELTA' },
  });
  await openai.chat.completions.create({
    model: 'gpt-4.1-mini',
    messages: [{ role: 'user', content: 'hello from openai' }],
  });
  const gates = cli(['gate-check', '--root', served.root, '--json']);
  assert.ok(gates.status === 0 || gates.status === 1, gates.stderr);
  consoleKey = issueKey('ADMIN', ['console:read']);
  if (browserMissing === false) {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  }
  mkdirSync(ARTIFACTS, { recursive: true });
});

after(async () => {
  await browser?.close();
  await served?.cleanup();
});

const get = (path: string, headers: Record<string, string> = {}): Promise<Response> =>
  fetch(`${served.url}${path}`, { headers, redirect: 'manual' });
const bearer = (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` });

test('the console answers 401 to anything but a console key, and sends a strict CSP', async () => {
  for (const path of ['/console/', '/console/api/root', '/console/api/sessions', '/console/api/exchange?id=x']) {
    const none = await get(path);
    assert.equal(none.status, 401, path);
    const route = await get(path, bearer(issueKey('AGENT-1')));
    assert.equal(route.status, 401, `${path} with a route key`);
    const body = (await route.json()) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'ERR_CONSOLE_UNAUTHORIZED');
    assert.match(body.error.message, /console:read/);
    const forged = await get(path, bearer(`${consoleKey.slice(0, -4)}AAAA`));
    assert.equal(forged.status, 401, `${path} with a forged key`);
  }
  const page = await get('/console/', { ...bearer(consoleKey), accept: 'text/html' });
  assert.equal(page.status, 200);
  const csp = page.headers.get('content-security-policy') ?? '';
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'self'(;|$)/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
  assert.equal(page.headers.get('x-content-type-options'), 'nosniff');
  assert.equal(page.headers.get('x-frame-options'), 'DENY');
  // A console key routes nothing: the gateway refuses it for a generation.
  const routed = await fetch(`${served.url}/v1/messages`, {
    method: 'POST',
    headers: { ...bearer(consoleKey), 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }),
  });
  assert.equal(routed.status, 403);
  // A browser without the cookie is shown the sign-in page, with status 401.
  const login = await get('/console/', { accept: 'text/html' });
  assert.equal(login.status, 401);
  assert.match(await login.text(), /name="key"/);
});

test('the console API bounds its queries and never shows keys', async () => {
  const cases: [string, RegExp][] = [
    ['/console/api/sessions?since=yesterday', /since must be an ISO-8601/],
    ['/console/api/sessions?before=-1', /before must be a positive integer/],
    ['/console/api/sessions?agent=a&agent=b', /agent is given 2 times/],
    ['/console/api/session', /id is required/],
    [`/console/api/session?id=${'x'.repeat(300)}`, /id must be 1 to 200/],
  ];
  for (const [path, message] of cases) {
    const r = await get(path, bearer(consoleKey));
    assert.equal(r.status, 400, path);
    const body = (await r.json()) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'ERR_CONSOLE_QUERY');
    assert.match(body.error.message, message);
  }
  for (const path of [
    '/console/api/root',
    '/console/api/sessions',
    '/console/api/session?id=SES-ALPHA',
    '/console/api/budgets',
    '/console/api/breakers',
    '/console/api/alerts',
    '/console/api/plots',
  ]) {
    const text = await (await get(path, bearer(consoleKey))).text();
    assert.doesNotMatch(text, /sk-ant-upstream|sk-openai-upstream|cpt1\./, `${path} shows no provider or client key`);
  }
});

test('a revoked console key, and a sign-in posted from another site, are refused', async () => {
  const key = issueKey('ADMIN-2', ['console:read']);
  assert.equal((await get('/console/api/root', bearer(key))).status, 200);
  const id = (JSON.parse(Buffer.from(key.split('.')[1] as string, 'base64url').toString('utf8')) as { jti: string })
    .jti;
  const revoked = cli(['token', 'revoke', '--root', served.root, '--key-id', id, '--reason', 'left the team']);
  assert.equal(revoked.status, 0, revoked.stderr);
  assert.equal((await get('/console/api/root', bearer(key))).status, 401);
  const cross = await fetch(`${served.url}/console/login`, {
    method: 'POST',
    headers: { origin: 'http://evil.example', 'content-type': 'application/x-www-form-urlencoded' },
    body: `key=${encodeURIComponent(consoleKey)}`,
    redirect: 'manual',
  });
  assert.equal(cross.status, 403);
  assert.equal(cross.headers.get('set-cookie'), null);
  // A form in a sandboxed frame (or a data: page) posts with Origin "null", as the console's own no-referrer
  // page does; the browser's Sec-Fetch-Site still says where it came from.
  for (const [route, body] of [
    ['/console/login', `key=${encodeURIComponent(consoleKey)}`],
    ['/console/logout', ''],
  ] as const) {
    const framed = await fetch(`${served.url}${route}`, {
      method: 'POST',
      headers: { origin: 'null', 'sec-fetch-site': 'cross-site', 'content-type': 'application/x-www-form-urlencoded' },
      body,
      redirect: 'manual',
    });
    assert.equal(framed.status, 403, route);
    assert.equal(framed.headers.get('set-cookie'), null, route);
  }
  const own = await fetch(`${served.url}/console/login`, {
    method: 'POST',
    headers: { origin: 'null', 'sec-fetch-site': 'same-origin', 'content-type': 'application/x-www-form-urlencoded' },
    body: `key=${encodeURIComponent(consoleKey)}`,
    redirect: 'manual',
  });
  assert.equal(own.status, 303);
  assert.match(own.headers.get('set-cookie') ?? '', /^cplane_console=cpt1\./);
});

/** Polls from outside the page: the console's CSP forbids the string evaluation waitForFunction uses. */
async function waitForCount(page: Page, selector: string, count: number): Promise<void> {
  for (let i = 0; i < 100; i += 1) {
    if ((await page.locator(selector).count()) === count) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail(`${selector}: expected ${count} elements, found ${await page.locator(selector).count()}`);
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

const field = async (page: Page, name: string, scope = '#view'): Promise<string> =>
  (await page.locator(`${scope} [data-field="${name}"]`).first().textContent()) ?? '';

test('in Chromium: sign in, then root → sessions → a session → an exchange show what the ledger holds', {
  skip: browserMissing,
}, async () => {
  const context = await (browser as Browser).newContext();
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  const response = await page.goto(`${served.url}/console/`);
  assert.equal(response?.status(), 401);
  await shot(page, '0-sign-in');
  await page.fill('#key', consoleKey);
  await Promise.all([page.waitForURL(`${served.url}/console/`), page.click('button[type=submit]')]);
  const cookies = await context.cookies();
  const cookie = cookies.find((c) => c.name === 'cplane_console');
  assert.ok(cookie, 'signed in with a cookie');
  assert.equal(cookie.httpOnly, true);
  assert.equal(cookie.sameSite, 'Strict');
  // Root.
  await page.waitForSelector('#view[data-view="root"] [data-table="packages"]');
  const head = JSON.parse(cli(['ledger', 'head', '--root', served.root, '--json']).stdout) as {
    seq: number;
    hash: string;
  };
  assert.equal(await field(page, 'head'), `${head.seq}:${head.hash}`);
  const listed = JSON.parse(cli(['list', '--root', served.root, '--json']).stdout) as {
    package_id: string;
    version: string;
  }[];
  const rows = await page.locator('[data-table="packages"] tbody tr').allInnerTexts();
  assert.equal(rows.length, (Array.isArray(listed) ? listed : (listed as { packages: typeof listed }).packages).length);
  assert.ok(rows.some((r) => r.includes('PKG-GATEWAY-001')));
  assert.ok((await page.locator('[data-table="gates"] tbody tr').count()) > 0, 'the last gate check is shown');
  await page.click('a[href="#/root?verify=1"]');
  await page.waitForSelector('[data-field="verify"] .ok');
  assert.match(await field(page, 'verify'), /^PASS/);
  await shot(page, '1-root');
  // Sessions: each row as the ledger's EXCHANGEs sum it.
  await page.click('a[href="#/sessions"]');
  await page.waitForSelector('[data-table="sessions"] tbody tr');
  const all = exchanges();
  const sessions = await page
    .locator('[data-table="sessions"] tbody tr')
    .evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-session')));
  assert.deepEqual(sessions, ['SES-DELTA', 'SES-GAMMA', 'SES-BETA', 'SES-ALPHA'], 'newest activity first');
  for (const id of sessions) {
    const mine = all.filter((e) => e.metadata.session_id === id);
    const row = page.locator(`[data-session="${id}"]`);
    const sum = (key: string): number => mine.reduce((n, e) => n + ((e.metadata[key] as number | null) ?? 0), 0);
    assert.equal(await row.locator('[data-field="requests"]').textContent(), String(mine.length), `${id} requests`);
    assert.equal(
      await row.locator('[data-field="input_tokens"]').textContent(),
      sum('input_tokens').toLocaleString('en-US'),
    );
    assert.equal(
      await row.locator('[data-field="output_tokens"]').textContent(),
      sum('output_tokens').toLocaleString('en-US'),
    );
    const errors = mine.filter((e) => e.decision !== 'SUCCESS').length;
    assert.equal(await row.locator('[data-field="errors"]').textContent(), String(errors), `${id} errors`);
  }
  await page.fill('input[name=agent]', 'AGENT-1');
  await page.click('#filters button');
  await waitForCount(page, '[data-table="sessions"] tbody tr', 2);
  await shot(page, '2-sessions');
  // A session: its turns in order, each as recorded.
  await page.click('a[href="#/session/SES-ALPHA"]');
  await page.waitForSelector('section.turn');
  const alpha = all.filter((e) => e.metadata.session_id === 'SES-ALPHA').reverse();
  const turns = await page.locator('section.turn').evaluateAll((s) => s.map((x) => x.getAttribute('data-exchange')));
  assert.deepEqual(
    turns,
    alpha.map((e) => e.id),
  );
  assert.equal(await page.locator('svg[data-plot="turns"] rect.bar').count(), alpha.length);
  assert.match((await page.locator('#view').textContent()) ?? '', /→ tool call get_weather/, 'tool calls are readable');
  // Turns after the first show only what they added to the conversation.
  const summaries = await page.locator('section.turn > details > summary').allTextContents();
  assert.match(summaries[0] ?? '', /^prompt/);
  for (const later of summaries.slice(1)) assert.match(later, /^new in this turn \(3 pieces\)/);
  await shot(page, '3-session');
  // An exchange: every shown value is the ledger's.
  const target = alpha[1] as Entry;
  await page.click(`a[href="#/exchange/${target.id}"]`);
  await page.waitForSelector('#view [data-field="prompt"]', { state: 'attached' });
  assert.equal(await field(page, 'id'), target.id);
  assert.equal(await field(page, 'model_id'), target.metadata.model_id);
  assert.equal(await field(page, 'input_tokens'), (target.metadata.input_tokens as number).toLocaleString('en-US'));
  assert.equal(await field(page, 'output_tokens'), (target.metadata.output_tokens as number).toLocaleString('en-US'));
  assert.equal(await page.locator('[data-field="prompt"]').textContent(), target.metadata.prompt);
  assert.equal(await page.locator('[data-field="response"]').textContent(), target.metadata.response);
  await shot(page, '4-exchange');
  // The hostile prompt is text: no script ran, no element came from it.
  const beta = all.find((e) => e.metadata.session_id === 'SES-BETA') as Entry;
  await page.goto(`${served.url}/console/#/exchange/${beta.id}`);
  // A hash change keeps the previous exchange's view attached until the new one renders: wait for this one's id.
  await page.locator(`#view [data-field="id"]:text-is("${beta.id}")`).waitFor({ state: 'attached' });
  assert.equal(await page.locator('[data-field="prompt"]').textContent(), beta.metadata.prompt);
  assert.ok(((await page.locator('#view').textContent()) ?? '').includes('<script>window.__pwned = 1</script>'));
  await page.goto(`${served.url}/console/#/session/SES-BETA`);
  await page.waitForSelector('section.turn');
  await shot(page, '5-hostile');
  assert.equal(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned), undefined);
  assert.equal(await page.locator('#view img, #view script, #view a[href^="javascript"]').count(), 0);
  // Budgets, breakers, alerts (none delivered here: the empty table), activity draw.
  for (const [hash, selector] of [
    ['#/budgets', '[data-table="budgets"] tbody tr'],
    ['#/breakers', '[data-table="breakers"] tbody tr'],
    ['#/alerts', '[data-table="alerts"]'],
    ['#/activity', 'svg rect'],
  ] as const) {
    await page.click(`a[href="${hash}"]`);
    await page.waitForSelector(selector);
    await shot(page, `6-${hash.slice(2)}`);
  }
  const failures = await page
    .goto(`${served.url}/console/#/breakers`)
    .then(() => page.waitForSelector('[data-table="failures"] tbody tr'));
  assert.ok(failures);
  // Sign out drops the cookie; the console asks again.
  await page.click('header form button');
  await page.waitForSelector('#key');
  assert.equal(
    (await context.cookies()).some((c) => c.name === 'cplane_console' && c.value !== ''),
    false,
  );
  assert.deepEqual(errors, []);
  await context.close();
});

test('cplane report --html: one file that opens in Chromium with the same values', {
  skip: browserMissing,
}, async () => {
  const out = join(ARTIFACTS, 'report.html');
  const r = cli(['report', '--root', served.root, '--html', out, '--json']);
  assert.equal(r.status, 0, r.stderr);
  const html = readFileSync(out, 'utf8');
  assert.doesNotMatch(html, /<script>window.__pwned/, 'the hostile text is escaped in the embedded data');
  assert.doesNotMatch(html, /src="http|href="http/, 'nothing is fetched from elsewhere');
  const context = await (browser as Browser).newContext();
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`file://${out}#/sessions`);
  await page.waitForSelector('[data-table="sessions"] tbody tr');
  const all = exchanges();
  const alpha = all.filter((e) => e.metadata.session_id === 'SES-ALPHA');
  assert.equal(
    await page.locator('[data-session="SES-ALPHA"] [data-field="requests"]').textContent(),
    String(alpha.length),
  );
  await shot(page, '7-report-sessions');
  const target = alpha[0] as Entry;
  await page.goto(`file://${out}#/exchange/${target.id}`);
  await page.waitForSelector('#view [data-field="prompt"]', { state: 'attached' });
  assert.equal(await page.locator('[data-field="prompt"]').textContent(), target.metadata.prompt);
  assert.equal(await page.locator('[data-field="response"]').textContent(), target.metadata.response);
  const beta = all.find((e) => e.metadata.session_id === 'SES-BETA') as Entry;
  await page.goto(`file://${out}#/exchange/${beta.id}`);
  await page.waitForSelector('#view [data-field="prompt"]', { state: 'attached' });
  assert.equal(await page.locator('[data-field="prompt"]').textContent(), beta.metadata.prompt);
  assert.equal(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned), undefined);
  await shot(page, '8-report-exchange');
  assert.deepEqual(errors, []);
  await context.close();
});
