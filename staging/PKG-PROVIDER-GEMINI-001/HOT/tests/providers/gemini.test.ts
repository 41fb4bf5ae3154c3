// The Gemini provider against a fake Gemini API on 127.0.0.1 (fixtures/gemini-server.ts: its replies as Google's
// reference and the official SDK's recorded replies have them): what is Gemini's own (the contracts:
// gemini-contract.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { isCpError } from '#kernel/errors.js';
import { isProviderError, type ProviderError } from '#providers/errors.js';
import { readText } from '#providers/http.js';
import { SseParser } from '#providers/wire/sse.js';
import type { WireRequest, WireResponse, WireResult } from '#providers/wire/spec.js';
import { fixedClock } from '#tests/providers/fixtures/clock.js';
import { budgetPrice, GEMINI_MODELS } from '../../providers/gemini/models.js';
import { GeminiProvider } from '../../providers/gemini/provider.js';
import { GeminiServer, geminiErrors, generateResponse, googleError } from './fixtures/gemini-server.js';

const KEY = 'AIzaSyTEST-gemini-key-must-never-leak-0123456';

async function rig(t: { after: (fn: () => Promise<void>) => void }): Promise<{
  server: GeminiServer;
  provider: GeminiProvider;
}> {
  const server = await GeminiServer.start(KEY);
  t.after(() => server.close());
  return {
    server,
    provider: new GeminiProvider({ config: { base_url: server.url, api_key: KEY }, env: {}, clock: fixedClock() }),
  };
}

const USER = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] };

function call(
  provider: GeminiProvider,
  surface: 'gemini.generate' | 'gemini.stream',
  body: Record<string, unknown> = USER,
  model = 'gemini-2.5-flash',
): Promise<WireResponse> {
  const request: WireRequest = { surface, body, headers: {}, params: { model } };
  return provider.call(request, { timeoutMs: 5000 });
}

/** The reply read as the gateway reads it: whole, or event by event; a read failure is returned beside the result. */
async function read(
  provider: GeminiProvider,
  surface: 'gemini.generate' | 'gemini.stream',
  response: WireResponse,
): Promise<{ result: WireResult; failure: unknown }> {
  const reader = provider.reader(surface);
  let failure: unknown = null;
  try {
    if (surface === 'gemini.stream') {
      const parser = new SseParser();
      for await (const chunk of response.body)
        for (const frame of parser.push(chunk)) if (frame.data !== null) reader.event(frame.event, frame.data);
    } else assert.equal(reader.body(JSON.parse(await readText(response.body, Number.POSITIVE_INFINITY))), null);
  } catch (error) {
    failure = error;
  }
  return { result: reader.result(), failure };
}

const usageOf = (r: WireResult) => [
  r.usage.input_tokens,
  r.usage.output_tokens,
  r.usage.cache_read_tokens,
  r.usage.cache_write_tokens,
];

test('gemini: the model goes in the URL path, the key in x-goog-api-key (never the URL), the body as given', async (t) => {
  const { server, provider } = await rig(t);
  await read(provider, 'gemini.generate', await call(provider, 'gemini.generate', USER, 'gemini-2.5-pro'));
  await read(provider, 'gemini.stream', await call(provider, 'gemini.stream', USER, 'tuned/../../x'));
  const [whole, streamed] = server.seen;
  assert.equal(
    whole?.path,
    '/v1beta/models/gemini-2.5-pro:generateContent',
    'models/ prefix taken as the SDK sends it',
  );
  assert.equal(whole?.query.toString(), '');
  assert.equal(whole?.headers['x-goog-api-key'], KEY);
  assert.match(String(whole?.headers['content-type']), /^application\/json/);
  assert.deepEqual(whole?.body, USER);
  assert.equal(
    streamed?.path,
    '/v1beta/models/tuned%2F..%2F..%2Fx:streamGenerateContent',
    'a model never leaves its segment',
  );
  assert.equal(streamed?.query.toString(), 'alt=sse');
  const refused = await provider
    .call({ surface: 'gemini.generate', body: USER, headers: {} }, { timeoutMs: 5000 })
    .catch((e: unknown) => e);
  assert.ok(isProviderError(refused) && refused.kind === 'invalid_request', 'no model: refused, nothing sent');
  assert.equal(server.seen.length, 2);
});

test('gemini: a streamed reply: thinking and text blocks in order, usage from the last chunk, thinking billed as output', async (t) => {
  const { server, provider } = await rig(t);
  server.push({
    answer: {
      thought: 'Considering the sky.',
      text: 'The sky is blue.',
      usage: { prompt: 1200, cached: 1000, candidates: 30, thoughts: 70, toolUse: 5 },
      responseId: 'resp-stream-1',
      model: 'gemini-2.5-flash-002',
    },
  });
  const response = await call(provider, 'gemini.stream');
  assert.match(response.contentType, /^text\/event-stream/);
  assert.equal(response.requestId, null, 'Gemini sends no request id header');
  const { result, failure } = await read(provider, 'gemini.stream', response);
  assert.equal(failure, null);
  assert.deepEqual(result.blocks, [
    { type: 'thinking', thinking: 'Considering the sky.' },
    { type: 'text', text: 'The sky is blue.' },
  ]);
  assert.equal(result.model, 'gemini-2.5-flash-002');
  assert.equal(result.response_id, 'resp-stream-1');
  assert.equal(result.stop_reason, 'stop');
  assert.equal(result.raw_stop_reason, 'STOP');
  assert.equal(result.complete, true);
  assert.equal(result.usage_final, true);
  // input: prompt (its cached tokens inside) + tool-use prompt; output: candidates + thoughts; no cache writes.
  assert.deepEqual(usageOf(result), [1205, 100, 1000, 0]);
  assert.equal((result.usage.raw as Record<string, unknown>).thoughtsTokenCount, 70);
});

test('gemini: a function call round trip, whole and streamed: tool_use blocks, stop tool_use; the result turn answers text', async (t) => {
  const { server, provider } = await rig(t);
  const tools = [{ functionDeclarations: [{ name: 'get_weather', parameters: { type: 'OBJECT' } }] }];
  const ask = { contents: [{ role: 'user', parts: [{ text: 'weather in Paris?' }] }], tools };
  for (const surface of ['gemini.generate', 'gemini.stream'] as const) {
    const { result } = await read(provider, surface, await call(provider, surface, ask));
    assert.deepEqual(result.blocks, [{ type: 'tool_use', id: null, name: 'get_weather', input: { city: 'Paris' } }]);
    assert.equal(result.stop_reason, 'tool_use', surface);
    assert.equal(result.raw_stop_reason, 'STOP');
    const answer = {
      contents: [
        ...ask.contents,
        { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }] },
        { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { sky: 'sunny' } } }] },
      ],
      tools,
    };
    const turn = await read(provider, surface, await call(provider, surface, answer));
    assert.deepEqual(turn.result.blocks, [{ type: 'text', text: 'It is sunny in Paris.' }]);
    assert.equal(turn.result.stop_reason, 'stop');
  }
  assert.equal(server.seen.length, 4);
  // Gemini 3 ids its calls: the id is kept for the client's functionResponse.
  server.push({ answer: { functionCall: { id: 'call-7', name: 'get_weather', args: {} } } });
  const { result } = await read(provider, 'gemini.generate', await call(provider, 'gemini.generate', ask));
  assert.equal(result.blocks[0]?.id, 'call-7');
});

test('gemini: a stream cut mid-reply is a failure after success, incomplete, its usage not final (charged as unknown)', async (t) => {
  const { server, provider } = await rig(t);
  server.push({
    answer: { text: 'a long answer cut short', usage: { prompt: 50, candidates: 40 } },
    cutAfterChunks: 1,
  });
  const { result, failure } = await read(provider, 'gemini.stream', await call(provider, 'gemini.stream'));
  assert.ok(isProviderError(failure), String(failure));
  assert.equal(failure.after_success, true);
  assert.equal(failure.retryable, false);
  assert.equal(result.complete, false);
  assert.equal(result.usage_final, false, 'the running count of an unfinished stream is not its bill');
  assert.deepEqual(result.blocks, [{ type: 'text', text: 'a long answe' }]);
});

test('gemini: an error chunk inside a 2xx stream is a stream error', async (t) => {
  const { provider } = await rig(t);
  const reader = provider.reader('gemini.stream');
  reader.event(null, JSON.stringify({ candidates: [{ content: { parts: [{ text: 'x' }], role: 'model' } }] }));
  reader.event(null, JSON.stringify(geminiErrors.overloaded()));
  const result = reader.result();
  assert.equal(result.stream_error, 'UNAVAILABLE: The model is overloaded. Please try again later.');
  assert.equal(result.complete, false);
});

test('gemini: a blocked prompt is a complete reply stopped by the content filter; finish reasons normalised', async (t) => {
  const { provider } = await rig(t);
  const blocked = provider.reader('gemini.generate');
  const body = {
    promptFeedback: { blockReason: 'PROHIBITED_CONTENT' },
    usageMetadata: { promptTokenCount: 9, totalTokenCount: 9 },
    modelVersion: 'gemini-2.5-flash',
    responseId: 'r-blocked',
  };
  assert.equal(blocked.body(body), null);
  const result = blocked.result();
  assert.equal(result.stop_reason, 'content_filter');
  assert.equal(result.complete, true);
  assert.deepEqual(usageOf(result), [9, 0, 0, 0], 'absent counts are proto3 zeros once the prompt count is known');
  for (const [raw, stop] of [
    ['MAX_TOKENS', 'length'],
    ['SAFETY', 'content_filter'],
    ['RECITATION', 'content_filter'],
    ['MALFORMED_FUNCTION_CALL', 'other'],
  ] as const) {
    const reader = provider.reader('gemini.generate');
    reader.body(generateResponse({ text: 'x', finishReason: raw }, 'm'));
    assert.equal(reader.result().stop_reason, stop, raw);
  }
  const second = provider.reader('gemini.generate');
  second.body({
    candidates: [
      { index: 1, content: { parts: [{ text: 'second' }], role: 'model' }, finishReason: 'MAX_TOKENS' },
      { content: { parts: [{ text: 'first' }], role: 'model' }, finishReason: 'STOP' },
    ],
  });
  assert.deepEqual(second.result().blocks, [{ type: 'text', text: 'first' }], 'the first candidate, wherever it is');
  assert.equal(second.result().stop_reason, 'stop');
  const none = provider.reader('gemini.generate');
  none.body({ candidates: [] });
  assert.deepEqual(usageOf(none.result()), [null, null, null, null], 'no usageMetadata: unknown, never 0');
  const broken = provider.reader('gemini.generate');
  broken.body({ candidates: [], usageMetadata: { promptTokenCount: 5, candidatesTokenCount: -1 } });
  assert.equal(broken.result().usage.output_tokens, null, 'a count that is not one is unknown');
  assert.notEqual(provider.reader('gemini.generate').body({ choices: [] }), null, 'not a Gemini reply');
});

async function failure(provider: GeminiProvider): Promise<ProviderError> {
  const error = await call(provider, 'gemini.generate').catch((e: unknown) => e);
  assert.ok(isProviderError(error), `expected a ProviderError, got ${String(error)}`);
  return error;
}

test("gemini: Google's error JSON mapped to each kind, RetryInfo read as the wait, nothing of the key shown", async (t) => {
  const { server, provider } = await rig(t);
  const cases: [number, unknown, string, number | null, string | null][] = [
    [429, geminiErrors.rateLimited('13.5s'), 'rate_limited', 13_500, 'RESOURCE_EXHAUSTED'],
    [429, geminiErrors.spendLimit(), 'spend_limit', null, 'RESOURCE_EXHAUSTED'],
    [503, geminiErrors.overloaded(), 'overloaded', null, 'UNAVAILABLE'],
    [500, geminiErrors.internal(), 'server_error', null, 'INTERNAL'],
    [400, geminiErrors.invalidArgument(), 'invalid_request', null, 'INVALID_ARGUMENT'],
    [404, geminiErrors.notFound('gemini-9'), 'invalid_request', null, 'NOT_FOUND'],
    [400, geminiErrors.keyInvalid(), 'auth', null, 'API_KEY_INVALID'],
    [401, geminiErrors.unauthenticated(), 'auth', null, 'UNAUTHENTICATED'],
    [403, geminiErrors.permissionDenied(), 'auth', null, 'PERMISSION_DENIED'],
    // The streaming route's answer when not asked for SSE: the error inside a one-element array.
    [503, [geminiErrors.overloaded()], 'overloaded', null, 'UNAVAILABLE'],
  ];
  for (const [status, body, kind, wait, type] of cases) {
    server.push({ status, body });
    const error = await failure(provider);
    assert.equal(error.kind, kind, `${status} ${type}`);
    assert.equal(error.status, status);
    assert.equal(error.retry_after_ms, wait, `${status} ${type}`);
    assert.equal(error.provider_error_type, type);
    assert.equal(error.request_id, null, 'Google names no request id');
    assert.ok(!JSON.stringify(error.toJSON()).includes(KEY));
  }
  server.push({ status: 429, body: geminiErrors.rateLimited('2s'), headers: { 'retry-after': '9' } });
  assert.equal(
    (await failure(provider)).retry_after_ms,
    9000,
    'a retry-after header, when a proxy adds one, comes first',
  );
  server.push({ status: 400, body: googleError(400, 'INVALID_ARGUMENT', `echo ${KEY}`) });
  const echoed = await failure(provider);
  assert.ok(!echoed.message.includes(KEY) && echoed.message.includes('[REDACTED]'));
});

test('gemini: key from config, else GOOGLE_API_KEY, else GEMINI_API_KEY; base URL from GOOGLE_GEMINI_BASE_URL, with or without /v1beta', async (t) => {
  const { server } = await rig(t);
  const env = { GEMINI_API_KEY: 'AIza-gemini-var', GOOGLE_GEMINI_BASE_URL: `${server.url}/v1beta/` };
  const viaGemini = new GeminiProvider({ env });
  assert.equal(viaGemini.baseUrl, `${server.url}/v1beta`);
  await call(viaGemini, 'gemini.generate').catch(() => {});
  assert.equal(server.seen.at(-1)?.headers['x-goog-api-key'], 'AIza-gemini-var');
  assert.equal(server.seen.at(-1)?.path, '/v1beta/models/gemini-2.5-flash:generateContent');
  const both = new GeminiProvider({ env: { ...env, GOOGLE_API_KEY: KEY } });
  await read(both, 'gemini.generate', await call(both, 'gemini.generate'));
  assert.equal(
    server.seen.at(-1)?.headers['x-goog-api-key'],
    KEY,
    'GOOGLE_API_KEY first, as the official SDK reads them',
  );
  assert.equal(
    new GeminiProvider({ env: {}, config: { api_key: KEY } }).baseUrl,
    'https://generativelanguage.googleapis.com',
  );
  assert.throws(
    () => new GeminiProvider({ env: {}, config: {} }),
    (e: unknown) =>
      isCpError(e) && e.code === 'ERR_PROVIDER_CONFIG' && /\$GOOGLE_API_KEY nor \$GEMINI_API_KEY/.test(e.message),
  );
});

test('gemini: the neutral send renders generateContent with the model in the path; tool calls stop as tool_use', async (t) => {
  const { server, provider } = await rig(t);
  server.push({ answer: { text: '42', responseId: 'resp-n', usage: { prompt: 20, candidates: 1, thoughts: 3 } } });
  const sent = await provider.send(
    {
      model: 'models/gemini-2.5-pro',
      max_tokens: 64,
      prompt: 'What is 6 x 7?',
      temperature: 0,
      stop_sequences: ['###'],
      system: [{ text: 'stable rules', cache: true }, { text: 'volatile' }],
    },
    { timeoutMs: 5000 },
  );
  const seen = server.seen[0];
  assert.equal(seen?.path, '/v1beta/models/gemini-2.5-pro:generateContent', 'the resource name as the SDK gives it');
  assert.deepEqual(seen?.body, {
    contents: [{ role: 'user', parts: [{ text: 'What is 6 x 7?' }] }],
    systemInstruction: { parts: [{ text: 'stable rules' }, { text: 'volatile' }] },
    generationConfig: { maxOutputTokens: 64, temperature: 0, stopSequences: ['###'] },
  });
  assert.equal(sent.content, '42');
  assert.equal(sent.request_id, 'resp-n', "the body's responseId names the reply");
  assert.deepEqual([sent.usage.input_tokens, sent.usage.output_tokens], [20, 4]);
  const body = { model: 'gemini-2.5-flash', contents: USER.contents, generationConfig: { maxOutputTokens: 8 } };
  server.push({ answer: { functionCall: { name: 'f', args: {} } } });
  const rendered = await provider.send({ body }, { timeoutMs: 5000 });
  assert.equal(rendered.stop_reason, 'tool_use');
  assert.equal(rendered.raw_stop_reason, 'STOP');
  assert.deepEqual(server.seen[1]?.body, { contents: USER.contents, generationConfig: { maxOutputTokens: 8 } });
  const unbounded = await provider
    .send({ body: { ...body, generationConfig: {} } }, { timeoutMs: 5000 })
    .catch((e) => e);
  assert.ok(isProviderError(unbounded) && /maxOutputTokens/.test(unbounded.message));
  assert.equal(server.seen.length, 2);
});

test('gemini: countTokens and models pass through on their routes', async (t) => {
  const { server, provider } = await rig(t);
  const counted = await provider.call(
    { surface: 'gemini.count_tokens', body: USER, headers: {}, params: { model: 'gemini-2.5-flash' } },
    { timeoutMs: 5000 },
  );
  assert.equal(JSON.parse(await readText(counted.body, 1e6)).totalTokens, 11);
  const models = await provider.call(
    { surface: 'gemini.models', body: null, headers: {}, query: { pageSize: '5' } },
    { timeoutMs: 5000 },
  );
  assert.ok(Array.isArray(JSON.parse(await readText(models.body, 1e6)).models));
  assert.equal(server.seen[0]?.path, '/v1beta/models/gemini-2.5-flash:countTokens');
  assert.equal(server.seen[1]?.path, '/v1beta/models');
  assert.equal(server.seen[1]?.query.get('pageSize'), '5');
});

test("gemini: the price catalogue is the budget's price table, and prices every model of the catalogue", () => {
  const budget = JSON.parse(readFileSync(new URL('../../config/budget.json', import.meta.url), 'utf8')) as {
    pricing: Record<string, unknown>;
  };
  for (const [model, facts] of Object.entries(GEMINI_MODELS)) {
    assert.deepEqual(budget.pricing[model], budgetPrice(facts), model);
    assert.ok(facts.context_window >= 1_000_000 && facts.max_output_tokens >= 8192, model);
  }
  for (const model of ['gemini-2.5-pro', 'gemini-2.5-flash', 'gemini-2.5-flash-lite', 'gemini-2.0-flash'])
    assert.ok(model in GEMINI_MODELS, model);
});
