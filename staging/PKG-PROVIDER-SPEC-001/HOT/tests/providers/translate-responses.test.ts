// The Responses API as a translation source, on its own: every mapped field, every refused one (named), whole
// replies and streams back in the Responses API's shapes (as the official openai SDK's types describe them).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { translatorFor, type Translator } from '../../providers/translate/index.js';
import { TranslationRefused } from '../../providers/translate/refusal.js';
import type { SseFrame } from '../../providers/wire/sse.js';

const NOW = 1_700_000_000;
const r2a = translatorFor('openai.responses', 'anthropic.messages', () => NOW) as Translator;
const CALL = { model: 'claude-sonnet-4-5', stream: false, defaultMaxTokens: 4096 };
const PNG = 'iVBORw0KGgo=';

function ok(result: ReturnType<Translator['request']>): Record<string, unknown> {
  assert.ok(result.ok, result.ok ? '' : `${result.refusal.field}: ${result.refusal.why}`);
  return result.value;
}

function refusedField(body: Record<string, unknown>): string {
  const result = r2a.request({ model: 'claude-sonnet-4-5', input: 'hi', ...body }, CALL);
  assert.ok(!result.ok, `expected a refusal of ${JSON.stringify(body)}`);
  return result.refusal.field;
}

const tool = (extra: Record<string, unknown> = {}) => ({
  type: 'function',
  name: 'f',
  description: 'does f',
  parameters: { type: 'object', properties: { x: { type: 'number' } } },
  strict: false,
  ...extra,
});

test('Responses → Messages request: instructions and leading developer text, turns merged as Messages wants them', () => {
  const body = ok(
    r2a.request(
      {
        model: 'claude-sonnet-4-5',
        instructions: 'Be brief.',
        input: [
          { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'English only.' }] },
          {
            role: 'user',
            content: [
              { type: 'input_text', text: 'look' },
              { type: 'input_image', detail: 'auto', image_url: `data:image/png;base64,${PNG}` },
              { type: 'input_image', image_url: 'https://example.com/a.jpg' },
            ],
          },
          {
            id: 'msg_0_msg_01',
            type: 'message',
            role: 'assistant',
            status: 'completed',
            content: [{ type: 'output_text', text: 'calling', annotations: [], logprobs: [] }],
          },
          {
            id: 'fc_call_1',
            type: 'function_call',
            status: 'completed',
            call_id: 'call_1',
            name: 'f',
            arguments: '{"x":1}',
          },
          { type: 'function_call', call_id: 'call_2', name: 'f', arguments: '' },
          { type: 'function_call_output', call_id: 'call_1', output: 'r1' },
          {
            type: 'function_call_output',
            call_id: 'call_2',
            output: [
              { type: 'input_text', text: 'r2' },
              { type: 'input_image', image_url: 'https://example.com/r.png' },
            ],
          },
          { role: 'user', content: 'and now?' },
        ],
        tools: [tool()],
        tool_choice: { type: 'function', name: 'f' },
        parallel_tool_calls: false,
        temperature: 0.2,
        top_p: 0.5,
        user: 'u-1',
        store: false,
        include: [],
        reasoning: null,
        text: { format: { type: 'text' } },
        truncation: 'disabled',
        prompt_cache_key: 'k',
        metadata: {},
        stream: true,
      },
      CALL,
    ),
  );
  assert.deepEqual(body, {
    model: 'claude-sonnet-4-5',
    max_tokens: 4096,
    system: 'Be brief.\n\nEnglish only.',
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
          { type: 'image', source: { type: 'url', url: 'https://example.com/a.jpg' } },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'calling' },
          { type: 'tool_use', id: 'call_1', name: 'f', input: { x: 1 } },
          { type: 'tool_use', id: 'call_2', name: 'f', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_1', content: 'r1' },
          {
            type: 'tool_result',
            tool_use_id: 'call_2',
            content: [
              { type: 'text', text: 'r2' },
              { type: 'image', source: { type: 'url', url: 'https://example.com/r.png' } },
            ],
          },
        ],
      },
      { role: 'user', content: 'and now?' },
    ],
    temperature: 0.2,
    top_p: 0.5,
    tools: [{ name: 'f', description: 'does f', input_schema: tool().parameters }],
    tool_choice: { type: 'tool', name: 'f', disable_parallel_tool_use: true },
    metadata: { user_id: 'u-1' },
    stream: true,
  });
  // What Codex CLI sends beside its conversation (no reasoning asked for, so no summary or encrypted content to give).
  const codex = ok(
    r2a.request(
      {
        model: 'm',
        input: 'hi',
        tool_choice: 'auto',
        parallel_tool_calls: true,
        reasoning: { summary: 'auto' },
        store: false,
        include: ['reasoning.encrypted_content'],
        prompt_cache_key: '01a2',
        client_metadata: { thread_id: '01a2', turn_id: '01a3' },
        stream: true,
      },
      CALL,
    ),
  );
  assert.deepEqual(codex, { model: 'm', max_tokens: 4096, messages: [{ role: 'user', content: 'hi' }], stream: true });
  // Messages takes a tool choice only beside tools: without any, `none` and the parallel flag ask nothing.
  const bare = ok(
    r2a.request(
      { model: 'm', input: 'hi', max_output_tokens: 9, tools: [], tool_choice: 'none', parallel_tool_calls: false },
      CALL,
    ),
  );
  assert.deepEqual(bare, { model: 'm', max_tokens: 9, messages: [{ role: 'user', content: 'hi' }] });
});

test('Responses → Messages request: what Messages cannot express is refused, naming the field', () => {
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ tools: [{ type: 'web_search' }] }, 'tools[0].type'],
    [{ tools: [{ type: 'file_search', vector_store_ids: ['vs_1'] }] }, 'tools[0].type'],
    [{ tools: [tool({ strict: true })] }, 'tools[0].strict'],
    [{ tools: [{ type: 'function', name: 'f', parameters: null }] }, 'tools[0].strict'],
    [{ tools: [tool({ defer_loading: true })] }, 'tools[0].defer_loading'],
    [{ tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [] } }, 'tool_choice.type'],
    [{ tool_choice: { type: 'web_search_preview' } }, 'tool_choice.type'],
    [{ tool_choice: 'required' }, 'tool_choice'],
    [{ temperature: 1.5 }, 'temperature'],
    [{ reasoning: { effort: 'high' } }, 'reasoning'],
    [{ include: ['message.output_text.logprobs'] }, 'include'],
    [{ reasoning: { summary: 'auto', effort: 'low' } }, 'reasoning'],
    [{ client_metadata: { n: 1 } }, 'client_metadata'],
    [{ previous_response_id: 'resp_1' }, 'previous_response_id'],
    [{ conversation: 'conv_1' }, 'conversation'],
    [{ store: true }, 'store'],
    [{ background: true }, 'background'],
    [{ text: { format: { type: 'json_schema', name: 's', schema: {} } } }, 'text'],
    [{ truncation: 'auto' }, 'truncation'],
    [{ metadata: { team: 'a' } }, 'metadata'],
    [{ max_tool_calls: 3 }, 'max_tool_calls'],
    [{ top_logprobs: 2 }, 'top_logprobs'],
    [{ service_tier: 'flex' }, 'service_tier'],
    [{ prompt: { id: 'pmpt_1' } }, 'prompt'],
    [{ user: 'a', safety_identifier: 'b' }, 'safety_identifier'],
    [{ frequency_penalty: 0 }, 'frequency_penalty'],
    [{ input: [{ type: 'reasoning', id: 'rs_1', summary: [] }] }, 'input[0].type'],
    [{ input: [{ type: 'web_search_call', id: 'ws_1', status: 'completed' }] }, 'input[0].type'],
    [{ input: [{ type: 'item_reference', id: 'msg_1' }] }, 'input[0].type'],
    [
      {
        input: [
          { role: 'user', content: 'a' },
          { role: 'system', content: 'late' },
        ],
      },
      'input[1].role',
    ],
    [{ input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file_1' }] }] }, 'input[0].content[0].type'],
    [
      { input: [{ role: 'user', content: [{ type: 'input_image', detail: 'high', image_url: 'https://x/y.png' }] }] },
      'input[0].content[0].detail',
    ],
    [
      { input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file_1' }] }] },
      'input[0].content[0].file_id',
    ],
    [
      { input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'ftp://x' }] }] },
      'input[0].content[0].image_url',
    ],
    [
      {
        input: [
          {
            role: 'assistant',
            content: [{ type: 'output_text', text: 'x', annotations: [{ type: 'url_citation', url: 'u' }] }],
          },
        ],
      },
      'input[0].content[0].annotations',
    ],
    [{ input: [{ role: 'assistant', content: [{ type: 'refusal', refusal: 'no' }] }] }, 'input[0].content[0].type'],
    [{ input: [{ type: 'function_call', call_id: 'call 1', name: 'f', arguments: '{}' }] }, 'input[0].call_id'],
    [{ input: [{ type: 'function_call', call_id: 'c', name: 'f', arguments: '{x' }] }, 'input[0].arguments'],
    [{ input: [{ type: 'function_call', call_id: 'c', name: 'f', arguments: '[1]' }] }, 'input[0].arguments'],
    [
      { input: [{ type: 'function_call_output', call_id: 'c', output: 'r', caller: { type: 'direct' } }] },
      'input[0].caller',
    ],
    [{ input: [{ role: 'tool', content: 'x' }] }, 'input[0].role'],
    [{ input: 7 }, 'input'],
    [{ instructions: ['a'] }, 'instructions'],
  ];
  for (const [body, field] of cases) assert.equal(refusedField(body), field, JSON.stringify(body));
});

const anthropicReply = (content: unknown[], stop: string, usage: Record<string, unknown> = {}) => ({
  id: 'msg_01',
  type: 'message',
  role: 'assistant',
  model: 'claude-sonnet-4-5',
  content,
  stop_reason: stop,
  stop_sequence: null,
  usage: { input_tokens: 10, cache_creation_input_tokens: 2, cache_read_input_tokens: 30, output_tokens: 5, ...usage },
});

function reply(body: Record<string, unknown>): Record<string, unknown> {
  const result = r2a.reply(body);
  assert.ok(result.ok, result.ok ? '' : `${result.refusal.field}: ${result.refusal.why}`);
  return result.value;
}

test('whole replies: items in order with their ids, stop reasons as status, usage bucket by bucket', () => {
  const response = reply(
    anthropicReply(
      [
        { type: 'text', text: 'one' },
        { type: 'tool_use', id: 'toolu_1', name: 'f', input: { x: 1 } },
        { type: 'text', text: 'two' },
      ],
      'tool_use',
    ),
  );
  assert.deepEqual(response, {
    id: 'resp_msg_01',
    object: 'response',
    created_at: NOW,
    model: 'claude-sonnet-4-5',
    error: null,
    status: 'completed',
    incomplete_details: null,
    output: [
      {
        id: 'msg_0_msg_01',
        type: 'message',
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text: 'one', annotations: [], logprobs: [] }],
      },
      {
        id: 'fc_toolu_1',
        type: 'function_call',
        status: 'completed',
        arguments: '{"x":1}',
        call_id: 'toolu_1',
        name: 'f',
      },
      {
        id: 'msg_2_msg_01',
        type: 'message',
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text: 'two', annotations: [], logprobs: [] }],
      },
    ],
    usage: {
      input_tokens: 42,
      input_tokens_details: { cached_tokens: 30, cache_write_tokens: 2 },
      output_tokens: 5,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 47,
    },
  });
  const cut = reply(anthropicReply([{ type: 'text', text: 'x' }], 'max_tokens'));
  assert.deepEqual([cut.status, cut.incomplete_details], ['incomplete', { reason: 'max_output_tokens' }]);
  const refused = reply(anthropicReply([], 'refusal'));
  assert.deepEqual([refused.status, refused.incomplete_details], ['incomplete', { reason: 'content_filter' }]);
  const unknown = reply(anthropicReply([], 'end_turn', { cache_creation_input_tokens: null }));
  assert.deepEqual(unknown.usage, {
    input_tokens: null,
    input_tokens_details: { cached_tokens: 30, cache_write_tokens: null },
    output_tokens: 5,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: null,
  });
  for (const [body, field] of [
    [anthropicReply([], 'pause_turn'), 'stop_reason'],
    [anthropicReply([{ type: 'thinking', thinking: 'hm', signature: 's' }], 'end_turn'), 'content[0].type'],
  ] as const) {
    const result = r2a.reply(body);
    assert.ok(!result.ok);
    assert.equal(result.refusal.field, field);
  }
});

const sse = (type: string, body: Record<string, unknown>): SseFrame => {
  const data = JSON.stringify({ type, ...body });
  return { raw: `event: ${type}\ndata: ${data}\n\n`, event: type, data };
};

const start = sse('message_start', {
  message: { id: 'msg_01', model: 'claude-sonnet-4-5', usage: { input_tokens: 10, output_tokens: 1 } },
});

function events(frames: SseFrame[]): Array<Record<string, unknown>> {
  const stream = r2a.stream();
  return frames
    .flatMap((f) => stream.push(f))
    .map((f) => {
      const json = JSON.parse(f.data ?? '') as Record<string, unknown>;
      assert.equal(f.event, json.type, 'each event named as its type says');
      return json;
    });
}

test('stream: a call with no input has arguments {}, max_tokens ends in response.incomplete, numbered in order', () => {
  const out = events([
    start,
    sse('content_block_start', { index: 0, content_block: { type: 'tool_use', id: 'toolu_9', name: 'g', input: {} } }),
    sse('content_block_stop', { index: 0 }),
    sse('content_block_start', { index: 1, content_block: { type: 'text', text: '' } }),
    sse('ping', {}),
    sse('content_block_delta', { index: 1, delta: { type: 'text_delta', text: 'cut' } }),
    sse('content_block_stop', { index: 1 }),
    sse('message_delta', {
      delta: { stop_reason: 'max_tokens', stop_sequence: null },
      usage: { input_tokens: 10, cache_creation_input_tokens: 0, cache_read_input_tokens: 4, output_tokens: 8 },
    }),
    sse('message_stop', {}),
  ]);
  assert.deepEqual(
    out.map((e) => e.type),
    [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.incomplete',
    ],
  );
  assert.deepEqual(
    out.map((e) => e.sequence_number),
    out.map((_, i) => i),
  );
  assert.equal(out[3]?.arguments, '{}');
  assert.deepEqual(out[7], {
    type: 'response.output_text.delta',
    sequence_number: 7,
    item_id: 'msg_1_msg_01',
    output_index: 1,
    content_index: 0,
    delta: 'cut',
    logprobs: [],
  });
  const final = out.at(-1)?.response as Record<string, unknown>;
  assert.equal(final.status, 'incomplete');
  assert.deepEqual(final.incomplete_details, { reason: 'max_output_tokens' });
  assert.deepEqual(
    (final.output as Array<Record<string, unknown>>).map((i) => [i.type, i.id]),
    [
      ['function_call', 'fc_toolu_9'],
      ['message', 'msg_1_msg_01'],
    ],
  );
  assert.deepEqual(final.usage, {
    input_tokens: 14,
    input_tokens_details: { cached_tokens: 4, cache_write_tokens: 0 },
    output_tokens: 8,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 22,
  });
});

test('stream: an upstream error becomes an error event; thinking and unknown deltas are refused', () => {
  const [error] = events([sse('error', { error: { type: 'overloaded_error', message: 'Overloaded' } })]);
  assert.deepEqual(error, {
    type: 'error',
    sequence_number: 0,
    code: 'overloaded_error',
    message: 'Overloaded',
    param: null,
  });
  assert.throws(
    () => events([start, sse('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '' } })]),
    (e: unknown) => e instanceof TranslationRefused && e.refusal.field === 'content_block.type',
  );
  assert.throws(
    () =>
      events([
        start,
        sse('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
        sse('content_block_delta', { index: 0, delta: { type: 'citations_delta', citation: {} } }),
      ]),
    (e: unknown) => e instanceof TranslationRefused && e.refusal.field === 'delta.type',
  );
});

test('Responses → Chat and → Gemini compose through Messages, usage carried across both steps', () => {
  const r2c = translatorFor('openai.responses', 'openai.chat') as Translator;
  const r2g = translatorFor('openai.responses', 'gemini.generate') as Translator;
  const body = { model: 'x', instructions: 'Be brief.', input: 'Hello', max_output_tokens: 64 };
  assert.deepEqual(ok(r2c.request(body, CALL)), {
    model: 'x',
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hello' },
    ],
    max_completion_tokens: 64,
  });
  assert.deepEqual(ok(r2g.request(body, CALL)), {
    systemInstruction: { parts: [{ text: 'Be brief.' }] },
    contents: [{ role: 'user', parts: [{ text: 'Hello' }] }],
    generationConfig: { maxOutputTokens: 64 },
  });
  const usage = { prompt_tokens: 50, completion_tokens: 7, prompt_tokens_details: { cached_tokens: 20 } };
  const chat = {
    id: 'c1',
    object: 'chat.completion',
    model: 'gpt-4.1-mini',
    choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
    usage,
  };
  const back = r2c.reply(chat);
  assert.ok(back.ok);
  assert.equal(back.value.status, 'completed');
  assert.deepEqual((back.value.usage as Record<string, unknown>).input_tokens_details, {
    cached_tokens: 20,
    cache_write_tokens: 0,
  });
  assert.equal((back.value.usage as Record<string, unknown>).input_tokens, 50);
});
