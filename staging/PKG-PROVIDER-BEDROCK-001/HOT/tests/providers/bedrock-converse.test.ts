import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inspect } from 'node:util';
import { Hash } from '@smithy/core/serde';
import { SignatureV4 } from '@smithy/signature-v4';
import { isProviderError } from '#providers/errors.js';
import { readText } from '#providers/http.js';
import { SseParser } from '#providers/wire/sse.js';
import type { WireResponse, WireResult } from '#providers/wire/spec.js';
import { BedrockProvider } from '../../providers/bedrock/provider.js';
import { fixedClock } from '#tests/providers/fixtures/clock.js';
import { ScriptedServer, type ReceivedRequest } from '#tests/providers/fixtures/server.js';
import { wireContract } from '#tests/providers/wire-contract.js';
import {
  converseAnswer,
  converseError,
  converseEvent,
  converseException,
  converseStream,
  converseWhole,
  textEvents,
  toolEvents,
} from './converse-fake.js';

const ACCESS = 'AKIAIOSFODNN7EXAMPLE';
const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY-converse-never-leaks';
const ENV = { AWS_ACCESS_KEY_ID: ACCESS, AWS_SECRET_ACCESS_KEY: SECRET, AWS_REGION: 'us-east-1' };
const LLAMA = 'meta.llama3-3-70b-instruct-v1:0';
const NOVA = 'us.amazon.nova-pro-v1:0';

const make = (baseUrl: string, clock = fixedClock(), options: Record<string, unknown> = {}) =>
  new BedrockProvider({
    config: {
      base_url: baseUrl,
      options: { models: { 'model-under-test': LLAMA, llama: LLAMA, nova: NOVA }, ...options },
    },
    env: ENV,
    clock,
    readFile: () => null,
  });

wireContract({
  name: 'BedrockProvider (Converse, a Llama model, on 127.0.0.1)',
  secret: SECRET,
  neutralSurface: 'anthropic.messages',
  generation: ['anthropic.messages'],
  replyModel: LLAMA,
  scripted: true,
  async open(clock) {
    const server = await ScriptedServer.start();
    const usage = { inputTokens: 25, outputTokens: 19 };
    return {
      provider: make(server.url, clock),
      answer: (_surface, answer, stream) => server.push(converseAnswer(answer, stream)),
      toolCall(_surface, tool, stream) {
        const call = { id: 'tooluse_kZJMlvQmRJ6eAyJE5GIl7Q', name: tool.name, input: tool.input };
        if (stream) return server.push(converseStream('req-tool', toolEvents(call, usage)));
        const content = [{ toolUse: { toolUseId: call.id, name: call.name, input: call.input } }];
        server.push(converseWhole('req-tool', content, 'tool_use', usage));
      },
      cutStream() {
        const frames = textEvents('cut short here', 'end_turn', usage).slice(0, 4);
        const last = frames[3] as Uint8Array;
        frames[3] = last.subarray(0, last.byteLength >> 1);
        server.push(converseStream('req-cut', frames, true));
      },
      rateLimited(requestId, seconds) {
        const refusal = converseError(429, 'ThrottlingException', 'Too many requests, please wait.', requestId);
        server.push({ ...refusal, headers: { ...refusal.headers, 'retry-after': String(seconds) } });
      },
      received: () => server.received.length,
      close: () => server.close(),
    };
  },
});

async function readWhole(provider: BedrockProvider, response: WireResponse): Promise<WireResult> {
  const reader = provider.reader('anthropic.messages');
  assert.equal(reader.body(JSON.parse(await readText(response.body, Number.POSITIVE_INFINITY))), null);
  return reader.result();
}

/** The streamed reply's SSE events (name and data) as the client gets them, fed to the Anthropic reader too. */
async function readStream(provider: BedrockProvider, response: WireResponse) {
  const reader = provider.reader('anthropic.messages');
  const parser = new SseParser();
  const events: [string | null, Record<string, unknown>][] = [];
  for await (const chunk of response.body)
    for (const frame of parser.push(chunk))
      if (frame.data !== null) {
        events.push([frame.event, JSON.parse(frame.data)]);
        reader.event(frame.event, frame.data);
      }
  return { events, result: reader.result() };
}

/** What a server holding the secret computes over what it received (AWS's own canonicalisation). */
async function expectedAuthorization(req: ReceivedRequest, at: Date): Promise<string> {
  const url = new URL(req.url, 'http://x');
  const signed = /SignedHeaders=([^,]+)/.exec(String(req.headers.authorization))?.[1]?.split(';') ?? [];
  const headers: Record<string, string> = {};
  for (const name of signed) headers[name] = String(req.headers[name]);
  const signer = new SignatureV4({
    credentials: { accessKeyId: ACCESS, secretAccessKey: SECRET },
    region: 'us-east-1',
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

const TOOL_ID = 'tooluse_kZJMlvQmRJ6eAyJE5GIl7Q';
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

/** A multi-turn Messages request with every mapped field: system, image, a tool round trip, cache breakpoints. */
const ROUND_TRIP = {
  model: 'llama',
  max_tokens: 512,
  temperature: 0.2,
  top_p: 0.9,
  stop_sequences: ['END'],
  system: [{ type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } }],
  metadata: { user_id: 'user-42' },
  tools: [
    {
      name: 'get_weather',
      description: 'Weather for a city',
      input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  ],
  tool_choice: { type: 'auto' },
  messages: [
    {
      role: 'user',
      content: [
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
        { type: 'text', text: 'Weather in Paris?' },
      ],
    },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Let me check.' },
        { type: 'tool_use', id: TOOL_ID, name: 'get_weather', input: { city: 'Paris' } },
      ],
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: TOOL_ID, content: [{ type: 'text', text: '18°C, clear' }] },
        { type: 'tool_result', tool_use_id: 'tooluse_2', content: 'no such city', is_error: true },
      ],
    },
  ],
};

test('converse: a Messages request is sent as the Converse body AWS documents, to /model/{id}/converse, signed', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  const at = Date.parse('2026-11-29T01:00:00Z');
  server.push(
    converseWhole('c0ffee00-0000-4000-8000-000000000001', [{ text: 'Clear, 18°C.' }], 'end_turn', {
      inputTokens: 88,
      outputTokens: 7,
    }),
  );
  const provider = make(server.url, fixedClock(at));
  const response = await provider.call(
    { surface: 'anthropic.messages', body: ROUND_TRIP, headers: {} },
    { timeoutMs: 5000 },
  );
  const [req] = server.received;
  assert.equal(req?.url, '/model/meta.llama3-3-70b-instruct-v1%3A0/converse');
  assert.equal(req?.headers.accept, 'application/json');
  assert.deepEqual(req?.json, {
    messages: [
      {
        role: 'user',
        content: [{ image: { format: 'png', source: { bytes: PNG } } }, { text: 'Weather in Paris?' }],
      },
      {
        role: 'assistant',
        content: [
          { text: 'Let me check.' },
          { toolUse: { toolUseId: TOOL_ID, name: 'get_weather', input: { city: 'Paris' } } },
        ],
      },
      {
        role: 'user',
        content: [
          { toolResult: { toolUseId: TOOL_ID, content: [{ text: '18°C, clear' }] } },
          { toolResult: { toolUseId: 'tooluse_2', content: [{ text: 'no such city' }], status: 'error' } },
        ],
      },
    ],
    system: [{ text: 'You are terse.' }, { cachePoint: { type: 'default' } }],
    inferenceConfig: { maxTokens: 512, temperature: 0.2, topP: 0.9, stopSequences: ['END'] },
    toolConfig: {
      tools: [
        {
          toolSpec: {
            name: 'get_weather',
            description: 'Weather for a city',
            inputSchema: {
              json: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
            },
          },
        },
      ],
      toolChoice: { auto: {} },
    },
    requestMetadata: { user_id: 'user-42' },
  });
  assert.equal(req?.headers.authorization, await expectedAuthorization(req as ReceivedRequest, new Date(at)));
  const result = await readWhole(provider, response);
  assert.equal(response.requestId, 'c0ffee00-0000-4000-8000-000000000001');
  assert.deepEqual(result.blocks, [{ type: 'text', text: 'Clear, 18°C.' }]);
  assert.equal(result.model, LLAMA);
  // A model without prompt caching: AWS omits the cache counts, which are then known zeros, not unknowns.
  assert.deepEqual(
    [
      result.usage.input_tokens,
      result.usage.output_tokens,
      result.usage.cache_read_tokens,
      result.usage.cache_write_tokens,
    ],
    [88, 7, 0, 0],
  );
});

test('converse: the whole reply is an Anthropic message: tool call with its id, stop reason, usage bucket by bucket', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  server.push(
    converseWhole(
      'req-whole-tool',
      [{ text: 'Checking.' }, { toolUse: { toolUseId: TOOL_ID, name: 'get_weather', input: { city: 'Paris' } } }],
      'tool_use',
      { inputTokens: 12, outputTokens: 30, cacheReadInputTokens: 1024, cacheWriteInputTokens: 256 },
    ),
  );
  const provider = make(server.url);
  const body = { model: 'nova', max_tokens: 64, messages: [{ role: 'user', content: 'Weather in Paris?' }] };
  const response = await provider.call({ surface: 'anthropic.messages', body, headers: {} }, { timeoutMs: 5000 });
  assert.equal(server.received[0]?.url, '/model/us.amazon.nova-pro-v1%3A0/converse');
  const message = JSON.parse(await readText(response.body, Number.POSITIVE_INFINITY));
  assert.deepEqual(message, {
    id: 'msg_bdrk_req-whole-tool',
    type: 'message',
    role: 'assistant',
    model: NOVA,
    content: [
      { type: 'text', text: 'Checking.' },
      { type: 'tool_use', id: TOOL_ID, name: 'get_weather', input: { city: 'Paris' } },
    ],
    stop_reason: 'tool_use',
    stop_sequence: null,
    usage: { input_tokens: 12, cache_creation_input_tokens: 256, cache_read_input_tokens: 1024, output_tokens: 30 },
  });
});

test('converse-stream: events become Anthropic events in order; usage from metadata, exact', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  const usage = { inputTokens: 40, outputTokens: 22, cacheReadInputTokens: 300, cacheWriteInputTokens: 0 };
  server.push(
    converseStream('req-s1', toolEvents({ id: TOOL_ID, name: 'get_weather', input: { city: 'Paris' } }, usage)),
  );
  const provider = make(server.url);
  const body = { model: 'llama', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'Weather?' }] };
  const response = await provider.call({ surface: 'anthropic.messages', body, headers: {} }, { timeoutMs: 5000 });
  const [req] = server.received;
  assert.equal(req?.url, '/model/meta.llama3-3-70b-instruct-v1%3A0/converse-stream');
  assert.equal(req?.headers.accept, 'application/vnd.amazon.eventstream');
  assert.equal((req?.json as Record<string, unknown> | undefined)?.stream, undefined);
  assert.ok(req?.json !== null);
  assert.match(response.contentType, /^text\/event-stream/);
  const { events, result } = await readStream(provider, response);
  assert.deepEqual(
    events.map(([name]) => name),
    [
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ],
  );
  assert.deepEqual(events[4]?.[1], {
    type: 'content_block_start',
    index: 1,
    content_block: { type: 'tool_use', id: TOOL_ID, name: 'get_weather', input: {} },
  });
  assert.deepEqual(events[8]?.[1], {
    type: 'message_delta',
    delta: { stop_reason: 'tool_use', stop_sequence: null },
    usage: { input_tokens: 40, cache_creation_input_tokens: 0, cache_read_input_tokens: 300, output_tokens: 22 },
  });
  assert.deepEqual(result.blocks, [
    { type: 'text', text: 'Let me check.' },
    { type: 'tool_use', id: TOOL_ID, name: 'get_weather', input: { city: 'Paris' } },
  ]);
  assert.equal(result.stop_reason, 'tool_use');
  assert.equal(result.complete, true);
  assert.deepEqual(
    [
      result.usage.input_tokens,
      result.usage.output_tokens,
      result.usage.cache_read_tokens,
      result.usage.cache_write_tokens,
    ],
    [340, 22, 300, 0],
  );
});

test('converse: each documented exception maps to the router kind, with the request id and no secret', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  const provider = make(server.url);
  const cases: [number, string, string, boolean][] = [
    [429, 'ThrottlingException', 'rate_limited', true],
    [408, 'ModelTimeoutException', 'timeout', true],
    [503, 'ServiceUnavailableException', 'overloaded', true],
    [500, 'InternalServerException', 'server_error', true],
    [400, 'ValidationException', 'invalid_request', false],
    [403, 'AccessDeniedException', 'auth', false],
  ];
  for (const [status, type, kind, retryable] of cases) {
    server.push(converseError(status, type, `${type} said no`, `req-${type}`));
    const body = { model: 'llama', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] };
    const error = await provider.call({ surface: 'anthropic.messages', body, headers: {} }, { timeoutMs: 5000 }).then(
      () => assert.fail(`${type}: expected a ProviderError`),
      (e: unknown) => e,
    );
    assert.ok(isProviderError(error), inspect(error));
    assert.deepEqual(
      [error.kind, error.status, error.retryable, error.provider_error_type, error.request_id],
      [kind, status, retryable, type, `req-${type}`],
      type,
    );
    assert.ok(!inspect(error, { depth: 10 }).includes(SECRET));
  }
});

test('converse: a field Converse cannot take is refused by name before anything is sent', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  const provider = make(server.url);
  const refused: [Record<string, unknown>, string][] = [
    [{ thinking: { type: 'enabled', budget_tokens: 1024 } }, 'thinking'],
    [{ top_k: 5 }, 'top_k'],
    [{ tool_choice: { type: 'none' } }, 'tool_choice.type'],
    [
      {
        messages: [
          {
            role: 'user',
            content: [
              { type: 'search_result', source: 'https://x/y', title: 'y', content: [{ type: 'text', text: 'x' }] },
            ],
          },
        ],
      },
      'messages[0].content[0].type',
    ],
    [
      { messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'https://x/y.png' } }] }] },
      'messages[0].content[0].source.url',
    ],
  ];
  for (const [extra, field] of refused) {
    const body = { model: 'llama', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }], ...extra };
    const error = await provider.call({ surface: 'anthropic.messages', body, headers: {} }, { timeoutMs: 5000 }).then(
      () => assert.fail(`${field}: expected a refusal`),
      (e: unknown) => e,
    );
    assert.ok(isProviderError(error), inspect(error));
    assert.equal(error.kind, 'invalid_request');
    assert.equal(error.provider_error_type, 'TRANSLATION_UNSUPPORTED');
    assert.ok(error.message.includes(JSON.stringify(field)), `${error.message} names ${field}`);
  }
  assert.equal(server.received.length, 0);
});

test('converse-stream: an exception inside the stream is an error event; a bad CRC is a malformed reply after success', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  const provider = make(server.url);
  const body = { model: 'llama', max_tokens: 8, stream: true, messages: [{ role: 'user', content: 'hi' }] };
  server.push(
    converseStream('req-x', [
      converseEvent('messageStart', { role: 'assistant' }),
      converseEvent('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'par' } }),
      converseException('modelStreamErrorException', 'The model stopped mid-reply.'),
    ]),
  );
  const { result } = await readStream(
    provider,
    await provider.call({ surface: 'anthropic.messages', body, headers: {} }, { timeoutMs: 5000 }),
  );
  assert.equal(result.stream_error, 'modelStreamErrorException: The model stopped mid-reply.');
  assert.equal(result.complete, false);
  assert.equal(result.usage_final, false);

  const frames = textEvents('hello', 'end_turn', { inputTokens: 3, outputTokens: 1 });
  const bad = Buffer.from(frames[1] as Uint8Array);
  bad[bad.length - 6] = (bad[bad.length - 6] as number) ^ 0xff; // a payload byte: the message CRC no longer matches
  frames[1] = bad;
  server.push(converseStream('req-crc', frames));
  const response = await provider.call({ surface: 'anthropic.messages', body, headers: {} }, { timeoutMs: 5000 });
  const failure = await readStream(provider, response).then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(isProviderError(failure), inspect(failure));
  assert.equal(failure.kind, 'malformed_response');
  assert.equal(failure.after_success, true);
  assert.equal(failure.request_id, 'req-crc');
});
