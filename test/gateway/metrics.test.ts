// GET /metrics on `cplane serve`: after a scripted run of calls (whole and streamed replies, both APIs, an upstream
// failure, a retried one, refusals), the Prometheus counters equal the sums over the ledger and `budget status`,
// the histograms hold one observation per call, and no label holds a session, agent or key.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from '../../scripts/lib/repo.js';
import { METRICS } from '../../staging/PKG-GATEWAY-001/HOT/gateway/metrics/catalogue.js';
import { cli, issueKey, ledgerEntries, startServed, type Served } from './harness.js';

let served: Served;
let key: string;
let metricsKey: string;
let narrowKey: string;
const SESSIONS = ['SES-METRICS-A', 'SES-METRICS-B'];
const AGENTS = ['AGENT-METRICS', 'AGENT-SCRAPER', 'AGENT-NARROW'];

before(async () => {
  served = await startServed();
  key = issueKey('AGENT-METRICS');
  metricsKey = issueKey('AGENT-SCRAPER', ['metrics:read']);
  narrowKey = issueKey('AGENT-NARROW', ['route:openai.chat']);
});
after(async () => {
  await served.cleanup();
});

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The exposition format read as its specification writes it: `name{l="v",…} value`, comments skipped. */
function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(match, `not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[pair[1] as string] = (pair[2] as string).replace(/\\n/g, '\n').replace(/\\(["\\])/g, '$1');
    const raw = match[3] as string;
    samples.push({ name: match[1] as string, labels, value: raw === '+Inf' ? Number.POSITIVE_INFINITY : Number(raw) });
  }
  return samples;
}

const total = (samples: Sample[], name: string, where: Record<string, string> = {}): number =>
  samples
    .filter((s) => s.name === name && Object.entries(where).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);

async function post(path: string, headers: Record<string, string>, body: unknown): Promise<number> {
  const res = await fetch(`${served.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  await res.text();
  return res.status;
}

const anthropic = (token: string, session: string): Record<string, string> => ({
  'x-api-key': token,
  'anthropic-version': '2023-06-01',
  'x-cplane-session': session,
});
const openai = (token: string, session: string): Record<string, string> => ({
  authorization: `Bearer ${token}`,
  'x-cplane-session': session,
});
const message = (extra: Record<string, unknown> = {}) => ({
  model: 'claude-sonnet-4-5',
  max_tokens: 64,
  messages: [{ role: 'user', content: 'Hello' }],
  ...extra,
});
const chat = (extra: Record<string, unknown> = {}) => ({
  model: 'gpt-4.1-mini',
  max_tokens: 64,
  messages: [{ role: 'user', content: 'Hello' }],
  ...extra,
});

async function scrape(token: string | null): Promise<{ status: number; text: string; type: string | null }> {
  const res = await fetch(`${served.url}/metrics`, {
    headers: token === null ? {} : { authorization: `Bearer ${token}` },
  });
  return { status: res.status, text: await res.text(), type: res.headers.get('content-type') };
}

test('/metrics refuses a scrape without a metrics:read key (401), a route key included', async () => {
  const none = await scrape(null);
  assert.equal(none.status, 401, none.text);
  assert.match(none.text, /metrics:read/);
  const routeKey = await scrape(key);
  assert.equal(routeKey.status, 401, routeKey.text);
  assert.match(routeKey.text, /AUTH_SCOPE/);
  assert.ok(!routeKey.text.includes(key));
  const forged = await scrape(`${metricsKey.slice(0, -4)}AAAA`);
  assert.equal(forged.status, 401);
});

test('after a scripted run the counters equal the ledger and budget status, with bounded labels', async () => {
  const [a, b] = SESSIONS as [string, string];
  assert.equal(await post('/v1/messages', anthropic(key, a), message()), 200);
  assert.equal(await post('/v1/messages', anthropic(key, a), message()), 200);
  assert.equal(await post('/v1/messages', anthropic(key, b), message({ stream: true })), 200);
  assert.equal(await post('/v1/messages', anthropic(key, b), message({ stream: true })), 200);
  assert.equal(await post('/v1/chat/completions', openai(key, a), chat()), 200);
  const streamed = chat({ stream: true, stream_options: { include_usage: true } });
  assert.equal(await post('/v1/chat/completions', openai(key, b), streamed), 200);
  // An upstream refusal (not retried) and a server error that the retry loop gets past.
  const invalid = { type: 'error', error: { type: 'invalid_request_error', message: 'bad' } };
  served.upstream.faults.push({ status: 400, body: invalid });
  assert.equal(await post('/v1/messages', anthropic(key, a), message()), 400);
  const overloaded = { type: 'error', error: { type: 'api_error', message: 'boom' } };
  served.upstream.faults.push({ status: 500, body: overloaded });
  assert.equal(await post('/v1/messages', anthropic(key, a), message()), 200);
  // Refusals: a key without this route's scope; no key at all; a model the price table does not know.
  assert.equal(await post('/v1/messages', anthropic(narrowKey, a), message()), 403);
  assert.equal(await post('/v1/messages', anthropic('', a), message()), 401);
  const unpriced = await post('/v1/messages', anthropic(key, b), message({ model: 'model-of-a-client-s-choosing' }));
  assert.ok(unpriced >= 400, `unpriced model answered ${unpriced}`);

  const scraped = await scrape(metricsKey);
  assert.equal(scraped.status, 200, scraped.text);
  assert.match(scraped.type ?? '', /^text\/plain; version=0\.0\.4/);
  const samples = parseExposition(scraped.text);
  const entries = ledgerEntries(served.root);
  const exchanges = entries.filter((e) => e.event_type === 'EXCHANGE');
  const rejected = entries.filter((e) => e.event_type === 'PROMPT_REJECTED');
  assert.equal(exchanges.length, 8);

  // Requests by outcome: the EXCHANGEs by decision, the refusals as PROMPT_REJECTED.
  const decided = (decision: string) => exchanges.filter((e) => e.decision === decision).length;
  assert.equal(total(samples, 'cplane_requests_total', { outcome: 'success' }), decided('SUCCESS'));
  assert.equal(total(samples, 'cplane_requests_total', { outcome: 'error' }), decided('ERROR'));
  assert.equal(decided('ERROR'), 1);
  assert.equal(total(samples, 'cplane_requests_total', { outcome: 'refused' }), rejected.length);
  assert.equal(total(samples, 'cplane_refusals_total'), rejected.length);
  assert.equal(rejected.length, 3);
  assert.equal(total(samples, 'cplane_refusals_total', { code: 'AUTH_SCOPE' }), 1);

  // Tokens per bucket and attempts: the sums over the EXCHANGEs.
  const sum = (field: string) =>
    exchanges.reduce((n, e) => n + (typeof e.metadata[field] === 'number' ? (e.metadata[field] as number) : 0), 0);
  for (const bucket of ['input', 'output', 'cache_read', 'cache_write'])
    assert.equal(total(samples, 'cplane_tokens_total', { bucket }), sum(`${bucket}_tokens`), bucket);
  assert.ok(sum('output_tokens') > 0);
  const attempts = exchanges.reduce((n, e) => n + (e.metadata.attempts as unknown[]).length, 0);
  assert.equal(total(samples, 'cplane_upstream_attempts_total'), attempts);
  assert.equal(attempts, 9, 'the retried call made two attempts');

  // Cost: what `budget status` says the sessions were charged.
  const status = cli(['budget', 'status', '--root', served.root, '--json']);
  assert.equal(status.status, 0, status.stderr);
  const scopes = (
    JSON.parse(status.stdout) as {
      scopes: {
        scope: string;
        state: string;
        settled_cost: number;
        reserved_tokens: number;
        settled_tokens: number;
        limit: { max_tokens?: number } | null;
      }[];
    }
  ).scopes;
  // Budget gauges: the scopes by kind and state, and each kind's tightest remaining tokens, as budget status says.
  for (const kind of new Set(scopes.map((s) => s.scope)))
    for (const state of new Set(scopes.map((s) => s.state)))
      assert.equal(
        total(samples, 'cplane_budget_scopes', { scope_kind: kind, state }),
        scopes.filter((s) => s.scope === kind && s.state === state).length,
        `${kind} ${state}`,
      );
  const sessionsLeft = scopes
    .filter((s) => s.scope === 'session' && s.limit?.max_tokens !== undefined)
    .map((s) => (s.limit?.max_tokens as number) - s.reserved_tokens - s.settled_tokens);
  assert.ok(sessionsLeft.length > 0);
  assert.equal(total(samples, 'cplane_budget_remaining_tokens', { scope_kind: 'session' }), Math.min(...sessionsLeft));
  const settled = scopes.filter((s) => s.scope === 'session').reduce((n, s) => n + s.settled_cost, 0);
  assert.ok(settled > 0);
  assert.ok(
    Math.abs(total(samples, 'cplane_cost_total') - settled) < 1e-9,
    `${total(samples, 'cplane_cost_total')} vs ${settled}`,
  );

  // Histograms: one duration per concluded call, one time-to-first-token per streamed reply.
  assert.equal(total(samples, 'cplane_request_duration_seconds_count'), exchanges.length);
  const plusInf = samples.filter((s) => s.name === 'cplane_request_duration_seconds_bucket' && s.labels.le === '+Inf');
  assert.equal(
    plusInf.reduce((n, s) => n + s.value, 0),
    exchanges.length,
  );
  const streams = exchanges.filter((e) => e.metadata.stream === true && e.decision === 'SUCCESS').length;
  assert.equal(streams, 3);
  assert.equal(total(samples, 'cplane_time_to_first_token_seconds_count'), streams);

  // Gauges: nothing in flight, nothing spooled, the ledger's head, the breakers known.
  assert.equal(total(samples, 'cplane_in_flight_calls'), 0);
  assert.equal(total(samples, 'cplane_spool_depth'), 0);
  assert.ok(total(samples, 'cplane_ledger_head_seq') >= entries.length, 'head seq covers every entry');
  assert.ok(samples.some((s) => s.name === 'cplane_breaker_state' && s.labels.model === 'claude-sonnet-4-5'));

  // Labels: a model no one configured is `other`; no session, agent, key or key id anywhere.
  assert.ok(
    samples.some((s) => s.labels.model === 'other'),
    'the unpriced model is counted as other',
  );
  const forbidden = [...SESSIONS, ...AGENTS, key, metricsKey, narrowKey, 'model-of-a-client-s-choosing'];
  for (const token of [key, metricsKey, narrowKey])
    forbidden.push(
      (JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString()) as { jti: string }).jti,
    );
  for (const s of samples)
    for (const value of Object.values(s.labels))
      assert.ok(!forbidden.some((f) => value.includes(f)), `${s.name} label ${value}`);
  assert.ok(!forbidden.some((f) => scraped.text.includes(f)));
});

test('the exposition names exactly the metric catalogue, and the operating docs list every metric in it', async () => {
  const scraped = await scrape(metricsKey);
  assert.equal(scraped.status, 200);
  const exposed = new Set([...scraped.text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1] as string));
  const catalogued = Object.values(METRICS).map((spec) => spec.name);
  assert.deepEqual([...exposed].sort(), [...catalogued].sort());
  const docs = readFileSync(join(REPO, 'docs', 'production.md'), 'utf8');
  const undocumented = catalogued.filter((name) => !docs.includes(`\`${name}\``));
  assert.deepEqual(undocumented, [], 'docs/production.md lists every metric');
});
