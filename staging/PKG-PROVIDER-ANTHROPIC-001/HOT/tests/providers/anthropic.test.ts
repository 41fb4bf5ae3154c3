import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isCpError } from '#kernel/errors.js';
import { AnthropicProvider } from '../../providers/anthropic/provider.js';
import { isProviderError, type ProviderError } from '#providers/errors.js';
import { providerContract } from '#tests/providers/contract.js';
import { fixedClock } from '#tests/providers/fixtures/clock.js';
import { httpHarness, retryAfterHeader } from '#tests/providers/fixtures/http-harness.js';
import { ScriptedServer, type ScriptedReply } from '#tests/providers/fixtures/server.js';
import { anthropicWire } from '#tests/providers/fixtures/wire.js';
import { surfaceReply } from '#tests/providers/fixtures/streams.js';
import { wireContract } from '#tests/providers/wire-contract.js';
import { wireExtras } from '#tests/providers/fixtures/wire-extras.js';

const KEY = 'sk-ant-api03-TEST-KEY-must-never-leak-0123456789';

providerContract(
  httpHarness({
    name: 'AnthropicProvider (Messages API on 127.0.0.1)',
    secret: KEY,
    reportsCacheWrite: true,
    makeProvider: (baseUrl, clock) =>
      new AnthropicProvider({ config: { base_url: baseUrl, api_key: KEY }, env: {}, clock }),
    toReply(s): ScriptedReply {
      if (s.type === 'malformed') return { status: 200, body: '<html><body>502 Bad Gateway</body></html>' };
      if (s.type === 'answer') {
        return {
          status: 200,
          headers: { 'request-id': s.request_id },
          body: anthropicWire.message({
            text: s.text,
            model: s.model,
            stop_reason: anthropicWire.stopReason[s.stop] ?? 'end_turn',
            usage: s.usage,
          }),
        };
      }
      const body =
        s.kind === 'spend_limit'
          ? anthropicWire.spendLimit()
          : anthropicWire.error(anthropicWire.errorType[s.kind] ?? 'api_error', `scripted ${s.kind}`);
      return { status: s.status, headers: { 'request-id': s.request_id, ...retryAfterHeader(s) }, body };
    },
  }),
);

async function rig(
  t: { after: (fn: () => Promise<void>) => void },
  config: Record<string, unknown> = {},
): Promise<{ server: ScriptedServer; provider: AnthropicProvider }> {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  return {
    server,
    provider: new AnthropicProvider({
      config: { base_url: server.url, api_key: KEY, ...config },
      env: {},
      clock: fixedClock(),
    }),
  };
}

const OK: ScriptedReply = {
  status: 200,
  body: anthropicWire.message({
    text: 'hi',
    model: 'claude-test',
    stop_reason: 'end_turn',
    usage: { input_tokens: 10, output_tokens: 2, cache_read_tokens: 0, cache_write_tokens: 0 },
  }),
};

async function failure(
  provider: AnthropicProvider,
  request = { model: 'claude-test', max_tokens: 16, prompt: 'hi' },
): Promise<ProviderError> {
  const error = await provider.send(request, { timeoutMs: 5000 }).catch((e: unknown) => e);
  assert.ok(isProviderError(error), `expected a ProviderError, got ${String(error)}`);
  return error;
}

test('anthropic: a simple request goes on the wire as a Messages API call with system blocks and cache_control', async (t) => {
  const { server, provider } = await rig(t);
  server.push(OK);
  await provider.send(
    {
      model: 'claude-test',
      max_tokens: 64,
      prompt: 'What is 6 x 7?',
      temperature: 0,
      stop_sequences: ['###'],
      system: [{ text: 'stable rules', cache: true }, { text: 'volatile context' }],
    },
    { timeoutMs: 5000 },
  );
  const [req] = server.received;
  assert.equal(req?.method, 'POST');
  assert.equal(req?.url, '/v1/messages');
  assert.equal(req?.headers['x-api-key'], KEY);
  assert.equal(req?.headers['anthropic-version'], '2023-06-01');
  assert.match(String(req?.headers['content-type']), /^application\/json/);
  assert.deepEqual(req?.json, {
    model: 'claude-test',
    max_tokens: 64,
    system: [
      { type: 'text', text: 'stable rules', cache_control: { type: 'ephemeral' } },
      { type: 'text', text: 'volatile context' },
    ],
    messages: [{ role: 'user', content: 'What is 6 x 7?' }],
    temperature: 0,
    stop_sequences: ['###'],
  });
});

test('anthropic: a pre-rendered body is sent exactly as given; one without max_tokens is refused unsent', async (t) => {
  const { server, provider } = await rig(t);
  server.push(OK);
  const body = {
    model: 'claude-test',
    max_tokens: 32,
    system: [{ type: 'text', text: 'L0', cache_control: { type: 'ephemeral' } }],
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'L1 block', cache_control: { type: 'ephemeral' } },
          { type: 'text', text: 'question' },
        ],
      },
    ],
    metadata: { user_id: 'agent-7' },
  };
  await provider.send({ body }, { timeoutMs: 5000 });
  assert.deepEqual(server.received[0]?.json, body);
  const { max_tokens: _dropped, ...withoutMax } = body;
  const error = await failure(provider, { body: withoutMax } as never);
  assert.equal(error.kind, 'invalid_request');
  assert.match(error.message, /body\.max_tokens must be a positive integer/);
  assert.equal(server.received.length, 1);
});

test('anthropic: spend caps in their real shapes are spend_limit (never retried); a plain 429 is rate_limited', async (t) => {
  const { server, provider } = await rig(t);
  const cases: [ScriptedReply, string, string | null][] = [
    [{ status: 429, body: anthropicWire.spendLimit() }, 'spend_limit', 'enforced_spend_limit_reached'],
    [
      {
        status: 400,
        body: anthropicWire.error(
          'invalid_request_error',
          'You have reached your specified API usage limits. You will regain access on 2026-04-01 at 00:00 UTC.',
        ),
      },
      'spend_limit',
      'invalid_request_error',
    ],
    [
      {
        status: 400,
        body: anthropicWire.error(
          'invalid_request_error',
          'Your credit balance is too low to access the Anthropic API.',
        ),
      },
      'spend_limit',
      'invalid_request_error',
    ],
    [{ status: 402, body: anthropicWire.error('billing_error', 'billing problem') }, 'spend_limit', 'billing_error'],
    [
      {
        status: 429,
        headers: { 'retry-after': '3' },
        body: anthropicWire.error(
          'rate_limit_error',
          'Number of request tokens has exceeded your per-minute rate limit',
        ),
      },
      'rate_limited',
      'rate_limit_error',
    ],
    [{ status: 503, body: anthropicWire.error('overloaded_error', 'Overloaded') }, 'overloaded', 'overloaded_error'],
    [
      {
        status: 413,
        body: anthropicWire.error('request_too_large', 'Request exceeds the maximum allowed number of bytes.'),
      },
      'invalid_request',
      'request_too_large',
    ],
    [{ status: 403, body: anthropicWire.error('permission_error', 'no access') }, 'auth', 'permission_error'],
    [{ status: 409, body: anthropicWire.error('conflict_error', 'conflict') }, 'server_error', 'conflict_error'],
    [{ status: 502, body: '<html>Bad Gateway</html>' }, 'server_error', null],
  ];
  for (const [reply, kind, type] of cases) {
    server.push(reply);
    const error = await failure(provider);
    assert.equal(error.kind, kind, JSON.stringify(reply.body));
    assert.equal(error.provider_error_type, type);
    assert.equal(error.retryable, !['spend_limit', 'invalid_request', 'auth'].includes(kind));
    if (kind === 'rate_limited') assert.equal(error.retry_after_ms, 3000);
  }
  assert.equal(server.received.length, cases.length);
});

test('anthropic: the request id comes from the request-id header, else the error body', async (t) => {
  const { server, provider } = await rig(t);
  server.push({ status: 500, body: anthropicWire.error('api_error', 'boom', { request_id: 'req_from_body' }) });
  assert.equal((await failure(provider)).request_id, 'req_from_body');
  server.push({ ...OK, headers: { 'request-id': 'req_from_header' } });
  assert.equal(
    (await provider.send({ model: 'claude-test', max_tokens: 5, prompt: 'x' }, { timeoutMs: 5000 })).request_id,
    'req_from_header',
  );
});

test('anthropic: malformed 200 bodies are malformed_response', async (t) => {
  const { server, provider } = await rig(t);
  for (const body of [
    '{"type":"message","content":',
    { type: 'message', role: 'assistant' },
    { type: 'error', error: { type: 'api_error' } },
    [1, 2],
    { content: [{ type: 'text', text: 7 }] },
    { content: ['x'] },
  ]) {
    server.push({ status: 200, body });
    const error = await failure(provider);
    assert.equal(error.kind, 'malformed_response', JSON.stringify(body));
    assert.equal(error.retryable, false);
  }
});

test('anthropic: usage without cache fields leaves cache buckets and total input unknown, not 0', async (t) => {
  const { server, provider } = await rig(t);
  server.push({
    status: 200,
    body: {
      type: 'message',
      model: 'claude-test',
      content: [
        { type: 'text', text: 'a' },
        { type: 'tool_use', id: 't', name: 'f', input: {} },
        { type: 'text', text: 'b' },
      ],
      stop_reason: 'refusal',
      usage: { input_tokens: 9, output_tokens: 4 },
    },
  });
  const result = await provider.send({ model: 'claude-test', max_tokens: 5, prompt: 'x' }, { timeoutMs: 5000 });
  assert.equal(result.content, 'ab');
  assert.equal(result.stop_reason, 'content_filter');
  assert.equal(result.raw_stop_reason, 'refusal');
  assert.deepEqual(
    [
      result.usage.input_tokens,
      result.usage.output_tokens,
      result.usage.cache_read_tokens,
      result.usage.cache_write_tokens,
    ],
    [null, 4, null, null],
  );
  assert.deepEqual(result.usage.raw, { input_tokens: 9, output_tokens: 4 });
});

test('anthropic: a key echoed back by the server is redacted from the error', async (t) => {
  const { server, provider } = await rig(t);
  server.push({ status: 401, body: anthropicWire.error('authentication_error', `invalid x-api-key: ${KEY}`) });
  const error = await failure(provider);
  assert.equal(error.kind, 'auth');
  assert.ok(!JSON.stringify(error).includes(KEY) && !error.message.includes(KEY));
  assert.match(error.message, /\[REDACTED\]/);
});

test('anthropic: a redirect is refused, so the key is never replayed to another host', async (t) => {
  const { server, provider } = await rig(t);
  const elsewhere = await ScriptedServer.start();
  t.after(() => elsewhere.close());
  server.push({ status: 307, headers: { location: `${elsewhere.url}/v1/messages` }, body: '' });
  const error = await failure(provider);
  assert.equal(error.kind, 'network');
  assert.equal(elsewhere.received.length, 0);
});

test('anthropic: base URL and key come from config, else ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  server.push(OK, OK);
  const fromEnv = new AnthropicProvider({
    env: { ANTHROPIC_BASE_URL: `${server.url}/`, ANTHROPIC_API_KEY: 'env-key-123' },
  });
  assert.equal(fromEnv.baseUrl, server.url);
  await fromEnv.send({ model: 'm', max_tokens: 1, prompt: 'x' }, { timeoutMs: 5000 });
  assert.equal(server.received[0]?.headers['x-api-key'], 'env-key-123');
  const fromConfig = new AnthropicProvider({
    config: { base_url: server.url, api_key: 'config-key-456' },
    env: { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9', ANTHROPIC_API_KEY: 'env-key-123' },
  });
  await fromConfig.send({ model: 'm', max_tokens: 1, prompt: 'x' }, { timeoutMs: 5000 });
  assert.equal(server.received[1]?.headers['x-api-key'], 'config-key-456');
  assert.equal(new AnthropicProvider({ env: { ANTHROPIC_API_KEY: 'k-123' } }).baseUrl, 'https://api.anthropic.com');
});

test('a base URL holding credentials is refused with its own code and never shown; the same URL without them is accepted', () => {
  const cases: [unknown, Record<string, string>][] = [
    [{ base_url: 'https://user:secret-999@api.example.com', api_key: 'k-1234' }, {}],
    [{ base_url: 'https://secret-999@api.example.com/v1' }, { ANTHROPIC_API_KEY: 'k-1234' }],
    [undefined, { ANTHROPIC_BASE_URL: 'http://:secret-999@127.0.0.1:8080', ANTHROPIC_API_KEY: 'k-1234' }],
  ];
  for (const [config, env] of cases) {
    assert.throws(
      () => new AnthropicProvider({ config, env }),
      (e: unknown) => {
        assert.ok(isCpError(e));
        assert.equal(e.code, 'ERR_PROVIDER_BASE_URL_CREDENTIALS');
        assert.match(e.message, /holds credentials/);
        assert.ok(!JSON.stringify(e).includes('secret-999'), 'the credentials are not echoed');
        return true;
      },
    );
  }
  assert.equal(
    new AnthropicProvider({ config: { base_url: 'https://api.example.com', api_key: 'k-1234' }, env: {} }).baseUrl,
    'https://api.example.com',
  );
});

test('anthropic: missing key, bad base URL or unknown config fields are ERR_PROVIDER_CONFIG', () => {
  const cases: [unknown, Record<string, string>, RegExp][] = [
    [undefined, {}, /no API key: neither config api_key nor \$ANTHROPIC_API_KEY is set/],
    [{ base_url: 'ftp://x' }, { ANTHROPIC_API_KEY: 'secret-999' }, /base URL "ftp:\/\/x" is not an http\(s\) URL/],
    [
      { base_url: 'http://u:pw@h/?key=secret-999' },
      { ANTHROPIC_API_KEY: 'k-1234' },
      /base URL "http:\/\/h\/\?…" is not an http\(s\) URL without query/,
    ],
    [{ api_key: 'secret-999', model: 'x' }, {}, /unknown field\(s\) \["model"\]/],
    [{ api_key: 42 }, {}, /api_key must be a string/],
    ['nope', {}, /expected an object/],
    [{ api_key: 'secret-999\nX-Evil: 1' }, {}, /API key contains spaces, control or non-ASCII characters/],
    [undefined, { ANTHROPIC_API_KEY: 'secret-999 ' + 'é' }, /API key contains spaces/],
  ];
  for (const [config, env, message] of cases) {
    assert.throws(
      () => new AnthropicProvider({ config, env }),
      (e: unknown) => {
        assert.ok(isCpError(e));
        assert.equal(e.code, 'ERR_PROVIDER_CONFIG');
        assert.match(e.message, message);
        assert.ok(!JSON.stringify(e).includes('secret-999'));
        return true;
      },
    );
  }
});

wireContract({
  name: 'AnthropicProvider (Messages API on 127.0.0.1)',
  secret: KEY,
  neutralSurface: 'anthropic.messages',
  generation: ['anthropic.messages'],
  async open(clock) {
    const server = await ScriptedServer.start();
    return {
      provider: new AnthropicProvider({ config: { base_url: server.url, api_key: KEY }, env: {}, clock }),
      answer: (surface, answer, stream) => server.push(surfaceReply(surface, answer, stream, 'request-id')),
      rateLimited: (requestId, seconds) =>
        server.push({
          status: 429,
          headers: { 'request-id': requestId, 'retry-after': String(seconds) },
          body: anthropicWire.error('rate_limit_error', 'Number of request tokens has exceeded your rate limit'),
        }),
      received: () => server.received.length,
      close: () => server.close(),
    };
  },
});

wireExtras({
  name: 'AnthropicProvider',
  surface: 'anthropic.messages',
  async open() {
    const server = await ScriptedServer.start();
    return {
      provider: new AnthropicProvider({ config: { base_url: server.url, api_key: KEY }, env: {}, clock: fixedClock() }),
      server,
      close: () => server.close(),
    };
  },
});
