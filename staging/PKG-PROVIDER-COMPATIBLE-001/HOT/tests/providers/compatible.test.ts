import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isCpError } from '#kernel/errors.js';
import provider, { CompatibleProvider } from '../../providers/compatible/provider.js';
import { PRESETS } from '../../providers/compatible/presets.js';
import { OpenAiProvider } from '#providers/openai/provider.js';
import { providerContract } from '#tests/providers/contract.js';
import { fixedClock } from '#tests/providers/fixtures/clock.js';
import { httpHarness, retryAfterHeader } from '#tests/providers/fixtures/http-harness.js';
import { ScriptedServer, type ScriptedReply } from '#tests/providers/fixtures/server.js';
import { openaiWire } from '#tests/providers/fixtures/wire.js';
import { surfaceReply } from '#tests/providers/fixtures/streams.js';
import { wireContract } from '#tests/providers/wire-contract.js';
import { wireExtras } from '#tests/providers/fixtures/wire-extras.js';

const KEY = 'gsk_TEST-KEY-must-never-leak-0123456789abcdef';

/** Groq, pointed at a local fake: the preset's auth and request-id header, the fake's address. */
const groq = (baseUrl: string, clock = fixedClock()) =>
  new CompatibleProvider({
    config: { base_url: baseUrl, options: { preset: 'groq' } },
    env: { GROQ_API_KEY: KEY },
    clock,
  });

providerContract(
  httpHarness({
    name: 'CompatibleProvider (groq preset, Chat Completions on 127.0.0.1)',
    secret: KEY,
    reportsCacheWrite: false,
    makeProvider: (baseUrl, clock) => groq(baseUrl, clock),
    toReply(s): ScriptedReply {
      if (s.type === 'malformed') return { status: 200, body: { object: 'chat.completion', choices: [] } };
      if (s.type === 'answer')
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
      const body =
        s.kind === 'spend_limit'
          ? openaiWire.spendLimit()
          : openaiWire.error(`scripted ${s.kind}`, openaiWire.errorType[s.kind] ?? 'server_error', null);
      return { status: s.status, headers: { 'x-request-id': s.request_id, ...retryAfterHeader(s) }, body };
    },
  }),
);

wireContract({
  name: 'CompatibleProvider (groq preset)',
  secret: KEY,
  neutralSurface: 'openai.chat',
  generation: ['openai.chat'],
  async open(clock) {
    const server = await ScriptedServer.start();
    return {
      provider: groq(server.url, clock),
      answer: (surface, answer, stream) => server.push(surfaceReply(surface, answer, stream, 'x-request-id')),
      rateLimited: (requestId, seconds) =>
        server.push({
          status: 429,
          headers: { 'x-request-id': requestId, 'retry-after': String(seconds) },
          body: openaiWire.error('Rate limit reached for model', 'tokens', 'rate_limit_exceeded'),
        }),
      received: () => server.received.length,
      close: () => server.close(),
    };
  },
});

wireExtras({
  name: 'CompatibleProvider (groq preset)',
  surface: 'openai.chat',
  async open() {
    const server = await ScriptedServer.start();
    return { provider: groq(server.url), server, close: () => server.close() };
  },
});

test('compatible: every shipped preset is a record of data the one entry consumes', () => {
  assert.deepEqual(Object.keys(PRESETS).sort(), [
    'deepseek',
    'groq',
    'mistral',
    'ollama',
    'openrouter',
    'together',
    'vllm',
    'xai',
  ]);
  for (const [name, preset] of Object.entries(PRESETS)) {
    assert.match(preset.base_url, /^https?:\/\/[^/]+\/.*v1$/, name);
    assert.deepEqual([...preset.models].sort(), Object.keys(preset.prices).sort(), name);
    const p = new CompatibleProvider({
      config: { options: { preset: name } },
      env: { [preset.api_key_env ?? 'X']: 'k-1' },
    });
    assert.equal(p.baseUrl, preset.base_url, name);
  }
});

test('compatible: the preset picks the base URL, the key variable and the auth header', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  const ok = surfaceReply(
    'openai.chat',
    {
      text: 'hi',
      model: 'm',
      stop: 'stop',
      usage: { input_tokens: 3, output_tokens: 1, cache_read_tokens: 0, cache_write_tokens: 0 },
      request_id: 'r',
    },
    false,
    'x-request-id',
  );
  server.push(ok, ok, ok);
  const send = (p: CompatibleProvider) => p.send({ model: 'm', max_tokens: 4, prompt: 'x' }, { timeoutMs: 5000 });
  await send(
    new CompatibleProvider({
      config: { options: { preset: 'deepseek' } },
      env: { DEEPSEEK_BASE_URL: `${server.url}/v1`, DEEPSEEK_API_KEY: 'ds-key-1' },
    }),
  );
  assert.equal(server.received[0]?.url, '/v1/chat/completions');
  assert.equal(server.received[0]?.headers.authorization, 'Bearer ds-key-1');
  // Ollama takes no key: none is sent even when one is configured.
  await send(
    new CompatibleProvider({
      config: { base_url: `${server.url}/v1`, api_key: 'ignored-1', options: { preset: 'ollama' } },
      env: {},
    }),
  );
  assert.equal(server.received[1]?.headers.authorization, undefined);
  // An operator's own preset: a header of its own, its own key variable.
  await send(
    new CompatibleProvider({
      config: {
        options: {
          preset: 'inhouse',
          presets: {
            inhouse: {
              base_url: `${server.url}/llm/v1`,
              auth: { header: 'X-Api-Key' },
              api_key_env: 'INHOUSE_KEY',
              key_required: true,
              prices: { 'house-1': { input_per_mtok: 1, output_per_mtok: 2 } },
            },
          },
        },
      },
      env: { INHOUSE_KEY: 'house-key-1' },
    }),
  );
  assert.equal(server.received[2]?.url, '/llm/v1/chat/completions');
  assert.equal(server.received[2]?.headers['x-api-key'], 'house-key-1');
  assert.equal(server.received[2]?.headers.authorization, undefined);
});

test('compatible: DeepSeek cache hits (prompt_cache_hit_tokens) are the cache-read bucket', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  // DeepSeek's documented usage object: prompt_tokens = hits + misses.
  server.push({
    status: 200,
    body: {
      id: 'ds-1',
      object: 'chat.completion',
      model: 'deepseek-chat',
      choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
      usage: {
        prompt_tokens: 1200,
        completion_tokens: 7,
        total_tokens: 1207,
        prompt_cache_hit_tokens: 1024,
        prompt_cache_miss_tokens: 176,
      },
    },
  });
  const p = new CompatibleProvider({
    config: { base_url: server.url, options: { preset: 'deepseek' } },
    env: { DEEPSEEK_API_KEY: 'k-1' },
  });
  const result = await p.send({ model: 'deepseek-chat', max_tokens: 8, prompt: 'x' }, { timeoutMs: 5000 });
  assert.deepEqual(
    [result.usage.input_tokens, result.usage.cache_read_tokens, result.usage.output_tokens],
    [1200, 1024, 7],
  );
});

// Mistral's documented chat completion (docs.mistral.ai API reference, "Chat Completion" response example): its
// usage names no cached part, so no prompt_tokens_details.
const MISTRAL_REPLY = {
  id: 'cmpl-e5cc70bb28c444948073e77776eb30ef',
  object: 'chat.completion',
  model: 'mistral-small-latest',
  usage: { prompt_tokens: 16, completion_tokens: 34, total_tokens: 50 },
  created: 1702256327,
  choices: [
    {
      index: 0,
      message: { content: 'string', tool_calls: null, prefix: false, role: 'assistant' },
      finish_reason: 'stop',
    },
  ],
};

test('compatible: a reply with no prompt_tokens_details (Mistral) reads zero cache reads, whole and streamed', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  server.push({ status: 200, body: MISTRAL_REPLY });
  const mistral = new CompatibleProvider({
    config: { base_url: server.url, options: { preset: 'mistral' } },
    env: { MISTRAL_API_KEY: 'k-1' },
  });
  const sent = await mistral.send({ model: 'mistral-small-latest', max_tokens: 8, prompt: 'x' }, { timeoutMs: 5000 });
  const buckets = (u: typeof sent.usage) => [
    u.input_tokens,
    u.cache_read_tokens,
    u.cache_write_tokens,
    u.output_tokens,
  ];
  assert.deepEqual(buckets(sent.usage), [16, 0, 0, 34]);
  const whole = mistral.reader('openai.chat');
  assert.equal(whole.body(MISTRAL_REPLY), null);
  assert.deepEqual(buckets(whole.result().usage), [16, 0, 0, 34]);
  // Mistral's stream: the last chunk carries the usage object, then [DONE].
  const streamed = mistral.reader('openai.chat');
  const chunk = (delta: unknown, finish: string | null, usage?: unknown) =>
    JSON.stringify({
      id: 'cmpl-1',
      object: 'chat.completion.chunk',
      created: 1702256327,
      model: 'mistral-small-latest',
      choices: [{ index: 0, delta, finish_reason: finish }],
      ...(usage === undefined ? {} : { usage }),
    });
  streamed.event(null, chunk({ role: 'assistant', content: '' }, null));
  streamed.event(null, chunk({ content: 'ok' }, 'stop', MISTRAL_REPLY.usage));
  streamed.event(null, '[DONE]');
  assert.deepEqual(buckets(streamed.result().usage), [16, 0, 0, 34]);
  // No usage at all stays unknown, every bucket; and OpenAI itself, which always sends the details, keeps the gap.
  const bare = mistral.reader('openai.chat');
  bare.body({ ...MISTRAL_REPLY, usage: undefined });
  assert.deepEqual(buckets(bare.result().usage), [null, null, null, null]);
  const openaiReader = new OpenAiProvider({ config: { base_url: server.url } }).reader('openai.chat');
  openaiReader.body(MISTRAL_REPLY);
  assert.equal(openaiReader.result().usage.cache_read_tokens, null);
});

test('compatible: a missing or unknown preset, a bad record or a missing key is ERR_PROVIDER_CONFIG', () => {
  const cases: [unknown, Record<string, string>, RegExp][] = [
    [{}, {}, /options must be an object naming a preset/],
    [{ options: { preset: 'nope' } }, {}, /no preset "nope" \(shipped: ollama/],
    [{ options: { preset: 'groq', extra: 1 } }, {}, /unknown field\(s\) \["extra"\]/],
    [
      { options: { preset: 'x', presets: { x: { base_url: 'http://h/v1', auth: 'basic' } } } },
      {},
      /presets\.x\.auth must be/,
    ],
    [
      { options: { preset: 'x', presets: { x: { base_url: 'http://h/v1', prices: { m: { input_per_mtok: -1 } } } } } },
      {},
      /presets\.x\.prices\.m needs/,
    ],
    [{ options: { preset: 'groq' } }, {}, /no API key: neither config api_key nor \$GROQ_API_KEY is set/],
    [{ options: { preset: 'constructor' } }, {}, /no preset "constructor"/],
  ];
  for (const [config, env, message] of cases)
    assert.throws(
      () => new CompatibleProvider({ config, env }),
      (e: unknown) => isCpError(e) && e.code === 'ERR_PROVIDER_CONFIG' && message.test(e.message),
      String(message),
    );
});

test('compatible: the package is opt-in and serves Chat Completions and the model list; the factory reads options', () => {
  assert.equal(provider.optIn, true);
  assert.deepEqual(provider.serves, ['openai.chat', 'openai.models', 'openai.embeddings']);
  const made = provider.create({
    id: 'compatible',
    env: { XAI_API_KEY: 'xai-1' },
    config: { options: { preset: 'xai' } },
  });
  assert.equal(made.id, 'compatible');
  assert.equal((made as CompatibleProvider).baseUrl, 'https://api.x.ai/v1');
});
