// Which Bedrock operation a call goes to (InvokeModel for Claude, Converse for the rest, or as `api` says), and
// CountTokens (`POST /model/{modelId}/count-tokens`, API_runtime_CountTokens) against a local fake: the input as the
// InvokeModel body or the Converse request it would be sent as, `{"inputTokens"}` in reply.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isProviderError } from '#providers/errors.js';
import { readText } from '#providers/http.js';
import { BedrockProvider } from '../../providers/bedrock/provider.js';
import { fixedClock } from '#tests/providers/fixtures/clock.js';
import { ScriptedServer, type ReceivedRequest } from '#tests/providers/fixtures/server.js';
import { converseWhole } from './converse-fake.js';

const ENV = {
  AWS_ACCESS_KEY_ID: 'AKIAIOSFODNN7EXAMPLE',
  AWS_SECRET_ACCESS_KEY: 'count-secret',
  AWS_REGION: 'us-east-1',
};
const LLAMA = 'meta.llama3-3-70b-instruct-v1:0';

const make = (baseUrl: string, options: Record<string, unknown>) =>
  new BedrockProvider({ config: { base_url: baseUrl, options }, env: ENV, clock: fixedClock(), readFile: () => null });

test('count-tokens: /model/{id}/count-tokens with the InvokeModel body (Claude) or the Converse request, answered as Anthropic', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  const claude = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
  const provider = make(server.url, { models: { claude, llama: LLAMA } });
  const messages = [{ role: 'user', content: 'How many tokens is this?' }];
  const count = async (model: string, inputTokens: number) => {
    server.push({ status: 200, headers: { 'x-amzn-requestid': `req-count-${model}` }, body: { inputTokens } });
    const body = { model, system: 'Be brief.', messages };
    const response = await provider.call({ surface: 'anthropic.count_tokens', body, headers: {} }, { timeoutMs: 5000 });
    assert.equal(response.requestId, `req-count-${model}`);
    return JSON.parse(await readText(response.body, Number.POSITIVE_INFINITY));
  };
  assert.deepEqual(await count('claude', 19), { input_tokens: 19 });
  const invoke = server.received[0] as ReceivedRequest;
  assert.equal(invoke.url, `/model/${encodeURIComponent(claude)}/count-tokens`);
  const inner = (invoke.json as { input: { invokeModel: { body: string } } }).input.invokeModel.body;
  assert.deepEqual(JSON.parse(inner), {
    anthropic_version: 'bedrock-2023-05-31',
    system: 'Be brief.',
    messages,
    max_tokens: 1,
  });
  assert.deepEqual(await count('llama', 23), { input_tokens: 23 });
  assert.equal(server.received[1]?.url, `/model/${encodeURIComponent(LLAMA)}/count-tokens`);
  assert.deepEqual(server.received[1]?.json, {
    input: {
      converse: {
        messages: [{ role: 'user', content: [{ text: 'How many tokens is this?' }] }],
        system: [{ text: 'Be brief.' }],
      },
    },
  });
  server.push({ status: 200, body: { tokens: 5 } });
  const bad = await provider.call(
    { surface: 'anthropic.count_tokens', body: { model: 'llama', messages }, headers: {} },
    { timeoutMs: 5000 },
  );
  await assert.rejects(
    readText(bad.body, Number.POSITIVE_INFINITY),
    (e: unknown) => isProviderError(e) && e.kind === 'malformed_response',
  );
});

test('bedrock: Claude ids stay on InvokeModel; `api` sends every model one way', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  const claude = 'global.anthropic.claude-sonnet-4-5-20250929-v1:0';
  const body = { model: 'claude', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] };
  const reply = converseWhole('r', [{ text: 'ok' }], 'end_turn', { inputTokens: 1, outputTokens: 1 });
  for (const [api, path] of [
    ['auto', 'invoke'],
    ['converse', 'converse'],
  ] as const) {
    server.push(api === 'auto' ? { status: 200, body: { content: [] } } : reply);
    const provider = make(server.url, { api, models: { claude } });
    const response = await provider.call({ surface: 'anthropic.messages', body, headers: {} }, { timeoutMs: 5000 });
    await readText(response.body, Number.POSITIVE_INFINITY);
    assert.equal(server.received.at(-1)?.url, `/model/${encodeURIComponent(claude)}/${path}`);
  }
  assert.throws(() => make(server.url, { api: 'sometimes' }), /api must be one of/);
});
