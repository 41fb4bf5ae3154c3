// Gemini as a translation source and target through `cplane serve` (a real process on a bootstrapped root): the
// official @google/genai SDK asking for a Claude or GPT model (the local upstream speaks Messages and Chat
// Completions), and the official Anthropic and OpenAI SDKs asking for a Gemini model (a fake Gemini API built from
// Google's reference and the SDK's recordings). One EXCHANGE per call, with the upstream's own usage.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError, type Content, GoogleGenAI } from '@google/genai';
import type OpenAI from 'openai';
import {
  DEFAULT_USAGE,
  GeminiServer,
} from '../../staging/PKG-PROVIDER-GEMINI-001/HOT/tests/providers/fixtures/gemini-server.js';
import { issueKey, ledgerEntries, startServed, type Served } from './harness.js';
import { sdkClients } from './translated.js';
import { USAGE } from './upstream.js';

const UPSTREAM_KEY = 'AIzaSyUPSTREAM-gemini-SECRET-0123456789';

let served: Served;
let gemini: GeminiServer;
let key: string;

const genai = (session: string): GoogleGenAI =>
  new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: served.url, headers: { 'x-cplane-session': session } } });
const { anthropic, openai } = sdkClients(() => ({ url: served.url, key }));

before(async () => {
  gemini = await GeminiServer.start(UPSTREAM_KEY);
  served = await startServed([], () => {}, { GOOGLE_GEMINI_BASE_URL: gemini.url, GEMINI_API_KEY: UPSTREAM_KEY });
  key = issueKey('AGENT-GTRANS');
});
after(async () => {
  await served.cleanup();
  await gemini.close();
});

function oneExchange(session: string): Record<string, unknown> {
  const exchanges = ledgerEntries(served.root).filter(
    (e) => e.event_type === 'EXCHANGE' && e.metadata.session_id === session,
  );
  assert.equal(exchanges.length, 1, `one EXCHANGE for ${session}`);
  return exchanges[0]?.metadata ?? {};
}

const buckets = (m: Record<string, unknown>) => [
  m.input_tokens,
  m.cache_read_tokens,
  m.cache_write_tokens,
  m.output_tokens,
  m.usage_complete,
];

const weather = [
  {
    functionDeclarations: [
      {
        name: 'get_weather',
        description: 'weather',
        parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } } },
      },
    ],
  },
];

test('@google/genai → claude-sonnet-4-5, whole: sent as a Message, the reply read as generateContent, usage exact', async () => {
  const session = 'SES-GT-CLAUDE';
  const reply = await genai(session).models.generateContent({
    model: 'claude-sonnet-4-5',
    contents: 'Hello',
    config: { maxOutputTokens: 256, systemInstruction: 'Be brief.', temperature: 0.5, stopSequences: ['END'] },
  });
  const seen = served.upstream.requests.at(-1);
  assert.equal(seen?.path, '/v1/messages');
  assert.deepEqual(seen?.body, {
    model: 'claude-sonnet-4-5',
    max_tokens: 256,
    system: [{ type: 'text', text: 'Be brief.' }],
    messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello' }] }],
    temperature: 0.5,
    stop_sequences: ['END'],
  });
  assert.equal(reply.text, 'Hello from upstream');
  assert.equal(reply.candidates?.[0]?.finishReason, 'STOP');
  const prompt = USAGE.input + USAGE.cacheWrite + USAGE.cacheRead;
  assert.equal(reply.usageMetadata?.promptTokenCount, prompt);
  assert.equal(reply.usageMetadata?.cachedContentTokenCount, USAGE.cacheRead);
  assert.equal(reply.usageMetadata?.candidatesTokenCount, USAGE.output);
  assert.equal(reply.usageMetadata?.totalTokenCount, prompt + USAGE.output);
  const meta = oneExchange(session);
  assert.deepEqual(buckets(meta), [prompt, USAGE.cacheRead, USAGE.cacheWrite, USAGE.output, true]);
  assert.equal(meta.surface, 'gemini.generate');
  assert.equal(meta.upstream_surface, 'anthropic.messages');
  assert.equal(meta.model_id, 'claude-sonnet-4-5');
});

test('@google/genai → gpt-4.1-mini, streamed with a function call: chunks in order, the call and usage exact', async () => {
  const session = 'SES-GT-GPT-STREAM';
  const stream = await genai(session).models.generateContentStream({
    model: 'gpt-4.1-mini',
    contents: 'weather in Paris?',
    config: { maxOutputTokens: 256, tools: weather },
  });
  let text = '';
  const calls: unknown[] = [];
  let finish: string | undefined;
  let usage: Record<string, unknown> | undefined;
  for await (const chunk of stream) {
    text += chunk.text ?? '';
    for (const call of chunk.functionCalls ?? []) calls.push(call);
    finish = chunk.candidates?.[0]?.finishReason ?? finish;
    usage = (chunk.usageMetadata as Record<string, unknown> | undefined) ?? usage;
  }
  const seen = served.upstream.requests.at(-1);
  assert.equal(seen?.path, '/v1/chat/completions');
  assert.equal(seen?.body?.stream, true);
  assert.deepEqual(seen?.body?.stream_options, { include_usage: true });
  assert.deepEqual(seen?.body?.tools, [
    {
      type: 'function',
      function: {
        name: 'get_weather',
        description: 'weather',
        parameters: weather[0]?.functionDeclarations[0]?.parametersJsonSchema,
      },
    },
  ]);
  assert.equal(text, '');
  assert.deepEqual(calls, [{ id: 'call_1', name: 'get_weather', args: { city: 'Paris' } }]);
  assert.equal(finish, 'STOP');
  const prompt = USAGE.input + USAGE.cacheRead;
  assert.equal(usage?.promptTokenCount, prompt);
  assert.equal(usage?.cachedContentTokenCount, USAGE.cacheRead);
  assert.equal(usage?.candidatesTokenCount, USAGE.output);
  const meta = oneExchange(session);
  assert.deepEqual(buckets(meta), [prompt, USAGE.cacheRead, 0, USAGE.output, true]);
  assert.equal(meta.surface, 'gemini.stream');
  assert.equal(meta.upstream_surface, 'openai.chat');
  assert.equal(meta.finish_reason, 'tool_use');
});

test('@google/genai → claude-sonnet-4-5, a function call round trip: the id kept, the response sent as tool_result', async () => {
  const session = 'SES-GT-TOOLS';
  const ai = genai(session);
  const contents: Content[] = [{ role: 'user', parts: [{ text: 'weather in Paris?' }] }];
  const first = await ai.models.generateContent({ model: 'claude-sonnet-4-5', contents, config: { tools: weather } });
  assert.deepEqual(first.functionCalls, [{ id: 'toolu_01', name: 'get_weather', args: { city: 'Paris' } }]);
  assert.equal(first.text, 'Hello from upstream');
  contents.push(first.candidates?.[0]?.content as Content, {
    role: 'user',
    parts: [{ functionResponse: { id: 'toolu_01', name: 'get_weather', response: { output: '18°C, sunny' } } }],
  });
  const stream = await ai.models.generateContentStream({
    model: 'claude-sonnet-4-5',
    contents,
    config: { tools: weather },
  });
  let text = '';
  for await (const chunk of stream) text += chunk.text ?? '';
  assert.equal(text, 'Hello from upstream');
  const sent = served.upstream.requests.at(-1)?.body;
  assert.equal(sent?.max_tokens, 32_000, "no maxOutputTokens: the gateway's output bound, as reserved");
  assert.deepEqual(sent?.messages, [
    { role: 'user', content: [{ type: 'text', text: 'weather in Paris?' }] },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Hello from upstream' },
        { type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: { city: 'Paris' } },
      ],
    },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01', content: '18°C, sunny' }] },
  ]);
  const exchanges = ledgerEntries(served.root).filter(
    (e) => e.event_type === 'EXCHANGE' && e.metadata.session_id === session,
  );
  assert.equal(exchanges.length, 2);
});

test('@google/genai: a field the target cannot express is refused naming it; nothing is sent', async () => {
  const session = 'SES-GT-REFUSE';
  const before = served.upstream.requests.length;
  await assert.rejects(
    genai(session).models.generateContent({
      model: 'gpt-4.1-mini',
      contents: 'Hello',
      config: { maxOutputTokens: 64, topK: 40 },
    }),
    (e: unknown) =>
      e instanceof ApiError &&
      e.status === 400 &&
      /TRANSLATION_UNSUPPORTED/.test(e.message) &&
      /generationConfig\.topK/.test(e.message),
  );
  assert.equal(served.upstream.requests.length, before);
  const refusals = ledgerEntries(served.root).filter(
    (e) => e.event_type === 'PROMPT_REJECTED' && JSON.stringify(e).includes('generationConfig.topK'),
  );
  assert.equal(refusals.length, 1);
});

/** usageMetadata as normalised: the prompt (its cached part inside), candidates with thinking, no cache writes. */
function assertGeminiUsage(meta: Record<string, unknown>): void {
  const u = DEFAULT_USAGE;
  assert.deepEqual(buckets(meta), [u.prompt, u.cached, 0, u.candidates + (u.thoughts ?? 0), true]);
  assert.equal(meta.model_id, 'gemini-2.5-flash');
}

test('Anthropic SDK → gemini-2.5-flash, whole: sent to generateContent, the reply a Message with exact usage', async () => {
  const session = 'SES-GT-A-GEMINI';
  const message = await anthropic(session).messages.create({
    model: 'gemini-2.5-flash',
    max_tokens: 256,
    system: 'Be brief.',
    messages: [{ role: 'user', content: 'Hello' }],
  });
  const seen = gemini.seen.at(-1);
  assert.equal(seen?.path, '/v1beta/models/gemini-2.5-flash:generateContent');
  assert.equal(seen?.headers['x-goog-api-key'], UPSTREAM_KEY);
  assert.deepEqual(seen?.body, {
    systemInstruction: { parts: [{ text: 'Be brief.' }] },
    contents: [{ role: 'user', parts: [{ text: 'Hello' }] }],
    generationConfig: { maxOutputTokens: 256 },
  });
  assert.deepEqual(message.content, [{ type: 'text', text: 'Hello from Gemini' }]);
  assert.equal(message.stop_reason, 'end_turn');
  const u = DEFAULT_USAGE;
  assert.equal(message.usage.input_tokens, u.prompt - (u.cached ?? 0));
  assert.equal(message.usage.cache_read_input_tokens, u.cached);
  assert.equal(message.usage.cache_creation_input_tokens, 0);
  assert.equal(message.usage.output_tokens, u.candidates + (u.thoughts ?? 0), 'thinking is billed as output');
  const meta = oneExchange(session);
  assertGeminiUsage(meta);
  assert.equal(meta.surface, 'anthropic.messages');
  assert.equal(meta.upstream_surface, 'gemini.generate');
});

test('Anthropic SDK → gemini-2.5-flash, streamed tool round trip: events in order, ids kept, usage exact', async () => {
  const session = 'SES-GT-A-GEMINI-TOOLS';
  const client = anthropic(session);
  const tool = {
    name: 'get_weather',
    description: 'weather',
    input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } },
  };
  const question = { role: 'user' as const, content: 'weather in Paris?' };
  const stream = client.messages.stream({
    model: 'gemini-2.5-flash',
    max_tokens: 256,
    tools: [tool],
    messages: [question],
  });
  const types: string[] = [];
  stream.on('streamEvent', (event) => types.push(event.type));
  const first = await stream.finalMessage();
  assert.equal(gemini.seen.at(-1)?.path, '/v1beta/models/gemini-2.5-flash:streamGenerateContent');
  assert.equal(gemini.seen.at(-1)?.query.get('alt'), 'sse');
  assert.deepEqual(gemini.seen.at(-1)?.body?.tools, [
    {
      functionDeclarations: [{ name: 'get_weather', description: 'weather', parametersJsonSchema: tool.input_schema }],
    },
  ]);
  assert.deepEqual(types, [
    'message_start',
    'content_block_start',
    'content_block_delta',
    'content_block_stop',
    'message_delta',
    'message_stop',
  ]);
  const call = first.content[0];
  assert.ok(call?.type === 'tool_use');
  assert.match(call.id, /^toolu_gemini_/, 'Gemini gave the call no id: the gateway names it');
  assert.deepEqual([call.name, call.input], ['get_weather', { city: 'Paris' }]);
  assert.equal(first.stop_reason, 'tool_use');
  assert.equal(first.usage.output_tokens, DEFAULT_USAGE.candidates + (DEFAULT_USAGE.thoughts ?? 0));
  assertGeminiUsage(oneExchange(session));
  const second = await client.messages.create({
    model: 'gemini-2.5-flash',
    max_tokens: 256,
    tools: [tool],
    messages: [
      question,
      { role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'sunny', is_error: false }] },
    ],
  });
  assert.deepEqual(second.content, [{ type: 'text', text: 'It is sunny in Paris.' }]);
  assert.deepEqual(gemini.seen.at(-1)?.body?.contents, [
    { role: 'user', parts: [{ text: 'weather in Paris?' }] },
    { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }] },
    { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { output: 'sunny' } } }] },
  ]);
});

test('OpenAI SDK → gemini-2.5-flash (through Messages): a chat completion with exact usage', async () => {
  const session = 'SES-GT-O-GEMINI';
  const completion = await openai(session).chat.completions.create({
    model: 'gemini-2.5-flash',
    max_completion_tokens: 128,
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hello' },
    ],
  });
  assert.deepEqual(gemini.seen.at(-1)?.body, {
    systemInstruction: { parts: [{ text: 'Be brief.' }] },
    contents: [{ role: 'user', parts: [{ text: 'Hello' }] }],
    generationConfig: { maxOutputTokens: 128 },
  });
  assert.equal(completion.choices[0]?.message.content, 'Hello from Gemini');
  const u = DEFAULT_USAGE;
  assert.equal(completion.usage?.prompt_tokens, u.prompt);
  assert.equal(completion.usage?.prompt_tokens_details?.cached_tokens, u.cached);
  assert.equal(completion.usage?.completion_tokens, u.candidates + (u.thoughts ?? 0));
  const meta = oneExchange(session);
  assertGeminiUsage(meta);
  assert.equal(meta.surface, 'openai.chat');
});

test('OpenAI SDK → gemini-2.5-flash streamed with a tool (through Messages): the call and the usage chunk exact', async () => {
  const session = 'SES-GT-O-GEMINI-STREAM';
  const stream = await openai(session).chat.completions.create({
    model: 'gemini-2.5-flash',
    max_completion_tokens: 128,
    stream: true,
    stream_options: { include_usage: true },
    tools: [
      {
        type: 'function',
        function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
      },
    ],
    messages: [{ role: 'user', content: 'weather in Paris?' }],
  });
  let args = '';
  const names: string[] = [];
  let finish: string | null = null;
  let usage: OpenAI.CompletionUsage | null | undefined = null;
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    for (const call of choice?.delta.tool_calls ?? []) {
      if (call.function?.name) names.push(call.function.name);
      args += call.function?.arguments ?? '';
    }
    finish = choice?.finish_reason ?? finish;
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(gemini.seen.at(-1)?.path, '/v1beta/models/gemini-2.5-flash:streamGenerateContent');
  assert.deepEqual(names, ['get_weather']);
  assert.deepEqual(JSON.parse(args), { city: 'Paris' });
  assert.equal(finish, 'tool_calls');
  const u = DEFAULT_USAGE;
  assert.equal(usage?.prompt_tokens, u.prompt);
  assert.equal(usage?.prompt_tokens_details?.cached_tokens, u.cached);
  assert.equal(usage?.completion_tokens, u.candidates + (u.thoughts ?? 0));
  const meta = oneExchange(session);
  assertGeminiUsage(meta);
  assert.equal(meta.upstream_surface, 'gemini.stream');
  assert.equal(meta.finish_reason, 'tool_use');
});

test('OpenAI SDK responses.stream → gemini-2.5-flash with a function tool (through Messages): events, call, usage exact', async () => {
  const session = 'SES-GT-R-GEMINI-STREAM';
  const stream = openai(session).responses.stream({
    model: 'gemini-2.5-flash',
    instructions: 'Be brief.',
    input: 'weather in Paris?',
    max_output_tokens: 128,
    tools: [
      {
        type: 'function',
        name: 'get_weather',
        parameters: { type: 'object', properties: { city: { type: 'string' } } },
        strict: false,
      },
    ],
  });
  const events: string[] = [];
  for await (const event of stream) events.push(event.type);
  const final = await stream.finalResponse();
  const seen = gemini.seen.at(-1);
  assert.equal(seen?.path, '/v1beta/models/gemini-2.5-flash:streamGenerateContent');
  assert.deepEqual(seen?.body?.systemInstruction, { parts: [{ text: 'Be brief.' }] });
  assert.deepEqual(seen?.body?.contents, [{ role: 'user', parts: [{ text: 'weather in Paris?' }] }]);
  assert.equal(events[0], 'response.created');
  assert.equal(events.at(-1), 'response.completed');
  assert.ok(events.includes('response.function_call_arguments.done'));
  const call = final.output.find((item) => item.type === 'function_call');
  assert.ok(call?.type === 'function_call');
  assert.equal(call.name, 'get_weather');
  assert.deepEqual(JSON.parse(call.arguments), { city: 'Paris' });
  const u = DEFAULT_USAGE;
  assert.equal(final.usage?.input_tokens, u.prompt);
  assert.equal(final.usage?.input_tokens_details.cached_tokens, u.cached);
  assert.equal(final.usage?.output_tokens, u.candidates + (u.thoughts ?? 0));
  const meta = oneExchange(session);
  assertGeminiUsage(meta);
  assert.equal(meta.surface, 'openai.responses');
  assert.equal(meta.upstream_surface, 'gemini.stream');
});
