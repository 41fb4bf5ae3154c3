import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isCpError } from '#kernel/errors.js';
import { isProviderError, type ProviderError } from '#providers/errors.js';
import { OpenAiProvider } from '../../providers/openai/provider.js';
import type { ProviderRequest } from '#providers/spec.js';
import { providerContract } from '#tests/providers/contract.js';
import { fixedClock } from '#tests/providers/fixtures/clock.js';
import { httpHarness, retryAfterHeader } from '#tests/providers/fixtures/http-harness.js';
import { ScriptedServer, type ScriptedReply } from '#tests/providers/fixtures/server.js';
import { openaiWire } from '#tests/providers/fixtures/wire.js';
import { surfaceReply } from '#tests/providers/fixtures/streams.js';
import { wireContract } from '#tests/providers/wire-contract.js';
import { wireExtras } from '#tests/providers/fixtures/wire-extras.js';

const KEY = 'sk-proj-TEST-KEY-must-never-leak-abcdef0123456789';

providerContract(
  httpHarness({
    name: 'OpenAiProvider (Chat Completions on 127.0.0.1)',
    secret: KEY,
    reportsCacheWrite: false,
    makeProvider: (baseUrl, clock) =>
      new OpenAiProvider({ config: { base_url: baseUrl, api_key: KEY }, env: {}, clock }),
    toReply(s): ScriptedReply {
      if (s.type === 'malformed')
        return { status: 200, body: { id: 'chatcmpl-1', object: 'chat.completion', choices: [] } };
      if (s.type === 'answer') {
        return {
          status: 200,
          headers: { 'x-request-id': s.request_id },
          body: openaiWire.completion({
            text: s.text,
            model: s.model,
            finish_reason: openaiWire.finishReason[s.stop] ?? 'stop',
            usage: s.usage,
          }),
        };
      }
      const body =
        s.kind === 'spend_limit'
          ? openaiWire.spendLimit()
          : openaiWire.error(`scripted ${s.kind}`, openaiWire.errorType[s.kind] ?? 'server_error', null);
      return { status: s.status, headers: { 'x-request-id': s.request_id, ...retryAfterHeader(s) }, body };
    },
  }),
);

const OK: ScriptedReply = {
  status: 200,
  body: openaiWire.completion({
    text: 'hi',
    model: 'gpt-test',
    finish_reason: 'stop',
    usage: { input_tokens: 10, output_tokens: 2, cache_read_tokens: 0, cache_write_tokens: 0 },
  }),
};
const SIMPLE = { model: 'gpt-test', max_tokens: 16, prompt: 'hi' };

async function rig(
  t: { after: (fn: () => Promise<void>) => void },
  config: { base_suffix?: string; api_key?: string | null } = {},
): Promise<{ server: ScriptedServer; provider: OpenAiProvider }> {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  const cfg: Record<string, string> = { base_url: `${server.url}${config.base_suffix ?? ''}` };
  if (config.api_key !== null) cfg.api_key = config.api_key ?? KEY;
  return { server, provider: new OpenAiProvider({ config: cfg, env: {}, clock: fixedClock() }) };
}

async function failure(provider: OpenAiProvider, request: ProviderRequest = SIMPLE): Promise<ProviderError> {
  const error = await provider.send(request, { timeoutMs: 5000 }).catch((e: unknown) => e);
  assert.ok(isProviderError(error), `expected a ProviderError, got ${String(error)}`);
  return error;
}

test('openai: a simple request is a Chat Completions call with a Bearer key, a system message and stop', async (t) => {
  const { server, provider } = await rig(t);
  server.push(OK);
  await provider.send(
    {
      model: 'gpt-test',
      max_tokens: 64,
      prompt: 'What is 6 x 7?',
      temperature: 0.5,
      stop_sequences: ['###'],
      system: [{ text: 'rule one', cache: true }, { text: 'rule two' }],
    },
    { timeoutMs: 5000 },
  );
  const [req] = server.received;
  assert.equal(req?.method, 'POST');
  assert.equal(req?.url, '/v1/chat/completions');
  assert.equal(req?.headers.authorization, `Bearer ${KEY}`);
  assert.deepEqual(req?.json, {
    model: 'gpt-test',
    max_tokens: 64,
    messages: [
      { role: 'system', content: 'rule one\n\nrule two' },
      { role: 'user', content: 'What is 6 x 7?' },
    ],
    temperature: 0.5,
    stop: ['###'],
  });
});

test('openai: a base URL that already ends in /v1 is not doubled; no key means no Authorization header', async (t) => {
  const { server, provider } = await rig(t, { base_suffix: '/v1/', api_key: null });
  server.push(OK);
  await provider.send(SIMPLE, { timeoutMs: 5000 });
  assert.equal(server.received[0]?.url, '/v1/chat/completions');
  assert.equal(server.received[0]?.headers.authorization, undefined);
});

test('openai: a prefix path before /v1 is kept (compatible servers mounted under a path)', async (t) => {
  const { server, provider } = await rig(t, { base_suffix: '/proxy/openai' });
  server.push(OK);
  await provider.send(SIMPLE, { timeoutMs: 5000 });
  assert.equal(server.received[0]?.url, '/proxy/openai/v1/chat/completions');
});

test('openai: a pre-rendered body with max_completion_tokens is sent as is', async (t) => {
  const { server, provider } = await rig(t);
  server.push(OK);
  const body = {
    model: 'gpt-test',
    max_completion_tokens: 20,
    messages: [{ role: 'user', content: 'x' }],
    stream_options: { include_usage: true },
    seed: 7,
  };
  await provider.send({ body }, { timeoutMs: 5000 });
  assert.deepEqual(server.received[0]?.json, body);
  const error = await failure(provider, {
    body: { model: 'gpt-test', messages: [{ role: 'user', content: 'x' }], stream: true, max_tokens: 5 },
  });
  assert.equal(error.kind, 'invalid_request');
  assert.match(error.message, /stream must not be true/);
  assert.equal(server.received.length, 1);
});

test('openai: insufficient_quota is spend_limit; rate_limit_exceeded is rate_limited with retry-after-ms; 503 overloaded', async (t) => {
  const { server, provider } = await rig(t);
  const cases: [ScriptedReply, string, string | null, number | null][] = [
    [{ status: 429, body: openaiWire.spendLimit() }, 'spend_limit', 'insufficient_quota', null],
    [
      {
        status: 429,
        headers: { 'retry-after-ms': '1250', 'retry-after': '2' },
        body: openaiWire.error(
          'Rate limit reached for gpt-test on tokens per min (TPM)',
          'tokens',
          'rate_limit_exceeded',
        ),
      },
      'rate_limited',
      'rate_limit_exceeded',
      1250,
    ],
    [
      {
        status: 503,
        body: openaiWire.error('The engine is currently overloaded, please try again later', 'server_error', null),
      },
      'overloaded',
      'server_error',
      null,
    ],
    [
      {
        status: 404,
        body: openaiWire.error('The model `gpt-x` does not exist', 'invalid_request_error', 'model_not_found'),
      },
      'invalid_request',
      'model_not_found',
      null,
    ],
    [{ status: 408, body: '' }, 'timeout', null, null],
  ];
  for (const [reply, kind, type, retryAfterMs] of cases) {
    server.push(reply);
    const error = await failure(provider);
    assert.equal(error.kind, kind, JSON.stringify(reply.body));
    assert.equal(error.provider_error_type, type);
    assert.equal(error.retry_after_ms, retryAfterMs);
    assert.equal(error.retryable, kind !== 'spend_limit' && kind !== 'invalid_request');
  }
});

test('openai: error bodies of other compatible servers still give their message', async (t) => {
  const { server, provider } = await rig(t);
  server.push({ status: 400, body: { error: 'model "llama-x" not found, try pulling it first' } });
  assert.match((await failure(provider)).message, /model \\"llama-x\\" not found/);
  server.push({ status: 422, body: { detail: 'max_tokens: must be >= 1' } });
  const error = await failure(provider);
  assert.equal(error.kind, 'invalid_request');
  assert.match(error.message, /HTTP 422: "max_tokens: must be >= 1"/);
});

test('openai: usage from servers without cache details leaves the cache read unknown; null content with tool calls is ""', async (t) => {
  const { server, provider } = await rig(t);
  server.push({
    status: 200,
    body: {
      choices: [
        { index: 0, message: { role: 'assistant', content: null, tool_calls: [] }, finish_reason: 'tool_calls' },
      ],
      usage: { prompt_tokens: 30, completion_tokens: 5, total_tokens: 35 },
    },
  });
  const result = await provider.send(SIMPLE, { timeoutMs: 5000 });
  assert.equal(result.content, '');
  assert.equal(result.stop_reason, 'tool_use');
  assert.equal(result.model, 'gpt-test', 'falls back to the requested model when the server names none');
  assert.deepEqual(
    [
      result.usage.input_tokens,
      result.usage.output_tokens,
      result.usage.cache_read_tokens,
      result.usage.cache_write_tokens,
    ],
    [30, 5, null, 0],
  );
  server.push({ status: 200, body: { choices: [{ message: { content: 'x' }, finish_reason: 'length' }] } });
  const bare = await provider.send(SIMPLE, { timeoutMs: 5000 });
  assert.deepEqual(bare.usage, {
    input_tokens: null,
    output_tokens: null,
    cache_read_tokens: null,
    cache_write_tokens: null,
    raw: null,
  });
  assert.equal(bare.stop_reason, 'length');
});

test('openai: malformed 200 bodies are malformed_response', async (t) => {
  const { server, provider } = await rig(t);
  for (const body of [
    'not json',
    { choices: [{}] },
    { choices: [{ message: { content: 5 } }] },
    { choices: 'x' },
    null,
  ]) {
    server.push({ status: 200, body: body === null ? 'null' : body });
    assert.equal((await failure(provider)).kind, 'malformed_response', JSON.stringify(body));
  }
});

test('openai: base URL and key come from config, else OPENAI_BASE_URL / OPENAI_API_KEY; bad config is ERR_PROVIDER_CONFIG', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  server.push(OK);
  const provider = new OpenAiProvider({ env: { OPENAI_BASE_URL: `${server.url}/v1`, OPENAI_API_KEY: 'env-key-789' } });
  await provider.send(SIMPLE, { timeoutMs: 5000 });
  assert.equal(server.received[0]?.url, '/v1/chat/completions');
  assert.equal(server.received[0]?.headers.authorization, 'Bearer env-key-789');
  assert.equal(new OpenAiProvider({ env: {} }).baseUrl, 'https://api.openai.com');
  assert.throws(
    () => new OpenAiProvider({ config: { base_url: 'localhost:8080' }, env: {} }),
    (e: unknown) => isCpError(e) && e.code === 'ERR_PROVIDER_CONFIG' && /OPENAI_BASE_URL/.test(e.hint),
  );
});

wireContract({
  name: 'OpenAiProvider (Chat Completions and Responses on 127.0.0.1)',
  secret: KEY,
  neutralSurface: 'openai.chat',
  generation: ['openai.chat', 'openai.responses'],
  async open(clock) {
    const server = await ScriptedServer.start();
    return {
      provider: new OpenAiProvider({ config: { base_url: server.url, api_key: KEY }, env: {}, clock }),
      answer: (surface, answer, stream) => server.push(surfaceReply(surface, answer, stream, 'x-request-id')),
      rateLimited: (requestId, seconds) =>
        server.push({
          status: 429,
          headers: { 'x-request-id': requestId, 'retry-after': String(seconds) },
          body: openaiWire.error('Rate limit reached for requests', 'requests', 'rate_limit_exceeded'),
        }),
      received: () => server.received.length,
      close: () => server.close(),
    };
  },
});

wireExtras({
  name: 'OpenAiProvider',
  surface: 'openai.chat',
  async open() {
    const server = await ScriptedServer.start();
    return {
      provider: new OpenAiProvider({ config: { base_url: server.url, api_key: KEY }, env: {}, clock: fixedClock() }),
      server,
      close: () => server.close(),
    };
  },
});
