// The official Anthropic SDK against `cplane serve` (a real process on a bootstrapped root) in front of a local
// upstream speaking the real wire format: each call is one EXCHANGE whose usage equals what the upstream reported.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { issueKey, budgetEntries, ledgerEntries, startServed, type Served } from './harness.js';
import { USAGE } from './upstream.js';

let served: Served;
let key: string;
const client = (apiKey = key, headers: Record<string, string> = {}): Anthropic =>
  new Anthropic({ apiKey, baseURL: served.url, maxRetries: 2, defaultHeaders: headers });

before(async () => {
  served = await startServed();
  key = issueKey('AGENT-SDK');
});
after(async () => {
  await served.cleanup();
});

const exchangesOf = (session: string) =>
  ledgerEntries(served.root).filter((e) => e.event_type === 'EXCHANGE' && e.metadata.session_id === session);

function assertExactUsage(meta: Record<string, unknown>): void {
  assert.equal(
    meta.input_tokens,
    USAGE.input + USAGE.cacheWrite + USAGE.cacheRead,
    'all prompt tokens, each bucket once',
  );
  assert.equal(meta.output_tokens, USAGE.output, 'message_delta overwrote message_start (never summed)');
  assert.equal(meta.cache_read_tokens, USAGE.cacheRead);
  assert.equal(meta.cache_write_tokens, USAGE.cacheWrite);
  assert.equal(meta.usage_complete, true);
}

test('messages, non-streaming: the SDK gets the upstream reply; one EXCHANGE with exact usage; headers passed through', async () => {
  const session = 'SES-A-JSON';
  const message = await client(key, {
    'x-cplane-session': session,
    'anthropic-beta': 'prompt-caching-2024-07-31',
    'anthropic-version': '2024-10-22',
  }).messages.create({
    model: 'claude-sonnet-4-5',
    max_tokens: 256,
    messages: [{ role: 'user', content: 'Hello' }],
  });
  assert.equal(message.content[0]?.type, 'text');
  assert.equal((message.content[0] as { text: string }).text, 'Hello from upstream');
  const seen = served.upstream.requests.at(-1);
  assert.equal(seen?.headers['anthropic-beta'], 'prompt-caching-2024-07-31');
  assert.equal(seen?.headers['anthropic-version'], '2024-10-22', 'anthropic-version passed through unchanged');
  assert.equal(
    seen?.headers['x-api-key'],
    'sk-ant-upstream-SECRET-0123456789',
    "the upstream gets the gateway's key, not the client's",
  );
  const [exchange, ...more] = exchangesOf(session);
  assert.equal(more.length, 0);
  assert.ok(exchange);
  assertExactUsage(exchange.metadata);
  assert.equal(exchange.metadata.surface, 'anthropic.messages');
  assert.equal(exchange.metadata.stream, false);
  assert.equal(exchange.metadata.agent_id, 'AGENT-SDK');
  assert.equal(exchange.metadata.finish_reason, 'stop');
  assert.deepEqual(JSON.parse(String(exchange.metadata.prompt)), { messages: [{ role: 'user', content: 'Hello' }] });
});

test('messages, streaming with a tool call, query string ignored: exact usage, tool input assembled, every frame named', async () => {
  const session = 'SES-A-STREAM';
  const raw = await fetch(`${served.url}/v1/messages?beta=true`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${key}`,
      'anthropic-version': '2023-06-01',
      'x-claude-code-session-id': session,
    },
    body: JSON.stringify({
      model: 'claude-sonnet-4-5',
      max_tokens: 256,
      stream: true,
      messages: [{ role: 'user', content: 'weather in Paris?' }],
    }),
  });
  const text = await raw.text();
  const frames = text.split('\n\n').filter((f) => f.trim() !== '');
  assert.ok(
    frames.every((f) => f.startsWith('event: ')),
    'every SSE frame keeps its event: line',
  );
  assert.ok(frames.at(-1)?.startsWith('event: message_stop'), 'the final event is released');

  const stream = client(key, { 'x-cplane-session': `${session}-sdk` }).messages.stream({
    model: 'claude-sonnet-4-5',
    max_tokens: 256,
    messages: [{ role: 'user', content: 'weather in Paris?' }],
  });
  const final = await stream.finalMessage();
  const toolUse = final.content.find((b) => b.type === 'tool_use') as { input: unknown; name: string } | undefined;
  assert.deepEqual(toolUse?.input, { city: 'Paris' });
  assert.equal(final.usage.output_tokens, USAGE.output);
  for (const s of [session, `${session}-sdk`]) {
    const exchanges = exchangesOf(s);
    assert.equal(exchanges.length, 1, s);
    const meta = exchanges[0]?.metadata ?? {};
    assertExactUsage(meta);
    assert.equal(meta.stream, true);
    assert.equal(meta.finish_reason, 'tool_use');
    const blocks = JSON.parse(String(meta.response)) as Array<Record<string, unknown>>;
    assert.deepEqual(blocks, [
      { type: 'text', text: 'Hello from upstream' },
      { type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: { city: 'Paris' } },
    ]);
  }
});

test('a tool-use round trip (tool_use, then the tool_result turn) is one EXCHANGE per round-trip', async () => {
  const session = 'SES-A-TOOLS';
  const anthropic = client(key, { 'x-cplane-session': session });
  const tools = [
    {
      name: 'get_weather',
      description: 'weather',
      input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } },
    },
  ];
  const question = { role: 'user' as const, content: 'weather in Paris?' };
  const first = await anthropic.messages.create({
    model: 'claude-sonnet-4-5',
    max_tokens: 256,
    tools,
    messages: [question],
  });
  const call = first.content.find((b) => b.type === 'tool_use') as { id: string } | undefined;
  assert.ok(call);
  const second = await anthropic.messages.create({
    model: 'claude-sonnet-4-5',
    max_tokens: 256,
    tools,
    messages: [
      question,
      { role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '18°C, sunny' }] },
    ],
  });
  assert.equal(second.stop_reason, 'end_turn');
  const exchanges = exchangesOf(session);
  assert.equal(exchanges.length, 2);
  const prompt = JSON.parse(String(exchanges[1]?.metadata.prompt)) as { messages: Array<{ content: unknown }> };
  assert.match(
    JSON.stringify(prompt.messages[2]?.content),
    /tool_result/,
    'the second EXCHANGE records the tool result turn',
  );
});

test('count_tokens and models are governed round-trips: one EXCHANGE each, holding the answer, zero usage', async () => {
  const exchanges = (): ReturnType<typeof ledgerEntries> =>
    ledgerEntries(served.root).filter((e) => e.event_type === 'EXCHANGE');
  const before = exchanges().length;
  const counted = await client().messages.countTokens({
    model: 'claude-sonnet-4-5',
    messages: [{ role: 'user', content: 'Hello' }],
  });
  assert.ok(counted.input_tokens > 0);
  const models = await client().models.list();
  assert.equal(models.data[0]?.id, 'claude-sonnet-4-5');
  const added = exchanges().slice(before);
  assert.deepEqual(
    added.map((e) => e.metadata.surface),
    ['anthropic.count_tokens', 'anthropic.models'],
  );
  const [count, list] = added;
  assert.equal(JSON.parse(String(count?.metadata.response)).input_tokens, counted.input_tokens);
  assert.match(String(count?.metadata.prompt), /"Hello"/);
  assert.equal(count?.metadata.model_id, 'claude-sonnet-4-5');
  assert.match(String(list?.metadata.response), /claude-sonnet-4-5/);
  for (const e of added) {
    assert.equal(e.decision, 'SUCCESS');
    assert.equal(e.metadata.input_tokens, 0);
    assert.equal(e.metadata.output_tokens, 0);
    assert.equal(e.metadata.cache_read_tokens, 0);
  }
  const dispatches = ledgerEntries(served.root).filter((e) => e.event_type === 'DISPATCH');
  assert.ok(added.every((e) => dispatches.some((d) => d.id === e.metadata.dispatch_entry_id)));
  const upstreamBefore = served.upstream.requests.length;
  await assert.rejects(
    client('cpt1.bad.token').models.list(),
    (e: unknown) => e instanceof Anthropic.AuthenticationError,
  );
  assert.equal(served.upstream.requests.length, upstreamBefore, 'a refused call is not forwarded');
});

test('models.list pages: the SDK walks every page (limit and after_id reach the upstream, nothing else); a bad value is a coded 400', async () => {
  const ids: string[] = [];
  for await (const model of client().models.list({ limit: 1 })) {
    ids.push(model.id);
    if (ids.length > 5) break;
  }
  assert.deepEqual(ids, ['claude-sonnet-4-5', 'claude-opus-4-1', 'claude-haiku-4-5']);
  const pages = served.upstream.requests.filter((r) => r.path === '/v1/models').slice(-3);
  assert.deepEqual(
    pages.map((r) => r.query),
    ['limit=1', 'limit=1&after_id=claude-sonnet-4-5', 'limit=1&after_id=claude-opus-4-1'],
  );
  const upstreamBefore = served.upstream.requests.length;
  const res = await fetch(`${served.url}/v1/models?beta=true&limit=0`, {
    headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01' },
  });
  assert.equal(res.status, 400);
  const refused = (await res.json()) as { type: string; error: { type: string; message: string } };
  assert.equal(refused.error.type, 'invalid_request_error');
  assert.match(refused.error.message, /limit/);
  assert.equal(served.upstream.requests.length, upstreamBefore, 'a refused call is not forwarded');
});

test('refusals: bad key 401, wrong scope 403, budget 429 naming the scope — each sent once (x-should-retry: false), nothing upstream', async () => {
  const upstreamBefore = served.upstream.requests.length;
  const session = 'SES-A-REFUSED';
  const ask = (apiKey: string, maxTokens = 64) =>
    client(apiKey, { 'x-cplane-session': session }).messages.create(
      { model: 'claude-sonnet-4-5', max_tokens: maxTokens, messages: [{ role: 'user', content: 'Hello' }] },
      { timeout: 60_000 },
    );
  await assert.rejects(
    ask('not-a-key'),
    (e: unknown) => e instanceof Anthropic.AuthenticationError && e.status === 401,
  );
  await assert.rejects(ask(`${key.slice(0, -4)}AAAA`), (e: unknown) => e instanceof Anthropic.AuthenticationError);
  await assert.rejects(
    ask(issueKey('AGENT-SDK', ['route:openai.chat'])),
    (e: unknown) => e instanceof Anthropic.PermissionDeniedError && /AUTH_SCOPE/.test(e.message),
  );
  await assert.rejects(ask(key, 600_000), (e: unknown) => {
    assert.ok(e instanceof Anthropic.RateLimitError, String(e));
    assert.match(e.message, /BUDGET_EXHAUSTED/);
    assert.match(e.message, /agent/);
    assert.equal(e.headers?.get('x-should-retry'), 'false');
    return true;
  });
  assert.equal(served.upstream.requests.length, upstreamBefore, 'nothing of a refused request is sent upstream');
  const rejected = ledgerEntries(served.root).filter(
    (e) => e.event_type === 'PROMPT_REJECTED' && e.metadata.session_id === session,
  );
  assert.deepEqual(
    rejected.map((e) => e.metadata.error_code),
    ['AUTH_MALFORMED', 'AUTH_BAD_SIGNATURE', 'AUTH_SCOPE', 'BUDGET_EXHAUSTED'],
    'one request per refusal: the SDK did not retry',
  );
});

test('faults: 529 twice then ok is one EXCHANGE with three attempts; a 429 spend limit is not retried', async () => {
  served.upstream.faults.push(
    { status: 529, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } },
    { status: 529, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } },
  );
  const session = 'SES-A-529';
  await client(key, { 'x-cplane-session': session }).messages.create({
    model: 'claude-sonnet-4-5',
    max_tokens: 64,
    messages: [{ role: 'user', content: 'Hello' }],
  });
  const [exchange, ...more] = exchangesOf(session);
  assert.equal(more.length, 0);
  assert.deepEqual(
    ((exchange?.metadata.attempts ?? []) as Array<{ outcome: string; status: number | null }>).map((a) => [
      a.outcome,
      a.status,
    ]),
    [
      ['error', 529],
      ['error', 529],
      ['success', null],
    ],
  );

  const upstreamBefore = served.upstream.requests.length;
  served.upstream.faults.push({
    status: 429,
    body: {
      type: 'error',
      error: {
        type: 'rate_limit_error',
        message: 'spend limit',
        details: { error_code: 'enforced_spend_limit_reached' },
      },
    },
  });
  const spend = 'SES-A-SPEND';
  await assert.rejects(
    client(key, { 'x-cplane-session': spend }).messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Hello' }],
    }),
    (e: unknown) => e instanceof Anthropic.RateLimitError,
  );
  assert.equal(
    served.upstream.requests.length,
    upstreamBefore + 1,
    'one upstream attempt, no retry by the gateway or the SDK',
  );
  const failed = exchangesOf(spend);
  assert.equal(failed.length, 1);
  assert.equal(failed[0]?.metadata.error_code, 'SPEND_LIMIT');
});

test('faults: upstream dying mid-stream and a client aborting mid-stream each leave one EXCHANGE with the partial content', async () => {
  served.upstream.faults.push({ dieAfterFrames: 4 });
  const died = 'SES-A-DIED';
  const stream = client(key, { 'x-cplane-session': died }).messages.stream({
    model: 'claude-sonnet-4-5',
    max_tokens: 64,
    messages: [{ role: 'user', content: 'Hello' }],
  });
  await assert.rejects(stream.finalMessage(), (e: unknown) => {
    assert.ok(!String(e).includes(served.upstream.url), "the client is not told the upstream's address");
    return true;
  });
  const [cut] = exchangesOf(died);
  assert.equal(cut?.decision, 'ERROR');
  assert.equal(cut?.metadata.usage_complete, false);
  assert.match(String(cut?.metadata.response), /Hello /);
  assert.doesNotMatch(String(cut?.metadata.error_message), /^$/);

  served.upstream.faults.push({ frameDelayMs: 150 });
  const gone = 'SES-A-GONE';
  const controller = new AbortController();
  const aborting = client(key, { 'x-cplane-session': gone }).messages.stream(
    { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'Hello' }] },
    { signal: controller.signal },
  );
  aborting.on('text', () => controller.abort());
  await assert.rejects(aborting.finalMessage());
  let cancelled: ReturnType<typeof exchangesOf>[number] | undefined;
  for (let i = 0; i < 100 && cancelled === undefined; i += 1) {
    cancelled = exchangesOf(gone)[0];
    if (cancelled === undefined) await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(cancelled?.decision, 'CANCELLED');
  assert.equal(cancelled?.metadata.outcome, 'cancelled');
  assert.equal(cancelled?.metadata.usage_complete, false);
  const settled = budgetEntries(served.root).filter(
    (e) => e.event_type === 'BUDGET_SETTLED' && e.metadata.request_id === cancelled?.metadata.gateway_request_id,
  );
  assert.equal(settled.length, 1, 'the reservation is settled (charged as unknown), not left pending');
});
