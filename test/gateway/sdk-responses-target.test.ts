// The Responses API as a translation target through `cplane serve` (a real process on a bootstrapped root): the
// official Anthropic SDK and the OpenAI SDK's chat.completions asking for o3-pro, a model OpenAI serves only on
// `POST /v1/responses`, in front of a fake OpenAI upstream that serves nothing else. The request is translated to a
// Responses body before it is sent, the reply (whole or streamed) read back in the client's format, one EXCHANGE
// each with the upstream's own usage; a field the Responses API cannot express is refused by name, nothing sent.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { configSet, issueKey, KEYS, ledgerEntries, startServed, type Served } from './harness.js';
import { RESPONSES_USAGE as U, type ResponsesUpstream, startResponsesUpstream } from './responses-upstream.js';
import { exchangesIn, sdkClients } from './translated.js';

let served: Served;
let upstream: ResponsesUpstream;
let key: string;

const { anthropic, openai } = sdkClients(() => ({ url: served.url, key }));

before(async () => {
  upstream = await startResponsesUpstream(KEYS.openai);
  // The operator's list in place of the shipped one: o3-pro as shipped, and a model OpenAI serves on both APIs.
  const only = JSON.stringify({ responses_only_models: ['o3-pro*', 'gpt-4.1-nano'] });
  served = await startServed([], (root) => configSet(root, 'providers.openai.options', only), {
    OPENAI_BASE_URL: upstream.url,
  });
  key = issueKey('AGENT-RESPONSES-TARGET');
});
after(async () => {
  await served.cleanup();
  await upstream.close();
});

/** The one EXCHANGE of a session: served on the Responses API, its usage the upstream's own, bucket by bucket. */
function oneResponsesExchange(session: string): Record<string, unknown> {
  const exchanges = exchangesIn(served.root, session);
  assert.equal(exchanges.length, 1, `one EXCHANGE for ${session}`);
  const meta = exchanges[0]?.metadata ?? {};
  assert.equal(meta.upstream_surface, 'openai.responses');
  assert.equal(meta.input_tokens, U.input, 'input_tokens, cached ones included');
  assert.equal(meta.cache_read_tokens, U.cached);
  assert.equal(meta.cache_write_tokens, 0, 'OpenAI bills no cache write');
  assert.equal(meta.output_tokens, U.output, 'output_tokens, reasoning ones included');
  assert.equal(meta.usage_complete, true);
  return meta;
}

const weatherTool = {
  name: 'get_weather',
  description: 'weather',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } },
};

test('Anthropic SDK → o3-pro, whole: sent to /v1/responses as a Responses body, the reply read as a Message', async () => {
  const session = 'SES-RT-A-JSON';
  const message = await anthropic(session).messages.create({
    model: 'o3-pro',
    max_tokens: 512,
    system: [
      { type: 'text', text: 'Be brief.' },
      { type: 'text', text: 'Answer in English.', cache_control: { type: 'ephemeral' } },
    ],
    metadata: { user_id: 'user-7' },
    output_config: { effort: 'high' },
    messages: [{ role: 'user', content: 'Weather in Paris?' }],
  });
  const seen = upstream.requests.at(-1);
  assert.equal(seen?.path, '/v1/responses');
  assert.equal(seen?.headers.authorization, `Bearer ${KEYS.openai}`);
  assert.deepEqual(seen?.body, {
    model: 'o3-pro',
    instructions: 'Be brief.\n\nAnswer in English.',
    input: [{ type: 'message', role: 'user', content: 'Weather in Paris?' }],
    max_output_tokens: 512,
    safety_identifier: 'user-7',
    reasoning: { effort: 'high' },
    store: false,
  });
  assert.deepEqual(message.content, [{ type: 'text', text: 'Sunny in Paris.' }]);
  assert.equal(message.stop_reason, 'end_turn');
  assert.equal(message.usage.input_tokens, U.input - U.cached, "Anthropic's input_tokens excludes cache reads");
  assert.equal(message.usage.cache_read_input_tokens, U.cached);
  assert.equal(message.usage.cache_creation_input_tokens, 0);
  assert.equal(message.usage.output_tokens, U.output);
  const meta = oneResponsesExchange(session);
  assert.equal(meta.surface, 'anthropic.messages');
  assert.deepEqual(JSON.parse(String(meta.response)), [{ type: 'text', text: 'Sunny in Paris.' }]);
});

test('Anthropic SDK → o3-pro, streamed with a tool round trip: events in order, call ids kept, usage exact', async () => {
  const session = 'SES-RT-A-STREAM';
  const client = anthropic(session);
  const question = { role: 'user' as const, content: [{ type: 'text' as const, text: 'weather in Paris?' }] };
  const stream = client.messages.stream({
    model: 'o3-pro',
    max_tokens: 512,
    tools: [weatherTool],
    tool_choice: { type: 'any', disable_parallel_tool_use: true },
    messages: [question],
  });
  const types: string[] = [];
  stream.on('streamEvent', (event) => types.push(event.type));
  const first = await stream.finalMessage();
  assert.deepEqual(types, [
    'message_start',
    'content_block_start',
    'content_block_delta',
    'content_block_delta',
    'content_block_stop',
    'message_delta',
    'message_stop',
  ]);
  assert.deepEqual(first.content, [
    { type: 'tool_use', id: 'call_12345xyz', name: 'get_weather', input: { city: 'Paris' } },
  ]);
  assert.equal(first.stop_reason, 'tool_use');
  assert.equal(first.usage.input_tokens, U.input - U.cached);
  assert.equal(first.usage.cache_read_input_tokens, U.cached);
  assert.equal(first.usage.output_tokens, U.output);
  const sent = upstream.requests.at(-1)?.body;
  assert.equal(sent?.stream, true);
  assert.deepEqual(sent?.tools, [
    {
      type: 'function',
      name: 'get_weather',
      description: 'weather',
      parameters: weatherTool.input_schema,
      strict: false,
    },
  ]);
  assert.equal(sent?.tool_choice, 'required');
  assert.equal(sent?.parallel_tool_calls, false);
  const firstMeta = oneResponsesExchange(session);
  assert.equal(firstMeta.stream, true);
  assert.equal(firstMeta.finish_reason, 'tool_use');

  const image = { type: 'base64' as const, media_type: 'image/png' as const, data: 'iVBORw0KGgo=' };
  const second = client.messages.stream({
    model: 'o3-pro',
    max_tokens: 512,
    tools: [weatherTool],
    messages: [
      question,
      { role: 'assistant', content: first.content },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_12345xyz', content: '18°C, sunny' },
          { type: 'image', source: image },
        ],
      },
    ],
  });
  const answer = await second.finalMessage();
  assert.deepEqual(answer.content, [{ type: 'text', text: 'Sunny in Paris.' }]);
  assert.equal(answer.stop_reason, 'end_turn');
  assert.deepEqual(upstream.requests.at(-1)?.body?.input, [
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'weather in Paris?' }] },
    { type: 'function_call', call_id: 'call_12345xyz', name: 'get_weather', arguments: '{"city":"Paris"}' },
    { type: 'function_call_output', call_id: 'call_12345xyz', output: '18°C, sunny' },
    {
      type: 'message',
      role: 'user',
      content: [{ type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'auto' }],
    },
  ]);
  const exchanges = exchangesIn(served.root, session);
  assert.equal(exchanges.length, 2, 'one EXCHANGE per round trip');
  assert.equal(exchanges[1]?.metadata.upstream_surface, 'openai.responses');
  assert.equal(exchanges[1]?.metadata.input_tokens, U.input);
  assert.equal(exchanges[1]?.metadata.output_tokens, U.output);
});

test('Anthropic SDK → o3-pro cut at max_output_tokens: status incomplete reads as stop_reason max_tokens', async () => {
  const message = await anthropic('SES-RT-A-LONG').messages.create({
    model: 'o3-pro',
    max_tokens: 16,
    messages: [{ role: 'user', content: 'Say something LONG' }],
  });
  assert.equal(message.stop_reason, 'max_tokens');
  oneResponsesExchange('SES-RT-A-LONG');
});

test('OpenAI SDK chat.completions → o3-pro, whole and streamed: served by /v1/responses, read as chat', async () => {
  const completion = await openai('SES-RT-O-JSON').chat.completions.create({
    model: 'o3-pro',
    max_completion_tokens: 512,
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Weather in Paris?' },
    ],
  });
  assert.deepEqual(upstream.requests.at(-1)?.body, {
    model: 'o3-pro',
    instructions: 'Be brief.',
    input: [{ type: 'message', role: 'user', content: 'Weather in Paris?' }],
    max_output_tokens: 512,
    store: false,
  });
  assert.equal(completion.object, 'chat.completion');
  assert.equal(completion.choices[0]?.message.content, 'Sunny in Paris.');
  assert.equal(completion.choices[0]?.finish_reason, 'stop');
  assert.equal(completion.usage?.prompt_tokens, U.input, 'prompt_tokens, cached ones included');
  assert.equal(completion.usage?.prompt_tokens_details?.cached_tokens, U.cached);
  assert.equal(completion.usage?.completion_tokens, U.output);
  oneResponsesExchange('SES-RT-O-JSON');

  const stream = await openai('SES-RT-O-STREAM').chat.completions.create({
    model: 'o3-pro',
    max_completion_tokens: 512,
    stream: true,
    stream_options: { include_usage: true },
    tools: [{ type: 'function', function: { name: 'get_weather', parameters: weatherTool.input_schema } }],
    messages: [{ role: 'user', content: 'Weather in Paris?' }],
  });
  let args = '';
  let id: string | undefined;
  let finish: string | null = null;
  let usage: OpenAI.CompletionUsage | undefined;
  for await (const chunk of stream) {
    const call = chunk.choices[0]?.delta.tool_calls?.[0];
    id ??= call?.id;
    args += call?.function?.arguments ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
    usage = chunk.usage ?? usage;
  }
  assert.equal(id, 'call_12345xyz');
  assert.deepEqual(JSON.parse(args), { city: 'Paris' });
  assert.equal(finish, 'tool_calls');
  assert.equal(usage?.prompt_tokens, U.input);
  assert.equal(usage?.completion_tokens, U.output);
  assert.equal(upstream.requests.at(-1)?.path, '/v1/responses');
  oneResponsesExchange('SES-RT-O-STREAM');
});

test('a field the Responses API cannot express is refused by name before anything is sent', async () => {
  const before = upstream.requests.length;
  await assert.rejects(
    anthropic('SES-RT-REFUSE-A').messages.create({
      model: 'o3-pro',
      max_tokens: 256,
      stop_sequences: ['END'],
      messages: [{ role: 'user', content: 'Hello' }],
    }),
    (e: unknown) =>
      e instanceof Anthropic.BadRequestError && /TRANSLATION_UNSUPPORTED: stop_sequences: /.test(e.message),
  );
  await assert.rejects(
    anthropic('SES-RT-REFUSE-T').messages.create({
      model: 'o3-pro',
      max_tokens: 2048,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [{ role: 'user', content: 'Hello' }],
    }),
    (e: unknown) => e instanceof Anthropic.BadRequestError && /TRANSLATION_UNSUPPORTED: thinking: /.test(e.message),
  );
  await assert.rejects(
    openai('SES-RT-REFUSE-O').chat.completions.create({
      model: 'o3-pro',
      max_completion_tokens: 256,
      stop: ['END'],
      messages: [{ role: 'user', content: 'Hello' }],
    }),
    (e: unknown) => e instanceof OpenAI.BadRequestError && /TRANSLATION_UNSUPPORTED: stop: /.test(e.message),
  );
  assert.equal(upstream.requests.length, before, 'the fake upstream saw no request');
  const refusals = ledgerEntries(served.root).filter(
    (e) => e.event_type === 'PROMPT_REJECTED' && JSON.stringify(e).includes('TRANSLATION_UNSUPPORTED'),
  );
  assert.equal(refusals.length, 3);
});

test("a model on the operator's responses_only_models goes to /v1/responses; one that is not stays on Chat", async () => {
  const message = await anthropic('SES-RT-NANO').messages.create({
    model: 'gpt-4.1-nano',
    max_tokens: 64,
    messages: [{ role: 'user', content: 'Hello' }],
  });
  assert.equal(upstream.requests.at(-1)?.path, '/v1/responses');
  assert.deepEqual(message.content, [{ type: 'text', text: 'Sunny in Paris.' }]);
  oneResponsesExchange('SES-RT-NANO');
  await assert.rejects(
    openai('SES-RT-CODEX').chat.completions.create({
      model: 'gpt-5-codex',
      max_completion_tokens: 64,
      messages: [{ role: 'user', content: 'Hello' }],
    }),
    (e: unknown) => e instanceof OpenAI.NotFoundError,
    'the shipped list is replaced: gpt-5-codex goes to Chat Completions, which this upstream does not serve',
  );
  assert.equal(upstream.requests.at(-1)?.path, '/v1/chat/completions');
});

test('a model served on Chat Completions still goes there (the fake serves no other path: OpenAI 404 comes back)', async () => {
  await assert.rejects(
    openai('SES-RT-CHAT').chat.completions.create({
      model: 'gpt-4.1-mini',
      max_completion_tokens: 64,
      messages: [{ role: 'user', content: 'Hello' }],
    }),
    (e: unknown) => e instanceof OpenAI.NotFoundError,
  );
  assert.equal(upstream.requests.at(-1)?.path, '/v1/chat/completions');
});
