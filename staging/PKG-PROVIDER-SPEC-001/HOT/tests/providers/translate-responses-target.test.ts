// Messages → the Responses API (a translation target): the request field by field or refused by name, the response
// object and its stream (as OpenAI's Responses reference shows them) read back as a Message, usage bucket by bucket.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type Translated, type Translator, translatorFor } from '../../providers/translate/index.js';
import type { SseFrame } from '../../providers/wire/sse.js';
import type { WireSurface } from '../../providers/wire/spec.js';

function pair(client: WireSurface): Translator {
  const translator = translatorFor(client, 'openai.responses');
  if (translator === null) throw new Error(`no ${client} → Responses translator`);
  return translator;
}

const m2r = pair('anthropic.messages');
const c2r = pair('openai.chat');

function ok<T>(t: Translated<T>): T {
  if (!t.ok) throw new Error(`refused: ${t.refusal.field}: ${t.refusal.why}`);
  return t.value;
}

function refusedField<T>(t: Translated<T>): string {
  assert.equal(t.ok, false);
  return t.ok ? '' : t.refusal.field;
}

const base = { model: 'o3-pro', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] };

test('Messages → Responses request: turns as input items in order, call ids kept, tools, choice, limits', () => {
  const schema = { type: 'object', properties: { city: { type: 'string' } } };
  const body = ok(
    m2r.request({
      model: 'o3-pro',
      max_tokens: 300,
      temperature: 0.5,
      top_p: 0.9,
      thinking: { type: 'disabled' },
      output_config: { effort: 'high' },
      tools: [
        { name: 'get_weather', description: 'weather', input_schema: schema, cache_control: { type: 'ephemeral' } },
      ],
      tool_choice: { type: 'tool', name: 'get_weather' },
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'look' },
            { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'checking' },
            { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
            { type: 'tool_use', id: 'toolu_2', name: 'get_weather', input: { city: 'Rome' } },
          ],
        },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 'toolu_1',
              content: [
                { type: 'text', text: '18' },
                { type: 'text', text: '°C' },
              ],
            },
            { type: 'tool_result', tool_use_id: 'toolu_2', is_error: true, content: 'no station' },
            {
              type: 'tool_result',
              tool_use_id: 'toolu_3',
              content: [
                { type: 'text', text: 'map' },
                { type: 'image', source: { type: 'base64', media_type: 'image/webp', data: 'UklG' } },
              ],
            },
            { type: 'text', text: 'and?' },
          ],
        },
      ],
    }),
  );
  assert.deepEqual(body, {
    model: 'o3-pro',
    input: [
      {
        type: 'message',
        role: 'user',
        content: [
          { type: 'input_text', text: 'look' },
          { type: 'input_image', image_url: 'https://example.com/a.png', detail: 'auto' },
        ],
      },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'checking' }] },
      { type: 'function_call', call_id: 'toolu_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
      { type: 'function_call', call_id: 'toolu_2', name: 'get_weather', arguments: '{"city":"Rome"}' },
      { type: 'function_call_output', call_id: 'toolu_1', output: '18°C' },
      { type: 'function_call_output', call_id: 'toolu_2', output: 'Error: no station' },
      {
        type: 'function_call_output',
        call_id: 'toolu_3',
        output: [
          { type: 'input_text', text: 'map' },
          { type: 'input_image', image_url: 'data:image/webp;base64,UklG', detail: 'auto' },
        ],
      },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'and?' }] },
    ],
    max_output_tokens: 300,
    temperature: 0.5,
    top_p: 0.9,
    tools: [{ type: 'function', name: 'get_weather', description: 'weather', parameters: schema, strict: false }],
    tool_choice: { type: 'function', name: 'get_weather' },
    reasoning: { effort: 'high' },
    store: false,
  });
});

test('Messages → Responses refuses by name what the Responses API cannot express, before anything is sent', () => {
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ ...base, stop_sequences: ['END'] }, 'stop_sequences'],
    [{ ...base, top_k: 5 }, 'top_k'],
    [{ ...base, output_config: { effort: 'extreme' } }, 'output_config.effort'],
    [{ ...base, output_config: { format: { type: 'json_schema', schema: {} } } }, 'output_config.format'],
    [{ ...base, thinking: { type: 'enabled', budget_tokens: 2048 } }, 'thinking'],
    [{ ...base, tools: [{ type: 'web_search_20250305', name: 'web_search' }] }, 'tools[0].type'],
    [
      { ...base, tool_choice: { type: 'auto', disable_parallel_tool_use: 'yes' } },
      'tool_choice.disable_parallel_tool_use',
    ],
    [{ ...base, metadata: { user_id: 'u', tier: 'x' } }, 'metadata.tier'],
    [
      { ...base, messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'text', data: 'x' } }] }] },
      'messages[0].content[0].type',
    ],
    [
      { ...base, messages: [{ role: 'assistant', content: [{ type: 'thinking', thinking: 'x', signature: 's' }] }] },
      'messages[0].content[0].type',
    ],
    [
      {
        ...base,
        messages: [
          {
            role: 'user',
            content: [
              {
                type: 'tool_result',
                tool_use_id: 't',
                is_error: true,
                content: [{ type: 'image', source: { type: 'url', url: 'https://example.com/x.png' } }],
              },
            ],
          },
        ],
      },
      'messages[0].content[0].is_error',
    ],
    [{ ...base, messages: [{ role: 'user', content: [] }] }, 'messages[0].content'],
  ];
  for (const [body, field] of cases) assert.equal(refusedField(m2r.request(body)), field, JSON.stringify(body));
});

test('Chat → Responses composes through Messages; a refusal names the Chat field', () => {
  const body = ok(
    c2r.request({
      model: 'o3-pro',
      max_completion_tokens: 64,
      user: 'u-1',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hi' },
      ],
    }),
  );
  assert.deepEqual(body, {
    model: 'o3-pro',
    instructions: 'Be brief.',
    input: [{ type: 'message', role: 'user', content: 'hi' }],
    max_output_tokens: 64,
    safety_identifier: 'u-1',
    store: false,
  });
  const refused = c2r.request({ model: 'o3-pro', max_completion_tokens: 64, stop: 'END', messages: base.messages });
  assert.equal(refusedField(refused), 'stop');
});

// The response object as the Responses reference shows it: a reasoning item, then the output message / calls.
const reasoning = { id: 'rs_1', type: 'reasoning', summary: [] };
const usage = {
  input_tokens: 328,
  input_tokens_details: { cached_tokens: 128 },
  output_tokens: 52,
  output_tokens_details: { reasoning_tokens: 30 },
  total_tokens: 380,
};
const responseObject = (output: unknown[], extra: Record<string, unknown> = {}) => ({
  id: 'resp_1',
  object: 'response',
  created_at: 1741476777,
  status: 'completed',
  error: null,
  incomplete_details: null,
  model: 'o3-pro-2025-06-10',
  output,
  usage,
  ...extra,
});

test('a Responses reply as a Message: items in order, call ids, stop reasons, usage bucket by bucket', () => {
  const text = {
    type: 'message',
    id: 'msg_1',
    status: 'completed',
    role: 'assistant',
    content: [{ type: 'output_text', text: 'Hi', annotations: [] }],
  };
  const call = {
    type: 'function_call',
    id: 'fc_1',
    call_id: 'call_1',
    name: 'f',
    arguments: '{"a":1}',
    status: 'completed',
  };
  assert.deepEqual(ok(m2r.reply(responseObject([reasoning, text, call]))), {
    id: 'msg_resp_1',
    type: 'message',
    role: 'assistant',
    model: 'o3-pro-2025-06-10',
    content: [
      { type: 'text', text: 'Hi' },
      { type: 'tool_use', id: 'call_1', name: 'f', input: { a: 1 } },
    ],
    stop_reason: 'tool_use',
    stop_sequence: null,
    usage: { input_tokens: 200, cache_creation_input_tokens: 0, cache_read_input_tokens: 128, output_tokens: 52 },
  });
  const cut = responseObject([reasoning], {
    status: 'incomplete',
    incomplete_details: { reason: 'max_output_tokens' },
  });
  assert.equal(ok(m2r.reply(cut)).stop_reason, 'max_tokens');
  const filtered = responseObject([], { status: 'incomplete', incomplete_details: { reason: 'content_filter' } });
  assert.equal(ok(m2r.reply(filtered)).stop_reason, 'refusal');
  const refusal = { ...text, content: [{ type: 'refusal', refusal: 'I cannot help.' }] };
  const refused = ok(m2r.reply(responseObject([refusal])));
  assert.equal(refused.stop_reason, 'refusal');
  assert.deepEqual(refused.content, [{ type: 'text', text: 'I cannot help.' }]);
  assert.deepEqual(ok(m2r.reply(responseObject([text], { usage: null }))).usage, {
    input_tokens: null,
    cache_creation_input_tokens: null,
    cache_read_input_tokens: null,
    output_tokens: null,
  });
  const summarised = { ...reasoning, summary: [{ type: 'summary_text', text: 'thought' }] };
  assert.equal(refusedField(m2r.reply(responseObject([summarised]))), 'output[0].summary');
  assert.equal(refusedField(m2r.reply(responseObject([{ type: 'web_search_call', id: 'ws_1' }]))), 'output[0].type');
  assert.equal(refusedField(m2r.reply(responseObject([{ ...call, arguments: '{' }]))), 'output[0].arguments');
  assert.equal(refusedField(m2r.reply(responseObject([], { status: 'in_progress' }))), 'status');
});

const ev = (data: Record<string, unknown>, n: number): SseFrame => {
  const text = JSON.stringify({ ...data, sequence_number: n });
  return { raw: `event: ${String(data.type)}\ndata: ${text}\n\n`, event: String(data.type), data: text };
};

function run(events: Array<Record<string, unknown>>): Array<Record<string, unknown>> {
  const stream = m2r.stream();
  return events.flatMap((e, n) => stream.push(ev(e, n))).map((f) => JSON.parse(f.data ?? 'null'));
}

test('a Responses stream as Messages events: text and refusal deltas, a call whose arguments come only whole', () => {
  const created = { type: 'response.created', response: responseObject([], { status: 'in_progress', usage: null }) };
  const at = { item_id: 'msg_1', output_index: 1, content_index: 0 };
  const out = run([
    created,
    { type: 'response.in_progress', response: created.response },
    { type: 'response.output_item.added', output_index: 0, item: reasoning },
    { type: 'response.output_item.done', output_index: 0, item: reasoning },
    {
      type: 'response.output_item.added',
      output_index: 1,
      item: { type: 'message', id: 'msg_1', role: 'assistant', content: [] },
    },
    { type: 'response.content_part.added', ...at, part: { type: 'output_text', text: '', annotations: [] } },
    { type: 'response.output_text.delta', ...at, delta: 'Hel' },
    { type: 'response.output_text.delta', ...at, delta: 'lo' },
    { type: 'response.output_text.done', ...at, text: 'Hello' },
    { type: 'response.content_part.done', ...at, part: { type: 'output_text', text: 'Hello' } },
    { type: 'response.output_item.done', output_index: 1, item: { type: 'message', id: 'msg_1' } },
    {
      type: 'response.output_item.added',
      output_index: 2,
      item: { type: 'function_call', id: 'fc_1', call_id: 'call_9', name: 'f', arguments: '' },
    },
    { type: 'response.function_call_arguments.done', item_id: 'fc_1', output_index: 2, arguments: '{"a":1}' },
    {
      type: 'response.output_item.done',
      output_index: 2,
      item: { type: 'function_call', id: 'fc_1', call_id: 'call_9', name: 'f', arguments: '{"a":1}' },
    },
    { type: 'response.completed', response: responseObject([]) },
  ]);
  assert.deepEqual(out, [
    {
      type: 'message_start',
      message: {
        id: 'msg_resp_1',
        type: 'message',
        role: 'assistant',
        model: 'o3-pro-2025-06-10',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 0, output_tokens: 0 },
      },
    },
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'lo' } },
    { type: 'content_block_stop', index: 0 },
    { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'call_9', name: 'f', input: {} } },
    { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"a":1}' } },
    { type: 'content_block_stop', index: 1 },
    {
      type: 'message_delta',
      delta: { stop_reason: 'tool_use', stop_sequence: null },
      usage: { input_tokens: 200, cache_creation_input_tokens: 0, cache_read_input_tokens: 128, output_tokens: 52 },
    },
    { type: 'message_stop' },
  ]);
  const refusal = run([
    created,
    { type: 'response.output_item.added', output_index: 0, item: { type: 'message', id: 'msg_1', content: [] } },
    { type: 'response.content_part.added', ...at, output_index: 0, part: { type: 'refusal', refusal: '' } },
    { type: 'response.refusal.delta', ...at, output_index: 0, delta: 'No.' },
    { type: 'response.completed', response: responseObject([]) },
  ]);
  assert.deepEqual(refusal.at(-2)?.delta, { stop_reason: 'refusal', stop_sequence: null });
  assert.deepEqual(refusal[2], { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'No.' } });
});

test('a Responses stream: failures become error events; an event with no Messages equivalent is refused', () => {
  const failed = run([
    { type: 'response.created', response: responseObject([], { status: 'in_progress' }) },
    {
      type: 'response.failed',
      response: responseObject([], { status: 'failed', error: { code: 'server_error', message: 'boom' } }),
    },
  ]);
  assert.deepEqual(failed.at(-1), { type: 'error', error: { type: 'api_error', message: 'boom' } });
  const errored = run([{ type: 'error', code: 'rate_limit_exceeded', message: 'slow down', param: null }]);
  assert.deepEqual(errored, [{ type: 'error', error: { type: 'api_error', message: 'slow down' } }]);
  const stream = m2r.stream();
  stream.push(ev({ type: 'response.created', response: responseObject([]) }, 0));
  assert.throws(
    () =>
      stream.push(
        ev({ type: 'response.reasoning_summary_text.delta', item_id: 'rs_1', output_index: 0, delta: 'x' }, 1),
      ),
    /response\.reasoning_summary_text\.delta/,
  );
  const late = m2r.stream();
  late.push(ev({ type: 'response.created', response: responseObject([]) }, 0));
  assert.throws(
    () =>
      late.push(ev({ type: 'response.function_call_arguments.delta', item_id: 'fc', output_index: 4, delta: '{' }, 1)),
    /output_index/,
  );
});

test('Gemini → Responses composes through Messages; a stream cut at max_output_tokens ends with max_tokens', () => {
  const g2r = pair('gemini.generate');
  assert.deepEqual(
    ok(
      g2r.request(
        {
          systemInstruction: { parts: [{ text: 'Be brief.' }] },
          contents: [{ role: 'user', parts: [{ text: 'hi' }] }],
          generationConfig: { maxOutputTokens: 32, temperature: 1.5 },
        },
        { model: 'o3-pro', stream: false, defaultMaxTokens: 32_000 },
      ),
    ),
    {
      model: 'o3-pro',
      instructions: 'Be brief.',
      input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] }],
      max_output_tokens: 32,
      temperature: 1.5,
      store: false,
    },
  );
  const cut = responseObject([], { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
  const out = run([
    { type: 'response.created', response: responseObject([], { status: 'in_progress', usage: null }) },
    { type: 'response.incomplete', response: cut },
  ]);
  assert.deepEqual(out.at(-2), {
    type: 'message_delta',
    delta: { stop_reason: 'max_tokens', stop_sequence: null },
    usage: { input_tokens: 200, cache_creation_input_tokens: 0, cache_read_input_tokens: 128, output_tokens: 52 },
  });
});
