// The official OpenAI SDK against `cplane serve`: Chat Completions and Responses, JSON and streaming, each call
// one EXCHANGE with the upstream's exact usage; the usage chunk the gateway adds upstream is stripped unless asked.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { AUTH_SECRET, cli, configSet, issueKey, ledgerEntries, startServed, type Served } from './harness.js';
import { USAGE } from './upstream.js';

let served: Served;
let key: string;
const client = (session: string, apiKey = key): OpenAI =>
  new OpenAI({ apiKey, baseURL: `${served.url}/v1`, maxRetries: 2, defaultHeaders: { 'x-cplane-session': session } });

/**
 * The budget of the `team-k` key scope: room for one call's reservation (5033 tokens: its 5000 max_tokens and its
 * body counted with gpt-4.1-mini's tokenizer, docs/production.md "How much a call reserves") plus one call's usage
 * (69), not two.
 */
const KEY_LIMIT = 5137;

before(async () => {
  served = await startServed([], (root) =>
    configSet(root, 'budget.limits.key', JSON.stringify({ by_id: { 'team-k': { max_tokens: KEY_LIMIT } } })),
  );
  key = issueKey('AGENT-OAI');
});
after(async () => {
  await served.cleanup();
});

const exchangesOf = (session: string) =>
  ledgerEntries(served.root).filter((e) => e.event_type === 'EXCHANGE' && e.metadata.session_id === session);

function onlyExchange(session: string): Record<string, unknown> {
  const list = exchangesOf(session);
  assert.equal(list.length, 1, `one EXCHANGE for ${session}`);
  const meta = list[0]?.metadata ?? {};
  assert.equal(meta.input_tokens, USAGE.input + USAGE.cacheRead);
  assert.equal(meta.output_tokens, USAGE.output);
  assert.equal(meta.cache_read_tokens, USAGE.cacheRead, 'cached tokens kept in their bucket');
  assert.equal(meta.cache_write_tokens, 0);
  assert.equal(meta.usage_complete, true);
  return meta;
}

test('chat completions, non-streaming, with a tool call', async () => {
  const completion = await client('SES-O-JSON').chat.completions.create({
    model: 'gpt-4.1-mini',
    messages: [{ role: 'user', content: 'weather in Paris?' }],
  });
  assert.equal(completion.choices[0]?.message.tool_calls?.[0]?.type, 'function');
  const meta = onlyExchange('SES-O-JSON');
  assert.equal(meta.surface, 'openai.chat');
  assert.equal(meta.finish_reason, 'tool_use');
  assert.deepEqual(JSON.parse(String(meta.response)), [
    { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
  ]);
});

test('chat completions, streaming without include_usage: usage recorded from the chunk the gateway asked for, which the client never sees', async () => {
  const stream = await client('SES-O-STREAM').chat.completions.create({
    model: 'gpt-4.1-mini',
    stream: true,
    messages: [{ role: 'user', content: 'Hello' }],
  });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  assert.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), 'Hello from upstream');
  assert.ok(
    chunks.every((c) => c.choices.length > 0),
    'no usage chunk reaches a client that did not ask',
  );
  const sent = served.upstream.requests.at(-1)?.body as { stream_options?: { include_usage?: boolean } };
  assert.equal(sent.stream_options?.include_usage, true, 'include_usage added upstream');
  onlyExchange('SES-O-STREAM');
});

test('chat completions, streaming with include_usage: the client gets the usage chunk', async () => {
  const stream = await client('SES-O-USAGE').chat.completions.create({
    model: 'gpt-4.1-mini',
    stream: true,
    stream_options: { include_usage: true },
    messages: [{ role: 'user', content: 'Hello' }],
  });
  let usage: unknown = null;
  for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
  assert.equal((usage as { completion_tokens: number }).completion_tokens, USAGE.output);
  onlyExchange('SES-O-USAGE');
});

test('responses, non-streaming and streaming (response.created first, response.completed last)', async () => {
  const response = await client('SES-R-JSON').responses.create({ model: 'gpt-4.1-mini', input: 'Hello' });
  assert.equal(response.output_text, 'Hello from upstream');
  assert.equal(onlyExchange('SES-R-JSON').surface, 'openai.responses');

  const stream = await client('SES-R-STREAM').responses.create({ model: 'gpt-4.1-mini', input: 'Hello', stream: true });
  const types: string[] = [];
  for await (const event of stream) types.push(event.type);
  assert.equal(types[0], 'response.created');
  assert.equal(types.at(-1), 'response.completed');
  const meta = onlyExchange('SES-R-STREAM');
  assert.deepEqual(JSON.parse(String(meta.response)), [{ type: 'text', text: 'Hello from upstream' }]);
});

test('models and refusals in the OpenAI shape', async () => {
  const models = await client('SES-O-MODELS').models.list();
  assert.equal(models.data[0]?.id, 'gpt-4.1-mini');
  const listed = ledgerEntries(served.root).filter(
    (e) => e.event_type === 'EXCHANGE' && e.metadata.surface === 'openai.models',
  );
  assert.equal(listed.length, 1, 'the models call is one EXCHANGE');
  assert.match(String(listed[0]?.metadata.response), /gpt-4\.1-mini/);
  const before = served.upstream.requests.length;
  await assert.rejects(
    client('SES-O-BAD', 'sk-wrong').chat.completions.create({
      model: 'gpt-4.1-mini',
      messages: [{ role: 'user', content: 'Hello' }],
    }),
    (e: unknown) =>
      e instanceof OpenAI.AuthenticationError &&
      e.code === 'invalid_api_key' &&
      e.headers?.get('x-request-id') !== null,
  );
  await assert.rejects(
    client('SES-O-SCOPE', issueKey('AGENT-OAI', ['route:anthropic.messages'])).responses.create({
      model: 'gpt-4.1-mini',
      input: 'Hello',
    }),
    (e: unknown) => e instanceof OpenAI.PermissionDeniedError,
  );
  assert.equal(served.upstream.requests.length, before);
  const rejected = ledgerEntries(served.root).filter(
    (e) => e.event_type === 'PROMPT_REJECTED' && String(e.metadata.session_id).startsWith('SES-O-'),
  );
  assert.equal(rejected.length, 2, 'each refusal sent once: the SDK honoured x-should-retry: false');
});

test("a key's budget scope spans sessions: its calls are charged to it, one over its limit is 429 naming it, sent once", async () => {
  const issued = cli(['token', 'issue', '--agent', 'AGENT-OAI', '--budget-scope', 'team-k', '--json'], {
    CPLANE_AUTH_SECRET: AUTH_SECRET,
  });
  assert.equal(issued.status, 0, issued.stderr);
  const teamKey = (JSON.parse(issued.stdout) as { token: string }).token;
  const ask = (session: string, apiKey: string) =>
    client(session, apiKey).chat.completions.create({
      model: 'gpt-4.1-mini',
      max_tokens: 5000,
      messages: [{ role: 'user', content: 'Hello' }],
    });
  // Each call reserves 5000 tokens and its bound, then settles the upstream's usage: two fit, the third does not.
  await ask('SES-K-1', teamKey);
  await ask('SES-K-2', teamKey);
  const upstreamBefore = served.upstream.requests.length;
  await assert.rejects(ask('SES-K-3', teamKey), (e: unknown) => {
    assert.ok(e instanceof OpenAI.RateLimitError, String(e));
    assert.match(e.message, /BUDGET_EXHAUSTED/);
    assert.match(e.message, new RegExp(`key team-k max_tokens ${KEY_LIMIT}`));
    return true;
  });
  assert.equal(served.upstream.requests.length, upstreamBefore, 'refused once, nothing upstream');
  const refused = ledgerEntries(served.root).filter(
    (e) => e.event_type === 'PROMPT_REJECTED' && e.metadata.session_id === 'SES-K-3',
  );
  assert.equal(refused.length, 1, 'the SDK did not retry the refusal');
  // The same session with a key of no budget scope is not charged to team-k.
  await ask('SES-K-3', key);
  const status = cli(['budget', 'status', '--root', served.root, '--json']);
  assert.equal(status.status, 0, status.stderr);
  const scopes = (JSON.parse(status.stdout) as { scopes: Array<Record<string, unknown>> }).scopes;
  const team = scopes.find((s) => s.scope === 'key' && s.scope_id === 'team-k');
  assert.ok(team, status.stdout);
  assert.ok((team.settled_tokens as number) > 0 && (team.requests as number) === 2, JSON.stringify(team));
});
