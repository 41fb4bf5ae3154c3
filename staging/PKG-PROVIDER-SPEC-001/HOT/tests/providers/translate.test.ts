// The translators on their own: every mapped field, every refused one (named), hostile input bounded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { translatorFor, type Translator } from '../../providers/translate/index.js';
import { MAX_STREAM_BLOCKS, MAX_STREAM_TOOL_CALLS } from '../../providers/translate/stream.js';
import { TranslationRefused } from '../../providers/translate/refusal.js';
import type { SseFrame } from '../../providers/wire/sse.js';

const a2c = translatorFor('anthropic.messages', 'openai.chat') as Translator;
const c2a = translatorFor('openai.chat', 'anthropic.messages', () => 1_700_000_000) as Translator;

function ok(result: ReturnType<Translator['request']>): Record<string, unknown> {
  assert.ok(result.ok, result.ok ? '' : `${result.refusal.field}: ${result.refusal.why}`);
  return result.value;
}

function refusedField(result: ReturnType<Translator['request']>): string {
  assert.ok(!result.ok, 'expected a refusal');
  return result.refusal.field;
}

const PNG = 'iVBORw0KGgo=';

test('no translator between a surface and itself, nor to a surface that is no generation', () => {
  assert.equal(translatorFor('openai.chat', 'openai.chat'), null);
  assert.equal(translatorFor('anthropic.messages', 'openai.embeddings'), null);
});

test('Anthropic → Chat request: system blocks, images both ways, tool results first as tool messages, tools and choices', () => {
  const body = ok(
    a2c.request({
      model: 'gpt-4.1-mini',
      max_tokens: 100,
      system: [
        { type: 'text', text: 'one', cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'two' },
      ],
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
            { type: 'tool_use', id: 'toolu_1', name: 'f', input: { x: 1 } },
            { type: 'tool_use', id: 'toolu_2', name: 'g', input: {} },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'r1' }] },
            { type: 'tool_result', tool_use_id: 'toolu_2', content: 'r2' },
            { type: 'text', text: 'and now?' },
          ],
        },
      ],
      tools: [{ name: 'f', description: 'd', input_schema: { type: 'object' } }],
      tool_choice: { type: 'tool', name: 'f', disable_parallel_tool_use: true },
      top_p: 0.9,
      temperature: 0.5,
      stream: true,
    }),
  );
  assert.deepEqual(body, {
    model: 'gpt-4.1-mini',
    messages: [
      { role: 'system', content: 'one\n\ntwo' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
          { type: 'image_url', image_url: { url: 'https://example.com/a.jpg' } },
        ],
      },
      {
        role: 'assistant',
        content: 'calling',
        tool_calls: [
          { id: 'toolu_1', type: 'function', function: { name: 'f', arguments: '{"x":1}' } },
          { id: 'toolu_2', type: 'function', function: { name: 'g', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'toolu_1', content: 'r1' },
      { role: 'tool', tool_call_id: 'toolu_2', content: 'r2' },
      { role: 'user', content: [{ type: 'text', text: 'and now?' }] },
    ],
    max_completion_tokens: 100,
    temperature: 0.5,
    top_p: 0.9,
    tools: [{ type: 'function', function: { name: 'f', description: 'd', parameters: { type: 'object' } } }],
    tool_choice: { type: 'function', function: { name: 'f' } },
    parallel_tool_calls: false,
    stream: true,
    stream_options: { include_usage: true },
  });
  assert.equal(ok(a2c.request({ ...base, tool_choice: { type: 'any' } })).tool_choice, 'required');
  assert.equal(ok(a2c.request({ ...base, tool_choice: { type: 'none' } })).tool_choice, 'none');
  assert.equal(ok(a2c.request({ ...base, thinking: { type: 'disabled' } })).thinking, undefined);
});

const base = { model: 'gpt-4.1-mini', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };

test('Anthropic → Chat request: a failed tool (is_error: true) is a tool message whose content says so', () => {
  // Claude Code's turn after a tool failed: the failure as a tool_result with is_error, text blocks as content.
  const body = {
    model: 'gpt-4.1-mini',
    max_tokens: 32000,
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'run the tests' }] },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'toolu_01Bash', name: 'Bash', input: { command: 'npm test' } }],
      },
      {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 'toolu_01Bash',
            is_error: true,
            content: [{ type: 'text', text: 'Exit code 1\nnpm ERR! missing script: test' }],
          },
          { type: 'tool_result', tool_use_id: 'toolu_02', is_error: true },
          { type: 'tool_result', tool_use_id: 'toolu_03', is_error: false, content: 'fine' },
        ],
      },
    ],
  };
  assert.deepEqual((ok(a2c.request(body)).messages as unknown[]).slice(2), [
    { role: 'tool', tool_call_id: 'toolu_01Bash', content: 'Error: Exit code 1\nnpm ERR! missing script: test' },
    { role: 'tool', tool_call_id: 'toolu_02', content: 'Error' },
    { role: 'tool', tool_call_id: 'toolu_03', content: 'fine' },
  ]);
});
const userBlocks = (block: unknown) => ({ ...base, messages: [{ role: 'user', content: [block] }] });

test('Anthropic → Chat request: what Chat cannot express is refused, naming the field', () => {
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ ...base, thinking: { type: 'enabled', budget_tokens: 1024 } }, 'thinking'],
    [{ ...base, top_k: 5 }, 'top_k'],
    [{ ...base, service_tier: 'auto' }, 'service_tier'],
    [{ ...base, output_config: {} }, 'output_config'],
    [{ ...base, stop_sequences: ['a', 'b', 'c', 'd', 'e'] }, 'stop_sequences'],
    [{ ...base, metadata: { user_id: 'u', other: 1 } }, 'metadata.other'],
    [{ ...base, tools: [{ type: 'web_search_20250305', name: 'web_search' }] }, 'tools[0].type'],
    [{ ...base, tool_choice: { type: 'whatever' } }, 'tool_choice.type'],
    [userBlocks({ type: 'document', source: {} }), 'messages[0].content[0].type'],
    [userBlocks({ type: 'image', source: { type: 'file', file_id: 'f' } }), 'messages[0].content[0].source.type'],
    [
      userBlocks({ type: 'image', source: { type: 'base64', media_type: 'application/pdf', data: 'x' } }),
      'messages[0].content[0].source.media_type',
    ],
    [
      userBlocks({ type: 'tool_result', tool_use_id: 't', is_error: 'yes', content: 'e' }),
      'messages[0].content[0].is_error',
    ],
    [
      userBlocks({ type: 'tool_result', tool_use_id: 't', content: [{ type: 'image', source: {} }] }),
      'messages[0].content[0].content[0].type',
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
            role: 'assistant',
            content: [
              { type: 'tool_use', id: 't', name: 'f', input: {} },
              { type: 'text', text: 'after' },
            ],
          },
        ],
      },
      'messages[0].content[1]',
    ],
    [{ ...base, messages: [{ role: 'system', content: 'x' }] }, 'messages[0].role'],
    [{ ...base, messages: 'hi' }, 'messages'],
    [{ ...base, messages: [{ role: 'user', content: [] }] }, 'messages[0].content'],
    [{ ...base, system: [{ type: 'image' }] }, 'system[0].type'],
  ];
  for (const [body, field] of cases) assert.equal(refusedField(a2c.request(body)), field, JSON.stringify(body));
});

const chatBase = { model: 'claude-sonnet-4-5', max_completion_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };

test('Chat → Anthropic request: system and developer lead, tool messages grouped into one user turn, images, choices', () => {
  const body = ok(
    c2a.request({
      model: 'claude-sonnet-4-5',
      max_tokens: 50,
      messages: [
        { role: 'system', content: 'one' },
        { role: 'developer', content: [{ type: 'text', text: 'two' }] },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'look' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}`, detail: 'auto' } },
            { type: 'image_url', image_url: { url: 'https://example.com/a.jpg' } },
          ],
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"x":1}' } },
            { id: 'call_2', type: 'function', function: { name: 'g', arguments: '' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'r1' },
        { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: 'r2' }] },
        { role: 'user', content: 'and now?' },
      ],
      tools: [
        { type: 'function', function: { name: 'f', description: 'd', parameters: { type: 'object' } } },
        { type: 'function', function: { name: 'g' } },
      ],
      tool_choice: { type: 'function', function: { name: 'f' } },
      parallel_tool_calls: false,
      stop: ['x', 'y'],
      temperature: 1,
      top_p: 0.5,
      user: 'u-1',
      n: 1,
      stream: true,
      stream_options: { include_usage: true },
    }),
  );
  assert.deepEqual(body, {
    model: 'claude-sonnet-4-5',
    max_tokens: 50,
    system: 'one\n\ntwo',
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
          { type: 'tool_use', id: 'call_1', name: 'f', input: { x: 1 } },
          { type: 'tool_use', id: 'call_2', name: 'g', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_1', content: 'r1' },
          { type: 'tool_result', tool_use_id: 'call_2', content: 'r2' },
        ],
      },
      { role: 'user', content: 'and now?' },
    ],
    stop_sequences: ['x', 'y'],
    temperature: 1,
    top_p: 0.5,
    tools: [
      { name: 'f', description: 'd', input_schema: { type: 'object' } },
      { name: 'g', input_schema: { type: 'object', properties: {} } },
    ],
    tool_choice: { type: 'tool', name: 'f', disable_parallel_tool_use: true },
    metadata: { user_id: 'u-1' },
    stream: true,
  });
  assert.deepEqual(ok(c2a.request({ ...chatBase, tool_choice: 'required' })).tool_choice, { type: 'any' });
  assert.deepEqual(ok(c2a.request({ ...chatBase, parallel_tool_calls: false })).tool_choice, {
    type: 'auto',
    disable_parallel_tool_use: true,
  });
  assert.deepEqual(ok(c2a.request({ ...chatBase, stop: 'END' })).stop_sequences, ['END']);
  assert.equal(ok(c2a.request({ ...chatBase, max_completion_tokens: undefined, max_tokens: 7 })).max_tokens, 7);
});

const chatUser = (part: unknown) => ({ ...chatBase, messages: [{ role: 'user', content: [part] }] });

test('Chat → Anthropic request: what Messages cannot express is refused, naming the field', () => {
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ ...chatBase, n: 2 }, 'n'],
    [{ ...chatBase, logprobs: true }, 'logprobs'],
    [{ ...chatBase, top_logprobs: 2 }, 'top_logprobs'],
    [{ ...chatBase, audio: { voice: 'alloy', format: 'mp3' } }, 'audio'],
    [{ ...chatBase, modalities: ['text', 'audio'] }, 'modalities'],
    [
      { ...chatBase, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: {} } } },
      'response_format',
    ],
    [{ ...chatBase, response_format: { type: 'json_object' } }, 'response_format'],
    [{ ...chatBase, seed: 1 }, 'seed'],
    [{ ...chatBase, presence_penalty: 0.5 }, 'presence_penalty'],
    [{ ...chatBase, logit_bias: { 1: 2 } }, 'logit_bias'],
    [{ ...chatBase, reasoning_effort: 'high' }, 'reasoning_effort'],
    [{ ...chatBase, temperature: 1.5 }, 'temperature'],
    [{ ...chatBase, max_completion_tokens: undefined }, 'max_completion_tokens'],
    [{ ...chatBase, tools: [{ type: 'function', function: { name: 'f', strict: true } }] }, 'tools[0].function.strict'],
    [{ ...chatBase, tool_choice: { type: 'allowed_tools' } }, 'tool_choice.type'],
    [chatUser({ type: 'input_audio', input_audio: { data: 'x', format: 'wav' } }), 'messages[0].content[0].type'],
    [chatUser({ type: 'file', file: { file_id: 'f' } }), 'messages[0].content[0].type'],
    [
      chatUser({ type: 'image_url', image_url: { url: 'https://x/a.png', detail: 'low' } }),
      'messages[0].content[0].image_url.detail',
    ],
    [
      chatUser({ type: 'image_url', image_url: { url: 'data:text/plain;base64,AAAA' } }),
      'messages[0].content[0].image_url.url',
    ],
    [chatUser({ type: 'image_url', image_url: { url: 'ftp://x/a.png' } }), 'messages[0].content[0].image_url.url'],
    [
      {
        ...chatBase,
        messages: [
          { role: 'user', content: 'a' },
          { role: 'system', content: 'late' },
        ],
      },
      'messages[1].role',
    ],
    [{ ...chatBase, messages: [{ role: 'user', content: 'a', name: 'bob' }] }, 'messages[0].name'],
    [{ ...chatBase, messages: [{ role: 'function', name: 'f', content: 'x' }] }, 'messages[0].role'],
    [{ ...chatBase, messages: [{ role: 'tool', tool_call_id: 'bad id!', content: 'x' }] }, 'messages[0].tool_call_id'],
    [
      {
        ...chatBase,
        messages: [
          {
            role: 'assistant',
            tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{nope' } }],
          },
        ],
      },
      'messages[0].tool_calls[0].function.arguments',
    ],
    [
      {
        ...chatBase,
        messages: [
          { role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '[1]' } }] },
        ],
      },
      'messages[0].tool_calls[0].function.arguments',
    ],
    [{ ...chatBase, messages: [{ role: 'assistant', content: null, refusal: 'no' }] }, 'messages[0].refusal'],
  ];
  for (const [body, field] of cases) assert.equal(refusedField(c2a.request(body)), field, JSON.stringify(body));
});

test('whole replies: Chat → Messages and Messages → Chat, tool calls, stop reasons and usage bucket by bucket', () => {
  const chat = {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1,
    model: 'gpt-4.1-mini',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: 'hi',
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
        },
        finish_reason: 'tool_calls',
      },
    ],
    usage: {
      prompt_tokens: 100,
      completion_tokens: 30,
      total_tokens: 130,
      prompt_tokens_details: { cached_tokens: 60 },
      completion_tokens_details: { reasoning_tokens: 20 },
    },
  };
  assert.deepEqual(ok(a2c.reply(chat)), {
    id: 'msg_chatcmpl-1',
    type: 'message',
    role: 'assistant',
    model: 'gpt-4.1-mini',
    content: [
      { type: 'text', text: 'hi' },
      { type: 'tool_use', id: 'call_1', name: 'f', input: { a: 1 } },
    ],
    stop_reason: 'tool_use',
    stop_sequence: null,
    // Reasoning tokens are output tokens in both formats (Anthropic counts thinking in output_tokens).
    usage: { input_tokens: 40, cache_creation_input_tokens: 0, cache_read_input_tokens: 60, output_tokens: 30 },
  });
  const noUsage = ok(a2c.reply({ ...chat, usage: undefined })).usage;
  assert.deepEqual(noUsage, {
    input_tokens: null,
    cache_creation_input_tokens: null,
    cache_read_input_tokens: null,
    output_tokens: null,
  });
  const message = {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-5',
    content: [
      { type: 'text', text: 'a' },
      { type: 'text', text: 'b' },
      { type: 'tool_use', id: 'toolu_1', name: 'f', input: { a: 1 } },
    ],
    stop_reason: 'max_tokens',
    stop_sequence: null,
    usage: { input_tokens: 10, cache_creation_input_tokens: 5, cache_read_input_tokens: 40, output_tokens: 7 },
  };
  assert.deepEqual(ok(c2a.reply(message)), {
    id: 'chatcmpl-msg_1',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: 'claude-sonnet-4-5',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: 'ab',
          refusal: null,
          tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
        },
        finish_reason: 'length',
        logprobs: null,
      },
    ],
    usage: {
      prompt_tokens: 55,
      completion_tokens: 7,
      total_tokens: 62,
      prompt_tokens_details: { cached_tokens: 40 },
      completion_tokens_details: { reasoning_tokens: 0 },
      cache_creation_input_tokens: 5,
    },
  });
  const stops: Array<[string, string]> = [
    ['end_turn', 'stop'],
    ['stop_sequence', 'stop'],
    ['tool_use', 'tool_calls'],
    ['refusal', 'content_filter'],
  ];
  for (const [from, to] of stops) {
    const reply = ok(c2a.reply({ ...message, stop_reason: from })) as { choices: Array<{ finish_reason: string }> };
    assert.equal(reply.choices[0]?.finish_reason, to);
  }
  assert.equal(refusedField(c2a.reply({ ...message, stop_reason: 'pause_turn' })), 'stop_reason');
  assert.equal(
    refusedField(c2a.reply({ ...message, content: [{ type: 'thinking', thinking: 'x' }] })),
    'content[0].type',
  );
  const bad = {
    ...chat,
    choices: [
      {
        ...chat.choices[0],
        message: { role: 'assistant', tool_calls: [{ id: 'c', function: { name: 'f', arguments: '{' } }] },
      },
    ],
  };
  assert.equal(refusedField(a2c.reply(bad)), 'choices[0].message.tool_calls[0].function.arguments');
  assert.equal(refusedField(a2c.reply({ ...chat, choices: [chat.choices[0], chat.choices[0]] })), 'choices');
});

const sse = (event: string | null, data: unknown): SseFrame => {
  const text = typeof data === 'string' ? data : JSON.stringify(data);
  return { raw: `${event === null ? '' : `event: ${event}\n`}data: ${text}\n\n`, event, data: text };
};

const payloads = (frames: SseFrame[]) =>
  frames.map((f) => (f.data === '[DONE]' ? '[DONE]' : JSON.parse(f.data ?? 'null')));

test('stream Chat → Messages: text then two tool calls become blocks in order; the usage chunk lands in message_delta', () => {
  const stream = a2c.stream();
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    sse(null, { id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4.1-mini', choices, ...extra });
  const input = [
    chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]),
    chunk([{ index: 0, delta: { content: 'Hi' }, finish_reason: null }]),
    chunk([
      {
        index: 0,
        delta: {
          tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'f', arguments: '{"x"' } }],
        },
      },
    ]),
    chunk([{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: ':1}' } }] } }]),
    chunk([
      {
        index: 0,
        delta: { tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'g', arguments: '{}' } }] },
      },
    ]),
    chunk([{ index: 0, delta: {}, finish_reason: 'tool_calls' }]),
    chunk([], { usage: { prompt_tokens: 20, completion_tokens: 9, prompt_tokens_details: { cached_tokens: 5 } } }),
    sse(null, '[DONE]'),
  ];
  const out = input.flatMap((f) => stream.push(f));
  assert.ok(
    out.every((f) => f.raw.startsWith(`event: ${f.event}\n`)),
    'every frame named, as Anthropic streams are',
  );
  const events = payloads(out);
  assert.deepEqual(
    events.map((e) => e.type),
    [
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ],
  );
  assert.deepEqual(events[4].content_block, { type: 'tool_use', id: 'call_a', name: 'f', input: {} });
  assert.equal(events[4].index, 1);
  assert.deepEqual(events[8].content_block, { type: 'tool_use', id: 'call_b', name: 'g', input: {} });
  assert.deepEqual(events[11], {
    type: 'message_delta',
    delta: { stop_reason: 'tool_use', stop_sequence: null },
    usage: { input_tokens: 15, cache_creation_input_tokens: 0, cache_read_input_tokens: 5, output_tokens: 9 },
  });
  const refusing = a2c.stream();
  const refusal = [
    chunk([{ index: 0, delta: { role: 'assistant', refusal: '' }, finish_reason: null }]),
    chunk([{ index: 0, delta: { refusal: "I can't help with that." }, finish_reason: null }]),
    chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]),
    sse(null, '[DONE]'),
  ].flatMap((f) => payloads(refusing.push(f)));
  assert.equal(refusal.find((e) => e.type === 'content_block_delta')?.delta.text, "I can't help with that.");
  assert.equal(
    refusal.find((e) => e.type === 'message_delta')?.delta.stop_reason,
    'refusal',
    'a streamed refusal stops as one',
  );
  const empty = payloads(a2c.stream().push(sse(null, '[DONE]')));
  assert.deepEqual(
    empty.map((e) => e.type),
    ['message_start', 'message_delta', 'message_stop'],
    'a stream with no chunk still opens its message',
  );
  const error = a2c.stream().push(sse(null, { error: { message: 'boom', type: 'server_error' } }));
  assert.equal(error[0]?.event, 'error');
});

test('stream Messages → Chat: role chunk, text and tool deltas, finish reason, usage chunk, [DONE]', () => {
  const stream = c2a.stream();
  const input = [
    sse('message_start', {
      type: 'message_start',
      message: {
        id: 'msg_1',
        model: 'claude-sonnet-4-5',
        usage: { input_tokens: 10, cache_creation_input_tokens: 2, cache_read_input_tokens: 30, output_tokens: 1 },
      },
    }),
    sse('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
    sse('ping', { type: 'ping' }),
    sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hi' } }),
    sse('content_block_stop', { type: 'content_block_stop', index: 0 }),
    sse('content_block_start', {
      type: 'content_block_start',
      index: 1,
      content_block: { type: 'tool_use', id: 'toolu_1', name: 'f', input: {} },
    }),
    sse('content_block_delta', {
      type: 'content_block_delta',
      index: 1,
      delta: { type: 'input_json_delta', partial_json: '{"a":' },
    }),
    sse('content_block_delta', {
      type: 'content_block_delta',
      index: 1,
      delta: { type: 'input_json_delta', partial_json: '1}' },
    }),
    sse('content_block_stop', { type: 'content_block_stop', index: 1 }),
    sse('message_delta', { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 12 } }),
    sse('message_stop', { type: 'message_stop' }),
  ];
  const out = input.flatMap((f) => stream.push(f));
  assert.ok(
    out.every((f) => f.event === null),
    'Chat chunks carry no event names',
  );
  const chunks = payloads(out);
  assert.equal(chunks.at(-1), '[DONE]');
  const deltas = chunks.slice(0, -2).map((c) => c.choices[0]);
  assert.deepEqual(deltas[0].delta, { role: 'assistant', content: '' });
  assert.deepEqual(deltas[1].delta, { content: 'Hi' });
  assert.deepEqual(deltas[2].delta.tool_calls, [
    { index: 0, id: 'toolu_1', type: 'function', function: { name: 'f', arguments: '' } },
  ]);
  assert.equal(
    deltas
      .map(
        (d: { delta: { tool_calls?: Array<{ function: { arguments: string } }> } }) =>
          d.delta.tool_calls?.[0]?.function.arguments ?? '',
      )
      .join(''),
    '{"a":1}',
  );
  assert.equal(deltas.at(-1).finish_reason, 'tool_calls');
  const usage = chunks.at(-2);
  assert.deepEqual(usage.choices, []);
  assert.deepEqual(usage.usage, {
    prompt_tokens: 42,
    completion_tokens: 12,
    total_tokens: 54,
    prompt_tokens_details: { cached_tokens: 30 },
    completion_tokens_details: { reasoning_tokens: 0 },
    cache_creation_input_tokens: 2,
  });
  assert.ok(chunks.slice(0, -1).every((c) => c.id === 'chatcmpl-msg_1' && c.created === 1_700_000_000));
});

test('hostile streams: a thinking block, an unknown delta, or more tool calls than the bound are refused', () => {
  const start = sse('message_start', { type: 'message_start', message: { id: 'm', model: 'x', usage: {} } });
  const thinking = c2a.stream();
  thinking.push(start);
  assert.throws(
    () =>
      thinking.push(
        sse('content_block_start', {
          type: 'content_block_start',
          index: 0,
          content_block: { type: 'thinking', thinking: '' },
        }),
      ),
    TranslationRefused,
  );
  const many = a2c.stream();
  const call = (index: number) =>
    sse(null, {
      id: 'c',
      model: 'm',
      choices: [
        { index: 0, delta: { tool_calls: [{ index, id: `c${index}`, function: { name: 'f', arguments: '' } }] } },
      ],
    });
  for (let i = 0; i < MAX_STREAM_TOOL_CALLS; i += 1) many.push(call(i));
  assert.throws(() => many.push(call(MAX_STREAM_TOOL_CALLS)), TranslationRefused);
  const interleaved = a2c.stream();
  interleaved.push(call(0));
  interleaved.push(call(1));
  assert.throws(
    () => interleaved.push(call(0)),
    TranslationRefused,
    'a call resumed after another began cannot keep its block',
  );
  assert.deepEqual(a2c.stream().push(sse(null, 'not json')), [], 'a frame that is not JSON yields nothing');
  const blocks = c2a.stream();
  blocks.push(start);
  const text = (index: number) =>
    sse('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
  for (let i = 0; i < MAX_STREAM_BLOCKS; i += 1) blocks.push(text(i));
  assert.throws(() => blocks.push(text(MAX_STREAM_BLOCKS)), TranslationRefused);
});
