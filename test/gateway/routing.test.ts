// Routing through `cplane serve` (a real process on a bootstrapped root) over three local upstreams speaking the
// real Anthropic and OpenAI wire formats, the official SDKs as clients: fallbacks before the first byte (never
// after), one EXCHANGE naming every attempt, one charge, per-deployment breakers and 429 cooldowns, weights.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { REPO } from '../../scripts/lib/repo.js';
import { budgetRecordsIn, configSet, issueKey, ledgerEntries, startServed, type Served } from './harness.js';
import { sdkClients } from './translated.js';
import { startUpstream, type Upstream } from './upstream.js';

const KEYS_A = { anthropic: 'sk-ant-route-A-0123456789abcdef', openai: 'sk-oai-route-A-0123456789abcdef' };
const KEYS_B = { anthropic: 'sk-ant-route-B-0123456789abcdef', openai: 'sk-oai-route-B-0123456789abcdef' };
const KEYS_C = { anthropic: 'sk-ant-route-C-0123456789abcdef', openai: 'sk-oai-route-C-0123456789abcdef' };
const ENV = {
  ROUTE_ANT_A: KEYS_A.anthropic,
  ROUTE_ANT_B: KEYS_B.anthropic,
  ROUTE_ANT_C: KEYS_C.anthropic,
  ROUTE_OAI_A: KEYS_A.openai,
  ROUTE_OAI_B: KEYS_B.openai,
  // The docs' worked example names these.
  ANTHROPIC_KEY_PRIMARY: KEYS_A.anthropic,
  ANTHROPIC_KEY_BACKUP: KEYS_B.anthropic,
};

const DUO_B_PRICE = {
  input_per_mtok: 1,
  output_per_mtok: 5,
  cache_read_per_mtok: 0.1,
  cache_write_5m_per_mtok: 1.25,
  cache_write_1h_per_mtok: 2,
};

let served: Served;
let key: string;
let A: Upstream;
let B: Upstream;
let C: Upstream;

/** The worked example's config, from docs/routing.md, its base URLs pointed at the local upstreams. */
function docsExample(): { deployments: Array<Record<string, unknown>>; aliases: Record<string, unknown> } {
  const text = readFileSync(join(REPO, 'docs', 'routing.md'), 'utf8');
  const match = /cplane config set gateway\.routing '(\{[^']+)'/.exec(text);
  assert.ok(match?.[1], 'docs/routing.md has the worked example');
  const config = JSON.parse(match[1]) as ReturnType<typeof docsExample>;
  const urls: Record<string, string> = { primary: A.url, backup: B.url };
  for (const d of config.deployments) d.base_url = urls[String(d.id)];
  return config;
}

function deployment(id: string, upstream: Upstream, credential: string, model: string, extra = {}) {
  const provider = credential.includes('OAI') ? 'openai' : 'anthropic';
  return { id, provider, base_url: upstream.url, credential_env: credential, model, ...extra };
}

before(async () => {
  [A, B, C] = await Promise.all([startUpstream(KEYS_A), startUpstream(KEYS_B), startUpstream(KEYS_C)]);
  Object.assign(process.env, ENV);
  const example = docsExample();
  const routing = {
    deployments: [
      ...example.deployments,
      deployment('a', A, 'ROUTE_ANT_A', 'claude-a-model', { region: 'us' }),
      deployment('b', B, 'ROUTE_ANT_B', 'claude-b-model', { region: 'eu' }),
      deployment('a3', A, 'ROUTE_ANT_A', 'trio-a'),
      deployment('b3', B, 'ROUTE_ANT_B', 'trio-b'),
      deployment('c3', C, 'ROUTE_ANT_C', 'trio-c'),
      deployment('ba', C, 'ROUTE_ANT_C', 'breaker-a'),
      deployment('bb', B, 'ROUTE_ANT_B', 'breaker-b'),
      deployment('ca', A, 'ROUTE_ANT_A', 'cool-a'),
      deployment('cb', B, 'ROUTE_ANT_B', 'cool-b'),
      deployment('w3', A, 'ROUTE_ANT_A', 'split-3', { weight: 3 }),
      deployment('w1', B, 'ROUTE_ANT_B', 'split-1', { weight: 1 }),
      deployment('sa', A, 'ROUTE_ANT_A', 'slow-a'),
      deployment('sb', B, 'ROUTE_ANT_B', 'slow-b'),
      deployment('oa', A, 'ROUTE_OAI_A', 'gpt-a'),
      deployment('ob', B, 'ROUTE_OAI_B', 'gpt-b'),
    ],
    aliases: {
      ...example.aliases,
      duo: { targets: ['a', 'b'] },
      trio: { targets: ['a3', 'b3', 'c3'] },
      breaker: { targets: ['ba', 'bb'] },
      cool: { targets: ['ca', 'cb'] },
      split: { targets: [['w3', 'w1']] },
      slow: { targets: ['sa', 'sb'] },
      'gpt-duo': { targets: ['oa', 'ob'] },
    },
  };
  // Priced like the model they stand for: a session's cost limit needs a price for every model a call may use.
  const price = {
    input_per_mtok: 3,
    output_per_mtok: 15,
    cache_read_per_mtok: 0.3,
    cache_write_5m_per_mtok: 3.75,
    cache_write_1h_per_mtok: 6,
  };
  const pricing = {
    ...Object.fromEntries(routing.deployments.map((d) => [String(d.model), price])),
    // A dear and B cheap: the reservation covers A, the answer from B is charged at B's price.
    'claude-a-model': { ...price, input_per_mtok: 15, output_per_mtok: 75 },
    'claude-b-model': DUO_B_PRICE,
  };
  served = await startServed([], (root) => {
    configSet(root, 'budget.pricing', JSON.stringify(pricing));
    configSet(root, 'gateway.routing', JSON.stringify(routing));
    // An upstream that has not begun its reply within 1.5 s is timed out (and the call falls back).
    configSet(root, 'router.timeout_ms', '1500');
    configSet(
      root,
      'router.breaker',
      JSON.stringify({ failure_threshold: 3, reset_timeout_ms: 1500, half_open_probes: 1 }),
    );
  });
  key = issueKey('AGENT-ROUTE');
});
after(async () => {
  await served?.cleanup();
  await Promise.all([A?.close(), B?.close(), C?.close()]);
  for (const name of Object.keys(ENV)) delete process.env[name];
});

const { anthropic, openai } = sdkClients(() => ({ url: served.url, key }));

type Entry = ReturnType<typeof ledgerEntries>[number];
// An export spawns the CLI (a second or more): a test reads the ledger once and filters that.
const exchangesOf = (session: string, all = ledgerEntries(served.root)): Entry[] =>
  all.filter((e) => e.event_type === 'EXCHANGE' && e.metadata.session_id === session);
const settlementsOf = (exchange: Entry, all: Entry[]): Entry[] =>
  budgetRecordsIn(all).filter(
    (e) => e.event_type === 'BUDGET_SETTLED' && e.metadata.request_id === exchange.metadata.gateway_request_id,
  );
const seen = (upstream: Upstream, model: string): number =>
  upstream.requests.filter((r) => r.body?.model === model).length;

const overloaded = { status: 529, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } };
const attemptsOf = (e: Entry) =>
  e.metadata.attempts as Array<{
    deployment: string;
    model: string;
    provider: string;
    outcome: string;
    status: number | null;
    kind: string | null;
    upstream_request_id: string | null;
  }>;

/** One EXCHANGE for the session: A's failed attempt then B's success; charged once, at B's usage. */
function assertFellBack(session: string, failed: string, answered: string, model: string): [Entry, Entry[]] {
  const all = ledgerEntries(served.root);
  const [exchange, ...more] = exchangesOf(session, all);
  assert.equal(more.length, 0, 'one EXCHANGE per client request');
  assert.ok(exchange);
  assert.equal(exchange.decision, 'SUCCESS');
  const attempts = attemptsOf(exchange);
  assert.deepEqual(
    attempts.map((a) => [a.deployment, a.outcome]),
    [
      [failed, 'error'],
      [answered, 'success'],
    ],
  );
  assert.equal(attempts[0]?.status, 529);
  assert.equal(attempts[0]?.kind, 'overloaded');
  assert.equal(attempts[1]?.model, model);
  assert.equal(exchange.metadata.served_by, `${answered}/${model}`);
  assert.equal(exchange.metadata.model_id, model, 'the model that served is recorded');
  const settled = settlementsOf(exchange, all);
  assert.equal(settled.length, 1, 'the budget is settled once');
  return [exchange, all];
}

test("the docs' worked example: primary answers 529, backup serves; the EXCHANGE names both", async () => {
  const session = 'SES-ROUTE-DOCS';
  A.faults.push(overloaded);
  const before = { a: A.requests.length, b: B.requests.length };
  const { data, response } = await anthropic(session)
    .messages.create({ model: 'claude-sonnet-4-6', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] })
    .withResponse();
  assert.equal((data.content[0] as { text: string }).text, 'Hello from upstream');
  assert.equal(response.headers.get('x-cplane-served-by'), 'backup/claude-sonnet-4-6');
  assert.equal(A.requests.length, before.a + 1);
  assert.equal(B.requests.length, before.b + 1);
  assert.equal(B.requests.at(-1)?.headers['x-api-key'], KEYS_B.anthropic, 'backup gets its own key');
  assertFellBack(session, 'primary', 'backup', 'claude-sonnet-4-6');
});

test('Anthropic SDK, non-streaming: A answers 529 → B serves; header and body name B; one EXCHANGE, one charge', async () => {
  const session = 'SES-ROUTE-JSON';
  A.faults.push(overloaded);
  const { data, response } = await anthropic(session)
    .messages.create({ model: 'duo', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] })
    .withResponse();
  assert.equal(data.model, 'claude-b-model', "the body's model is the one that served");
  assert.equal(response.headers.get('x-cplane-served-by'), 'b/claude-b-model');
  assert.equal(B.requests.at(-1)?.body?.model, 'claude-b-model', 'B is asked for its own model');
  const [exchange, all] = assertFellBack(session, 'a', 'b', 'claude-b-model');
  assert.equal(exchange.metadata.model_alias, 'duo');
  const attempts = attemptsOf(exchange);
  assert.equal(attempts[1]?.upstream_request_id, 'req_upstream_1');
  assert.equal(attempts[0]?.provider, 'anthropic');
  const [settled] = settlementsOf(exchange, all);
  assert.equal(settled?.decision, 'SETTLED', 'charged at the answer, not as unknown usage');
  // 12 uncached + 3 cache-write + 40 cache-read input, 17 output: B's usage, charged once (A's 529 costs nothing).
  assert.match(String((settled as { reason?: unknown } | undefined)?.reason), /settled 72 tokens/);
  // Priced at B, the model that answered: 12 × 1 + 3 × 1.25 + 40 × 0.1 + 17 × 5 per million tokens.
  const cost = Number(settled?.metadata.cost);
  assert.ok(Math.abs(cost - 104.75e-6) < 1e-12, `charged ${cost} at B's price`);
  assert.ok(Number(settled?.metadata.reserved_cost) > cost, 'the reservation covered the dearer A');
});

test('Anthropic SDK, streaming: A answers 529 → the stream comes from B', async () => {
  const session = 'SES-ROUTE-STREAM';
  A.faults.push(overloaded);
  const stream = anthropic(session).messages.stream({
    model: 'duo',
    max_tokens: 64,
    messages: [{ role: 'user', content: 'hi' }],
  });
  const message = await stream.finalMessage();
  assert.equal(message.model, 'claude-b-model');
  assertFellBack(session, 'a', 'b', 'claude-b-model');
});

test('a stream that failed after its first byte is not retried elsewhere: cut, recorded once, B never asked', async () => {
  const session = 'SES-ROUTE-MIDSTREAM';
  A.faults.push({ dieAfterFrames: 3 });
  const before = seen(B, 'claude-b-model');
  const stream = anthropic(session).messages.stream({
    model: 'duo',
    max_tokens: 64,
    messages: [{ role: 'user', content: 'hi' }],
  });
  await assert.rejects(stream.finalMessage());
  assert.equal(seen(B, 'claude-b-model'), before, 'no attempt on B');
  let all = ledgerEntries(served.root);
  for (let i = 0; i < 10 && exchangesOf(session, all).length === 0; i += 1) {
    await new Promise((r) => setTimeout(r, 100));
    all = ledgerEntries(served.root);
  }
  const exchange = exchangesOf(session, all)[0];
  assert.ok(exchange);
  assert.notEqual(exchange.decision, 'SUCCESS');
  assert.deepEqual(
    attemptsOf(exchange).map((a) => a.deployment),
    ['a'],
  );
  assert.equal(exchangesOf(session, all).length, 1);
  assert.equal(settlementsOf(exchange, all).length, 1, 'charged (the upstream may have billed the part it sent)');
});

test('three upstreams: A 529, B 500 → C serves; the EXCHANGE lists all three attempts', async () => {
  const session = 'SES-ROUTE-TRIO';
  A.faults.push(overloaded);
  B.faults.push({
    status: 500,
    body: { type: 'error', error: { type: 'api_error', message: 'Internal server error' } },
  });
  const message = await anthropic(session).messages.create({
    model: 'trio',
    max_tokens: 64,
    messages: [{ role: 'user', content: 'hi' }],
  });
  assert.equal(message.model, 'trio-c');
  const all = ledgerEntries(served.root);
  const [exchange] = exchangesOf(session, all);
  assert.ok(exchange);
  assert.deepEqual(
    attemptsOf(exchange).map((a) => [a.deployment, a.outcome, a.status]),
    [
      ['a3', 'error', 529],
      ['b3', 'error', 500],
      ['c3', 'success', null],
    ],
  );
  assert.equal(settlementsOf(exchange, all).length, 1);
});

test("A's breaker opens after three failures; A then gets no requests until its probe", async () => {
  for (let i = 0; i < 3; i += 1) {
    C.faults.push(overloaded);
    const message = await anthropic(`SES-ROUTE-BRK-${i}`).messages.create({
      model: 'breaker',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(message.model, 'breaker-b');
  }
  assert.equal(seen(C, 'breaker-a'), 3);
  for (let i = 0; i < 4; i += 1) {
    const message = await anthropic('SES-ROUTE-BRK-OPEN').messages.create({
      model: 'breaker',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(message.model, 'breaker-b');
  }
  assert.equal(seen(C, 'breaker-a'), 3, 'nothing for A while its breaker is open');
  for (const e of exchangesOf('SES-ROUTE-BRK-OPEN'))
    assert.deepEqual(
      attemptsOf(e).map((a) => a.deployment),
      ['bb'],
      'an open breaker is skipped, not tried',
    );
  // Past the reset timeout (1.5 s here) the next call is A's probe; it succeeds and closes the breaker.
  await new Promise((r) => setTimeout(r, 1600));
  const probe = await anthropic('SES-ROUTE-BRK-PROBE').messages.create({
    model: 'breaker',
    max_tokens: 16,
    messages: [{ role: 'user', content: 'hi' }],
  });
  assert.equal(probe.model, 'breaker-a');
  assert.equal(seen(C, 'breaker-a'), 4);
});

test('a 429 with retry-after 2 s: B serves, A gets nothing for 2 s, then takes traffic again', async () => {
  A.faults.push({
    status: 429,
    headers: { 'retry-after': '2' },
    body: {
      type: 'error',
      error: { type: 'rate_limit_error', message: 'Number of requests has exceeded your rate limit' },
    },
  });
  const started = Date.now();
  const first = await anthropic('SES-ROUTE-COOL').messages.create({
    model: 'cool',
    max_tokens: 16,
    messages: [{ role: 'user', content: 'hi' }],
  });
  assert.equal(first.model, 'cool-b');
  assert.equal(seen(A, 'cool-a'), 1);
  const [exchange] = exchangesOf('SES-ROUTE-COOL');
  assert.equal(attemptsOf(exchange as Entry)[0]?.status, 429);
  while (Date.now() - started < 1500) {
    const message = await anthropic('SES-ROUTE-COOL-2').messages.create({
      model: 'cool',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(message.model, 'cool-b');
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(seen(A, 'cool-a'), 1, 'nothing for A while it cools down');
  await new Promise((r) => setTimeout(r, Math.max(0, started + 2100 - Date.now())));
  const again = await anthropic('SES-ROUTE-COOL-3').messages.create({
    model: 'cool',
    max_tokens: 16,
    messages: [{ role: 'user', content: 'hi' }],
  });
  assert.equal(again.model, 'cool-a', 'A takes traffic again');
});

test('OpenAI SDK, chat completions, streaming and not: A answers 500 → B serves', async () => {
  const failure = {
    status: 500,
    body: { error: { message: 'The server had an error', type: 'server_error', param: null, code: null } },
  };
  A.faults.push(failure);
  const { data, response } = await openai('SES-ROUTE-OAI')
    .chat.completions.create({ model: 'gpt-duo', messages: [{ role: 'user', content: 'hi' }] })
    .withResponse();
  assert.equal(data.model, 'gpt-b');
  assert.equal(response.headers.get('x-cplane-served-by'), 'ob/gpt-b');
  assert.equal(B.requests.at(-1)?.headers.authorization, `Bearer ${KEYS_B.openai}`);
  A.faults.push(failure);
  const { data: stream, response: streamed } = await openai('SES-ROUTE-OAI-STREAM')
    .chat.completions.create({
      model: 'gpt-duo',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    })
    .withResponse();
  assert.equal(streamed.headers.get('x-cplane-served-by'), 'ob/gpt-b', 'a stream names who serves it in its headers');
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(text, 'Hello from upstream');
  const all = ledgerEntries(served.root);
  for (const session of ['SES-ROUTE-OAI', 'SES-ROUTE-OAI-STREAM']) {
    const [exchange, ...more] = exchangesOf(session, all);
    assert.equal(more.length, 0);
    assert.deepEqual(
      attemptsOf(exchange as Entry).map((a) => [a.deployment, a.status]),
      [
        ['oa', 500],
        ['ob', null],
      ],
    );
    assert.equal(settlementsOf(exchange as Entry, all).length, 1);
  }
});

test('weights 3:1 end to end: 400 calls split about 300:100', async () => {
  const before = { three: seen(A, 'split-3'), one: seen(B, 'split-1') };
  const call = (): Promise<Response> =>
    fetch(`${served.url}/v1/messages`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'anthropic-version': '2023-06-01',
        'x-api-key': key,
        'x-cplane-session': 'SES-ROUTE-SPLIT',
      },
      body: JSON.stringify({ model: 'split', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }),
    });
  for (let batch = 0; batch < 20; batch += 1) {
    const replies = await Promise.all(Array.from({ length: 20 }, call));
    for (const reply of replies) {
      assert.equal(reply.status, 200);
      await reply.arrayBuffer();
    }
  }
  const three = seen(A, 'split-3') - before.three;
  const one = seen(B, 'split-1') - before.one;
  assert.equal(three + one, 400);
  // Binomial(400, 0.75): sd 8.7; 45 is five of them.
  assert.ok(Math.abs(three - 300) <= 45, `split ${three}:${one}`);
});

test('a model that is no alias goes to the family upstream exactly as without routing', async () => {
  const before = served.upstream.requests.length;
  const message = await anthropic('SES-ROUTE-PLAIN').messages.create({
    model: 'claude-haiku-4-5',
    max_tokens: 16,
    messages: [{ role: 'user', content: 'hi' }],
  });
  assert.equal(message.model, 'claude-haiku-4-5');
  assert.equal(served.upstream.requests.length, before + 1);
  const [exchange] = exchangesOf('SES-ROUTE-PLAIN');
  assert.equal(exchange?.metadata.model_alias, undefined);
  assert.equal(attemptsOf(exchange as Entry)[0]?.deployment, undefined);
});

test('A times out before its reply began → B serves; A may have billed, so the reservation stays charged once', async () => {
  const session = 'SES-ROUTE-TIMEOUT';
  A.faults.push({ replyDelayMs: 4000 });
  const message = await anthropic(session).messages.create({
    model: 'slow',
    max_tokens: 16,
    messages: [{ role: 'user', content: 'hi' }],
  });
  assert.equal(message.model, 'slow-b');
  const all = ledgerEntries(served.root);
  const [exchange, ...more] = exchangesOf(session, all);
  assert.equal(more.length, 0);
  assert.ok(exchange);
  assert.deepEqual(
    attemptsOf(exchange).map((a) => [a.deployment, a.outcome, a.status]),
    [
      ['sa', 'timeout', null],
      ['sb', 'success', null],
    ],
  );
  const settled = settlementsOf(exchange, all);
  assert.equal(settled.length, 1, 'one settlement');
  assert.equal(settled[0]?.decision, 'SETTLED_USAGE_UNKNOWN', 'the whole reservation, which covers both attempts');
  const exported = JSON.stringify(all);
  for (const secret of Object.values(ENV)) assert.ok(!exported.includes(secret), 'no deployment key in the ledger');
});

test("a key's model scopes apply to the upstream models too: a deployment it may not use is never tried", async () => {
  const scoped = issueKey('AGENT-ROUTE-SCOPED', ['route:*', 'model:duo', 'model:claude-b-model']);
  const before = seen(A, 'claude-a-model');
  const client = new Anthropic({ apiKey: scoped, baseURL: served.url, maxRetries: 0 });
  for (let i = 0; i < 3; i += 1) {
    const message = await client.messages.create({
      model: 'duo',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(message.model, 'claude-b-model');
  }
  assert.equal(seen(A, 'claude-a-model'), before, 'A is never asked for a model the key may not use');
  const narrow = issueKey('AGENT-ROUTE-NARROW', ['route:*', 'model:duo']);
  await assert.rejects(
    new Anthropic({ apiKey: narrow, baseURL: served.url, maxRetries: 0 }).messages.create({
      model: 'duo',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hi' }],
    }),
    (error: { status?: number; message?: string }) => error.status === 403 && /AUTH_SCOPE/.test(String(error.message)),
  );
});

test("a prompt over A's window (its 400 says so) is answered by B, the larger target; a plain 400 is not moved", async () => {
  A.faults.push({
    status: 400,
    body: {
      type: 'error',
      error: { type: 'invalid_request_error', message: 'prompt is too long: 210000 tokens > 200000 maximum' },
    },
  });
  const message = await anthropic('SES-ROUTE-WINDOW').messages.create({
    model: 'duo',
    max_tokens: 16,
    messages: [{ role: 'user', content: 'hi' }],
  });
  assert.equal(message.model, 'claude-b-model');
  A.faults.push({
    status: 400,
    body: { type: 'error', error: { type: 'invalid_request_error', message: 'messages: roles must alternate' } },
  });
  const before = seen(B, 'claude-b-model');
  await assert.rejects(
    anthropic('SES-ROUTE-400').messages.create({
      model: 'duo',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hi' }],
    }),
    (error: { status?: number }) => error.status === 400,
  );
  assert.equal(seen(B, 'claude-b-model'), before, 'the request itself is wrong: B is not asked');
  const all = ledgerEntries(served.root);
  assert.deepEqual(
    attemptsOf(exchangesOf('SES-ROUTE-WINDOW', all)[0] as Entry).map((a) => [a.deployment, a.status]),
    [
      ['a', 400],
      ['b', null],
    ],
  );
});
