// The official OpenAI SDK's Responses API (`responses.create`, `responses.stream`) asking for a Claude model through
// `cplane serve` (a real process on a bootstrapped root) in front of a local upstream speaking Anthropic's real wire
// format: the request translated to Messages before it is sent, the response (whole or streamed, events in order)
// translated back, one EXCHANGE each with the upstream's own usage.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import type { FunctionTool, ResponseInputItem } from 'openai/resources/responses/responses';
import { issueKey, ledgerEntries, startServed, type Served } from './harness.js';
import { assertAnthropicUpstreamUsage, exchangesIn, sdkClients } from './translated.js';
import { USAGE } from './upstream.js';

let served: Served;
let key: string;
const { openai } = sdkClients(() => ({ url: served.url, key }));

before(async () => {
  served = await startServed();
  key = issueKey('AGENT-RESPONSES');
});
after(async () => {
  await served.cleanup();
});

const weatherTool: FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'weather',
  parameters: { type: 'object', properties: { city: { type: 'string' } } },
  strict: false,
};

/** The Responses usage a client reads: every prompt token in input_tokens, the cache buckets in its details. */
function assertResponsesUsage(usage: OpenAI.Responses.ResponseUsage | undefined): void {
  const prompt = USAGE.input + USAGE.cacheWrite + USAGE.cacheRead;
  assert.equal(usage?.input_tokens, prompt);
  assert.equal(usage?.input_tokens_details.cached_tokens, USAGE.cacheRead);
  assert.equal(usage?.input_tokens_details.cache_write_tokens, USAGE.cacheWrite);
  assert.equal(usage?.output_tokens, USAGE.output);
  assert.equal(usage?.output_tokens_details.reasoning_tokens, 0);
  assert.equal(usage?.total_tokens, prompt + USAGE.output);
}

function oneExchange(session: string): Record<string, unknown> {
  const [exchange, ...more] = exchangesIn(served.root, session);
  assert.equal(more.length, 0, `one EXCHANGE for ${session}`);
  assert.ok(exchange);
  assertAnthropicUpstreamUsage(exchange.metadata);
  assert.equal(exchange.metadata.surface, 'openai.responses');
  return exchange.metadata;
}

test('responses.create → claude-sonnet-4-5, whole: sent to Messages, read back as a response with exact usage', async () => {
  const session = 'SES-R-JSON';
  const response = await openai(session).responses.create({
    model: 'claude-sonnet-4-5',
    instructions: 'Be brief.',
    input: [
      { role: 'developer', content: 'Answer in English.' },
      { role: 'user', content: 'Hello' },
    ],
    max_output_tokens: 256,
    temperature: 0.5,
    top_p: 0.9,
    safety_identifier: 'user-7',
    store: false,
  });
  const seen = served.upstream.requests.at(-1);
  assert.equal(seen?.path, '/v1/messages');
  assert.equal(seen?.headers['x-api-key'], 'sk-ant-upstream-SECRET-0123456789');
  assert.deepEqual(seen?.body, {
    model: 'claude-sonnet-4-5',
    max_tokens: 256,
    system: 'Be brief.\n\nAnswer in English.',
    messages: [{ role: 'user', content: 'Hello' }],
    temperature: 0.5,
    top_p: 0.9,
    metadata: { user_id: 'user-7' },
  });
  assert.equal(response.object, 'response');
  assert.equal(response.status, 'completed');
  assert.equal(response.incomplete_details, null);
  assert.equal(response.model, 'claude-sonnet-4-5');
  assert.equal(response.output_text, 'Hello from upstream');
  assert.equal(response.output.length, 1);
  const [message] = response.output;
  assert.ok(message?.type === 'message');
  assert.equal(message.role, 'assistant');
  assert.equal(message.status, 'completed');
  assert.deepEqual(message.content, [
    { type: 'output_text', text: 'Hello from upstream', annotations: [], logprobs: [] },
  ]);
  assertResponsesUsage(response.usage);
  const meta = oneExchange(session);
  assert.equal(meta.stream, false);
  assert.deepEqual(JSON.parse(String(meta.response)), [{ type: 'text', text: 'Hello from upstream' }]);
});

test('responses.stream → claude-sonnet-4-5 with a function tool: events in order, the call and usage exact', async () => {
  const session = 'SES-R-STREAM';
  const stream = openai(session).responses.stream({
    model: 'claude-sonnet-4-5',
    input: 'weather in Paris?',
    tools: [weatherTool],
    tool_choice: 'auto',
  });
  const events: string[] = [];
  const sequence: number[] = [];
  let text = '';
  let args = '';
  for await (const event of stream) {
    events.push(event.type);
    sequence.push(event.sequence_number);
    if (event.type === 'response.output_text.delta') text += event.delta;
    if (event.type === 'response.function_call_arguments.delta') args += event.delta;
  }
  const final = await stream.finalResponse();
  assert.deepEqual(events, [
    'response.created',
    'response.in_progress',
    'response.output_item.added',
    'response.content_part.added',
    'response.output_text.delta',
    'response.output_text.delta',
    'response.output_text.done',
    'response.content_part.done',
    'response.output_item.done',
    'response.output_item.added',
    'response.function_call_arguments.delta',
    'response.function_call_arguments.delta',
    'response.function_call_arguments.done',
    'response.output_item.done',
    'response.completed',
  ]);
  assert.deepEqual(
    sequence,
    events.map((_, i) => i),
  );
  assert.equal(text, 'Hello from upstream');
  assert.deepEqual(JSON.parse(args), { city: 'Paris' });
  assert.equal(final.status, 'completed');
  assert.equal(final.output_text, 'Hello from upstream');
  const call = final.output[1];
  assert.ok(call?.type === 'function_call');
  assert.equal(call.call_id, 'toolu_01', "the call keeps Anthropic's tool_use id");
  assert.equal(call.name, 'get_weather');
  assert.deepEqual(JSON.parse(call.arguments), { city: 'Paris' });
  assertResponsesUsage(final.usage);
  const sent = served.upstream.requests.at(-1)?.body;
  assert.equal(sent?.stream, true);
  assert.equal(sent?.max_tokens, 32_000, "no max_output_tokens: the gateway's output bound, as reserved");
  assert.deepEqual(sent?.tools, [
    { name: 'get_weather', description: 'weather', input_schema: weatherTool.parameters },
  ]);
  assert.deepEqual(sent?.tool_choice, { type: 'auto' });
  const meta = oneExchange(session);
  assert.equal(meta.stream, true);
  assert.equal(meta.finish_reason, 'tool_use');
});

test('responses.create → claude-sonnet-4-5, a function tool round trip: the output fed back, ids kept', async () => {
  const session = 'SES-R-TOOLS';
  const client = openai(session);
  const question: ResponseInputItem = { role: 'user', content: 'weather in Paris?' };
  const first = await client.responses.create({
    model: 'claude-sonnet-4-5',
    input: [question],
    tools: [weatherTool],
    tool_choice: 'required',
    parallel_tool_calls: false,
    max_output_tokens: 256,
  });
  assert.deepEqual(served.upstream.requests.at(-1)?.body?.tool_choice, {
    type: 'any',
    disable_parallel_tool_use: true,
  });
  const call = first.output.find((item) => item.type === 'function_call');
  assert.ok(call?.type === 'function_call');
  assert.equal(call.call_id, 'toolu_01');
  assert.deepEqual(JSON.parse(call.arguments), { city: 'Paris' });
  const second = await client.responses.create({
    model: 'claude-sonnet-4-5',
    input: [
      question,
      ...(first.output as ResponseInputItem[]),
      { type: 'function_call_output', call_id: call.call_id, output: '18°C, sunny' },
    ],
    tools: [weatherTool],
    max_output_tokens: 256,
  });
  assert.equal(second.status, 'completed');
  assert.equal(second.output_text, 'Hello from upstream');
  assert.deepEqual(served.upstream.requests.at(-1)?.body?.messages, [
    { role: 'user', content: 'weather in Paris?' },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Hello from upstream' },
        { type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: { city: 'Paris' } },
      ],
    },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01', content: '18°C, sunny' }] },
  ]);
  const exchanges = exchangesIn(served.root, session);
  assert.equal(exchanges.length, 2);
  for (const e of exchanges) assertAnthropicUpstreamUsage(e.metadata);
});

test('what Messages cannot express is refused with TRANSLATION_UNSUPPORTED naming it; nothing reaches the upstream', async () => {
  const before = served.upstream.requests.length;
  const refused = async (session: string, body: OpenAI.Responses.ResponseCreateParamsNonStreaming, field: RegExp) =>
    assert.rejects(
      openai(session).responses.create(body),
      (e: unknown) =>
        e instanceof OpenAI.BadRequestError && /TRANSLATION_UNSUPPORTED/.test(e.message) && field.test(e.message),
    );
  await refused(
    'SES-R-REFUSE-TOOL',
    { model: 'claude-sonnet-4-5', input: 'news?', tools: [{ type: 'web_search' }] },
    /tools\[0\]\.type: the built-in tool "web_search"/,
  );
  await refused(
    'SES-R-REFUSE-PREV',
    { model: 'claude-sonnet-4-5', input: 'and then?', previous_response_id: 'resp_123' },
    /previous_response_id/,
  );
  await refused(
    'SES-R-REFUSE-STRICT',
    { model: 'claude-sonnet-4-5', input: 'hi', tools: [{ ...weatherTool, strict: true }] },
    /tools\[0\]\.strict/,
  );
  assert.equal(served.upstream.requests.length, before, 'the fake upstream saw no request');
  const refusals = ledgerEntries(served.root).filter(
    (e) => e.event_type === 'PROMPT_REJECTED' && JSON.stringify(e).includes('TRANSLATION_UNSUPPORTED'),
  );
  assert.equal(refusals.length, 3);
});

test('an upstream error on a translated call reaches the Responses client in OpenAI’s error shape, its message kept', async () => {
  const session = 'SES-R-UPSTREAM-400';
  served.upstream.faults.push({
    status: 400,
    body: { type: 'error', error: { type: 'invalid_request_error', message: 'messages.0.content: empty' } },
  });
  await assert.rejects(
    openai(session).responses.create({ model: 'claude-sonnet-4-5', input: 'Hello', max_output_tokens: 16 }),
    (e: unknown) => e instanceof OpenAI.BadRequestError && /messages\.0\.content: empty/.test(e.message),
  );
  const [failed] = exchangesIn(served.root, session);
  assert.equal(failed?.decision, 'ERROR');
  assert.equal(failed?.metadata.upstream_surface, 'anthropic.messages');
});

test('a translated stream cut mid-way: the SDK stream fails, the EXCHANGE keeps the partial text, usage unknown', async () => {
  const session = 'SES-R-DIED';
  served.upstream.faults.push({ dieAfterFrames: 4 });
  const stream = openai(session).responses.stream({
    model: 'claude-sonnet-4-5',
    input: 'Hello',
    max_output_tokens: 64,
  });
  await assert.rejects(stream.finalResponse(), (e: unknown) => {
    assert.ok(!String(e).includes(served.upstream.url), "the client is not told the upstream's address");
    return true;
  });
  const [cut] = exchangesIn(served.root, session);
  assert.equal(cut?.decision, 'ERROR');
  assert.equal(cut?.metadata.usage_complete, false);
  assert.match(String(cut?.metadata.response), /Hello /);
});
