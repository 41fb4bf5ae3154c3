import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Hash } from '@smithy/core/serde';
import { SignatureV4 } from '@smithy/signature-v4';
import { isCpError } from '#kernel/errors.js';
import { isProviderError } from '#providers/errors.js';
import { SseParser } from '#providers/wire/sse.js';
import { eventStreamReply } from '../../providers/bedrock/eventstream.js';
import pkg, { BedrockProvider } from '../../providers/bedrock/provider.js';
import { fixedClock } from '#tests/providers/fixtures/clock.js';
import { ScriptedServer, type ReceivedRequest } from '#tests/providers/fixtures/server.js';
import { surfaceReply } from '#tests/providers/fixtures/streams.js';
import { wireContract } from '#tests/providers/wire-contract.js';
import { wireExtras } from '#tests/providers/fixtures/wire-extras.js';
import { bedrockError, bedrockFrame, chunkFrame, exceptionFrame, sseEvents, streamReply } from './bedrock-fake.js';

const ACCESS = 'AKIAIOSFODNN7EXAMPLE';
const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY-must-never-leak';
const TOKEN = 'IQoJb3JpZ2luX2VjEXAMPLE-session-token-must-never-leak';
const ENV = {
  AWS_ACCESS_KEY_ID: ACCESS,
  AWS_SECRET_ACCESS_KEY: SECRET,
  AWS_SESSION_TOKEN: TOKEN,
  AWS_REGION: 'us-west-2',
};
const NO_FILES = () => null;
const MODEL = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';

const make = (baseUrl: string, clock = fixedClock(), env: Record<string, string> = ENV) =>
  new BedrockProvider({
    config: { base_url: baseUrl, options: { models: { 'claude-sonnet-4-5': MODEL, 'model-under-test': MODEL } } },
    env,
    clock,
    readFile: NO_FILES,
  });

wireContract({
  name: 'BedrockProvider (InvokeModel, Anthropic Messages, on 127.0.0.1)',
  secret: SECRET,
  neutralSurface: 'anthropic.messages',
  generation: ['anthropic.messages'],
  async open(clock) {
    const server = await ScriptedServer.start();
    return {
      provider: make(server.url, clock),
      answer(surface, answer, stream) {
        const sse = surfaceReply(surface, answer, stream, 'x-amzn-requestid');
        if (!stream) return server.push(sse);
        server.push(streamReply(answer.request_id, sseEvents(sse.body as string).map(chunkFrame)));
      },
      rateLimited: (requestId, seconds) =>
        server.push({
          ...bedrockError(429, 'ThrottlingException', 'Too many requests, please wait before trying again.', requestId),
          headers: {
            ...bedrockError(429, 'ThrottlingException', '', requestId).headers,
            'retry-after': String(seconds),
          },
        }),
      received: () => server.received.length,
      close: () => server.close(),
    };
  },
});

wireExtras({
  name: 'BedrockProvider',
  surface: 'anthropic.messages',
  async open() {
    const server = await ScriptedServer.start();
    return { provider: make(server.url), server, close: () => server.close() };
  },
  frame: bedrockFrame,
});

/** The signature a server holding the secret computes over what it received (the same canonicalisation AWS does). */
async function expectedAuthorization(req: ReceivedRequest, at: Date): Promise<string> {
  const url = new URL(req.url, 'http://x');
  const signed = /SignedHeaders=([^,]+)/.exec(String(req.headers.authorization))?.[1]?.split(';') ?? [];
  const headers: Record<string, string> = {};
  for (const name of signed) headers[name] = String(req.headers[name]);
  const signer = new SignatureV4({
    credentials: { accessKeyId: ACCESS, secretAccessKey: SECRET, sessionToken: TOKEN },
    region: 'us-west-2',
    service: 'bedrock',
    sha256: Hash.bind(null, 'sha256'),
    applyChecksum: false,
  });
  const again = await signer.sign(
    {
      method: req.method,
      protocol: 'http:',
      hostname: '127.0.0.1',
      path: url.pathname,
      query: {},
      headers,
      body: req.body,
    },
    { signingDate: at },
  );
  return again.headers.authorization as string;
}

test('bedrock: InvokeModel gets the model in the URL, the body without model/stream and with anthropic_version, signed', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  const clock = fixedClock(Date.parse('2026-11-28T21:00:00Z'));
  server.push(
    surfaceReply(
      'anthropic.messages',
      {
        text: 'hi',
        model: 'claude-sonnet-4-5-20250929',
        stop: 'stop',
        usage: { input_tokens: 12, output_tokens: 3, cache_read_tokens: 0, cache_write_tokens: 0 },
        request_id: 'b1f6c2a4-0000-4b7e-9c1d-000000000001',
      },
      false,
      'x-amzn-requestid',
    ),
  );
  const provider = make(server.url, clock);
  const body = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] };
  const response = await provider.call(
    { surface: 'anthropic.messages', body, headers: { 'anthropic-beta': 'context-1m-2025-08-07' } },
    { timeoutMs: 5000 },
  );
  assert.equal(response.requestId, 'b1f6c2a4-0000-4b7e-9c1d-000000000001');
  const [req] = server.received;
  assert.equal(req?.url, '/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke');
  assert.deepEqual(req?.json, {
    anthropic_version: 'bedrock-2023-05-31',
    max_tokens: 64,
    messages: [{ role: 'user', content: 'hi' }],
    anthropic_beta: ['context-1m-2025-08-07'],
  });
  assert.equal(req?.headers['x-amz-date'], '20261128T210000Z');
  assert.equal(req?.headers['x-amz-security-token'], TOKEN);
  assert.match(
    String(req?.headers.authorization),
    /^AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE\/20261128\/us-west-2\/bedrock\/aws4_request, SignedHeaders=accept;content-type;host;x-amz-date;x-amz-security-token, Signature=[0-9a-f]{64}$/,
  );
  assert.equal(req?.headers.authorization, await expectedAuthorization(req as ReceivedRequest, new Date(clock.now())));
  assert.equal(req?.headers['x-api-key'], undefined);
});

test('bedrock: the stream is InvokeModelWithResponseStream; an exception message mid-stream is the stream’s error event', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  const start = {
    type: 'message_start',
    message: {
      id: 'msg_bdrk_01',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5-20250929',
      content: [],
      stop_reason: null,
      usage: { input_tokens: 20, output_tokens: 1 },
    },
  };
  server.push(
    streamReply('req-stream-err', [
      chunkFrame(start),
      exceptionFrame('modelStreamErrorException', 'The model stream had an error.'),
    ]),
  );
  const provider = make(server.url);
  const response = await provider.call(
    {
      surface: 'anthropic.messages',
      body: { model: 'claude-sonnet-4-5', max_tokens: 8, stream: true, messages: [{ role: 'user', content: 'x' }] },
      headers: {},
    },
    { timeoutMs: 5000 },
  );
  assert.equal(
    server.received[0]?.url,
    '/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream',
  );
  assert.equal(server.received[0]?.headers.accept, 'application/vnd.amazon.eventstream');
  assert.equal((server.received[0]?.json as Record<string, unknown> | undefined)?.stream, undefined);
  assert.equal(
    (server.received[0]?.json as Record<string, unknown> | undefined)?.anthropic_version,
    'bedrock-2023-05-31',
  );
  assert.match(response.contentType, /^text\/event-stream/);
  const reader = provider.reader('anthropic.messages');
  const parser = new SseParser();
  const names: (string | null)[] = [];
  for await (const chunk of response.body)
    for (const f of parser.push(chunk)) {
      names.push(f.event);
      if (f.data !== null) reader.event(f.event, f.data);
    }
  assert.deepEqual(names, ['message_start', 'error']);
  const result = reader.result();
  assert.match(String(result.stream_error), /modelStreamErrorException/);
  assert.equal(result.complete, false);
});

test('bedrock: a message with a bad CRC is a ProviderError after success (charged as unknown), not text', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  const good = chunkFrame({ type: 'ping' });
  const bad = Buffer.from(
    chunkFrame({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'x' } }),
  );
  bad.writeUInt8((bad.readUInt8(bad.length - 6) ^ 0xff) & 0xff, bad.length - 6); // a payload byte flipped: the message CRC no longer matches
  server.push(streamReply('req-crc', [good, bad]));
  const provider = make(server.url);
  const response = await provider.call(
    { surface: 'anthropic.messages', body: { model: 'm', max_tokens: 8, stream: true, messages: [] }, headers: {} },
    { timeoutMs: 5000 },
  );
  const error = await (async () => {
    for await (const _ of response.body);
  })().then(
    () => assert.fail('read past a bad CRC'),
    (e: unknown) => e,
  );
  assert.ok(isProviderError(error));
  assert.equal(error.kind, 'malformed_response');
  assert.equal(error.after_success, true);
  assert.equal(error.retryable, false);
  assert.equal(error.request_id, 'req-crc');
  assert.match(error.message, /checksum|crc/i);
});

test('bedrock: messages split at any byte (one byte at a time, a 1 MiB message in 1 KiB pieces) read as whole events', async () => {
  const big = 'x'.repeat(1 << 20);
  const events = [
    { type: 'ping' },
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: big } },
    { type: 'message_stop' },
  ];
  const wire = Buffer.concat(events.map((e) => chunkFrame(e)));
  const read = async (size: (i: number) => number): Promise<string> => {
    async function* drip(): AsyncGenerator<Uint8Array> {
      const first = wire.subarray(0, 300);
      for (let at = 0; at < first.length; at += 1) yield first.subarray(at, at + 1);
      for (let at = 300, i = 0; at < wire.length; i += 1) {
        const n = size(i);
        yield wire.subarray(at, at + n);
        at += n;
      }
    }
    const reply = eventStreamReply('bedrock', {
      status: 200,
      contentType: 'application/vnd.amazon.eventstream',
      requestId: 'req-drip',
      body: drip(),
      cancel: () => undefined,
    });
    const out: Buffer[] = [];
    for await (const bytes of reply.body) out.push(Buffer.from(bytes));
    return Buffer.concat(out).toString('utf8');
  };
  const expected = events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join('');
  assert.equal(await read(() => 1024), expected);
  assert.equal(await read((i) => 1 + (i % 13) * 977), expected);
  const truncated = eventStreamReply('bedrock', {
    status: 200,
    contentType: 'application/vnd.amazon.eventstream',
    requestId: 'req-cut',
    body: (async function* () {
      yield wire.subarray(0, wire.length - 10);
    })(),
    cancel: () => undefined,
  });
  await assert.rejects(
    (async () => {
      for await (const _ of truncated.body);
    })(),
    (e: unknown) => isProviderError(e) && /ended inside a message \(\d+ bytes left\)/.test(e.message),
  );
});

test('bedrock: its exceptions map to the router’s kinds with x-amzn-requestid', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  const provider = make(server.url);
  const cases: [number, string, string][] = [
    [429, 'ThrottlingException', 'rate_limited'],
    [429, 'ModelNotReadyException', 'overloaded'],
    [503, 'ServiceUnavailableException', 'overloaded'],
    [500, 'InternalServerException', 'server_error'],
    [424, 'ModelErrorException', 'invalid_request'],
    [408, 'ModelTimeoutException', 'timeout'],
    [403, 'AccessDeniedException', 'auth'],
    [403, 'UnrecognizedClientException', 'auth'],
    [400, 'ValidationException', 'invalid_request'],
    [400, 'ServiceQuotaExceededException', 'rate_limited'],
  ];
  for (const [status, type, kind] of cases) {
    server.push(bedrockError(status, type, `scripted ${type}`, `req-${type}`));
    const error = await provider
      .send({ model: 'claude-sonnet-4-5', max_tokens: 8, prompt: 'x' }, { timeoutMs: 5000 })
      .catch((e: unknown) => e);
    assert.ok(isProviderError(error));
    assert.equal(error.kind, kind, type);
    assert.equal(error.provider_error_type, type);
    assert.equal(error.request_id, `req-${type}`);
    assert.ok(!JSON.stringify(error).includes(SECRET) && !error.message.includes(TOKEN));
  }
});

test('bedrock: credentials come from the profile file when the environment has none; the region from AWS_REGION or config', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  server.push(
    surfaceReply(
      'anthropic.messages',
      {
        text: 'x',
        model: 'm',
        stop: 'stop',
        usage: { input_tokens: 1, output_tokens: 1, cache_read_tokens: 0, cache_write_tokens: 0 },
        request_id: 'r',
      },
      false,
      'x-amzn-requestid',
    ),
  );
  const files: Record<string, string> = {
    '/home/op/.aws/credentials':
      '[default]\naws_access_key_id = AKIADEFAULTEXAMPLE\naws_secret_access_key = default-secret\n\n[work]\n# the team account\naws_access_key_id=AKIAWORKEXAMPLE\naws_secret_access_key=work-secret-must-not-leak\n',
    '/home/op/.aws/config': '[profile work]\nregion = eu-central-1\n',
  };
  const read = (path: string) => files[path] ?? null;
  const provider = new BedrockProvider({
    config: { base_url: server.url },
    env: { HOME: '/home/op', AWS_PROFILE: 'work' },
    readFile: read,
  });
  await provider.send(
    { model: 'anthropic.claude-haiku-4-5-20251001-v1:0', max_tokens: 4, prompt: 'x' },
    { timeoutMs: 5000 },
  );
  assert.match(
    String(server.received[0]?.headers.authorization),
    /Credential=AKIAWORKEXAMPLE\/\d{8}\/eu-central-1\/bedrock\/aws4_request/,
  );
  assert.equal(server.received[0]?.headers['x-amz-security-token'], undefined);
  assert.equal(
    new BedrockProvider({
      env: { HOME: '/home/op' },
      readFile: read,
      config: { options: { region: 'ap-northeast-1' } },
    }).baseUrl,
    'https://bedrock-runtime.ap-northeast-1.amazonaws.com',
  );
});

test('bedrock: no credentials, no region or bad options are ERR_PROVIDER_CONFIG naming where it looked, never a secret', () => {
  const cases: [unknown, Record<string, string>, RegExp][] = [
    [
      undefined,
      { AWS_REGION: 'us-east-1', HOME: '/h' },
      /no AWS credentials: .* profile "default" is not in "\/h\/.aws\/credentials" \(no such file\)/,
    ],
    [undefined, { AWS_ACCESS_KEY_ID: ACCESS, AWS_SECRET_ACCESS_KEY: SECRET, HOME: '/h' }, /no AWS region/],
    [{ options: { region: 'mars' } }, ENV, /region must be a name|invalid AWS region "mars"/],
    [{ options: { modelz: {} } }, ENV, /unknown field\(s\) \["modelz"\]/],
  ];
  for (const [config, env, message] of cases)
    assert.throws(
      () => new BedrockProvider({ config, env, readFile: NO_FILES }),
      (e: unknown) =>
        isCpError(e) &&
        e.code === 'ERR_PROVIDER_CONFIG' &&
        message.test(e.message) &&
        !JSON.stringify(e).includes(SECRET),
      String(message),
    );
  assert.equal(pkg.optIn, true);
  assert.deepEqual(pkg.serves, ['anthropic.messages', 'anthropic.count_tokens']);
});

test('bedrock: the cache buckets of a streamed reply are read from the Anthropic events the chunks carry', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  const usage = {
    input_tokens: 100,
    output_tokens: 1,
    cache_creation_input_tokens: 300,
    cache_read_input_tokens: 1200,
  };
  server.push(
    streamReply('req-cache', [
      chunkFrame({
        type: 'message_start',
        message: {
          id: 'msg_1',
          type: 'message',
          role: 'assistant',
          model: 'claude-sonnet-4-5-20250929',
          content: [],
          stop_reason: null,
          usage,
        },
      }),
      chunkFrame({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
      chunkFrame({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'ok' } }),
      chunkFrame({ type: 'content_block_stop', index: 0 }),
      chunkFrame({
        type: 'message_delta',
        delta: { stop_reason: 'end_turn', stop_sequence: null },
        usage: { output_tokens: 5 },
      }),
      chunkFrame({
        type: 'message_stop',
        'amazon-bedrock-invocationMetrics': {
          inputTokenCount: 100,
          outputTokenCount: 5,
          invocationLatency: 812,
          firstByteLatency: 401,
        },
      }),
    ]),
  );
  const provider = make(server.url);
  const response = await provider.call(
    { surface: 'anthropic.messages', body: { model: 'm', max_tokens: 8, stream: true, messages: [] }, headers: {} },
    { timeoutMs: 5000 },
  );
  const reader = provider.reader('anthropic.messages');
  const parser = new SseParser();
  for await (const chunk of response.body)
    for (const f of parser.push(chunk)) if (f.data !== null) reader.event(f.event, f.data);
  const result = reader.result();
  assert.deepEqual(
    [
      result.usage.input_tokens,
      result.usage.cache_read_tokens,
      result.usage.cache_write_tokens,
      result.usage.output_tokens,
      result.complete,
    ],
    [1600, 1200, 300, 5, true],
  );
});
