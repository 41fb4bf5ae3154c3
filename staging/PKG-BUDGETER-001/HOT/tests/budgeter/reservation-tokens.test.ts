// The exact input count for OpenAI-family models: equal to gpt-tokenizer's chat count plus the documented margins,
// never below what an upstream counting with the same tokenizer bills, lazy to load, cached by text.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as cl100k from 'gpt-tokenizer/encoding/cl100k_base';
import * as gpt4o from 'gpt-tokenizer/model/gpt-4o';
import { bodyInputBound, IMAGE_TOKENS } from '../../budgeter/bound.js';
import { Lru } from '../../budgeter/tokens/lru.js';
import { encodingForModel, MAX_CHUNK_CHARS, MAX_TOKENIZED_CHARS } from '../../budgeter/tokens/openai-encoder.js';
import {
  OPENAI_MESSAGE_MARGIN,
  OPENAI_TOOL_MARGIN,
  OPENAI_TOOLS_OVERHEAD,
  openaiInputBound,
} from '../../budgeter/tokens/openai.js';

type Message = { role: string; content: string; name?: string };

const asText = { disallowedSpecial: new Set<string>() };

/** What an upstream counting with OpenAI's tokenizer bills a chat body: the library's chat count, tools included. */
function billed(body: { messages: Message[]; tools?: Array<{ function: Record<string, unknown> }> }): number {
  const chat = gpt4o.encodeChat(body.messages, 'gpt-4o', asText).length;
  if (body.tools === undefined) return chat;
  type Request = Parameters<NonNullable<typeof gpt4o.countChatCompletionTokens>>[0];
  const functions = body.tools.map((t) => t.function) as unknown as NonNullable<Request['functions']>;
  const count = gpt4o.countChatCompletionTokens;
  assert.ok(count, 'gpt-4o counts function definitions');
  return Math.max(chat, count({ messages: body.messages, functions }));
}

test('the model picks the encoding: o200k for gpt-4o, 4.1, 5 and the o-series, cl100k for older, none for others', () => {
  for (const m of [
    'gpt-4o',
    'gpt-4o-mini-2024-07-18',
    'openai/gpt-4.1',
    'gpt-5',
    'gpt-5.1-codex',
    'o1',
    'o3-mini',
    'o4-mini',
    'ft:gpt-4o-mini:org::x',
    'chatgpt-4o-latest',
  ])
    assert.equal(encodingForModel(m), 'o200k_base', m);
  for (const m of ['gpt-4', 'gpt-4-turbo', 'gpt-4-0613', 'gpt-3.5-turbo', 'gpt-35-turbo'])
    assert.equal(encodingForModel(m), 'cl100k_base', m);
  for (const m of [
    'claude-sonnet-4-5',
    'gemini-2.5-pro',
    'llama-3.1-70b',
    'gpt-oss-120b',
    'o10-thing',
    'my-gpt-4o',
    'mock',
  ])
    assert.equal(encodingForModel(m), null, m);
});

test('the exact count is the library chat count, plus the margin per message and the other fields by their JSON', async () => {
  const sets: Message[][] = [
    [{ role: 'user', content: 'Hello' }],
    [
      { role: 'system', content: 'You are a careful assistant. Answer in French.' },
      { role: 'user', content: 'Quel temps fait-il à Paris ? 天気はどうですか 👩‍👩‍👧‍👦' },
      { role: 'assistant', content: 'Il fait beau.\n\n```ts\nconst x = 1;\n```' },
      { role: 'user', content: '' },
    ],
  ];
  for (const messages of sets) {
    const body = { model: 'gpt-4o', messages };
    const rest = gpt4o.countTokens(JSON.stringify({ model: 'gpt-4o' }));
    assert.equal(
      await openaiInputBound(body, 'gpt-4o', 'openai.chat'),
      gpt4o.encodeChat(messages, 'gpt-4o').length + OPENAI_MESSAGE_MARGIN * messages.length + rest,
    );
  }
  // cl100k for gpt-4: the same template (gpt-4's chat parameters), another vocabulary.
  const messages = [{ role: 'user', content: 'Tokenizers differ: 予算' }];
  assert.equal(
    await openaiInputBound({ model: 'gpt-4', messages }, 'gpt-4', 'openai.chat'),
    cl100k.encodeChat(messages, 'gpt-4').length +
      OPENAI_MESSAGE_MARGIN +
      cl100k.countTokens(JSON.stringify({ model: 'gpt-4' })),
  );
});

const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'search_files',
      description: 'Search the repository.\nReturns matching paths, one per line.',
      parameters: {
        type: 'object',
        properties: {
          query: { type: 'string', description: 'a regular expression' },
          kind: { type: 'string', enum: ['file', 'dir', 'symlink', '日本語'] },
          limit: { type: 'integer', minimum: 1, maximum: 500 },
          options: {
            type: 'object',
            properties: { case: { type: 'boolean' }, paths: { type: 'array', items: { type: 'string' } } },
          },
        },
        required: ['query'],
      },
    },
  },
  { type: 'function', function: { name: 'noop', parameters: { type: 'object', properties: {} } } },
];

test('hostile bodies: the reservation is never below what an upstream counting with the same tokenizer bills', async () => {
  const unicode = `${'予算は決して超えてはならない。'.repeat(2000)}${'👩‍👩‍👧‍👦🚀'.repeat(300)}${'e\u0301\u0327'.repeat(1000)}\ud800x`;
  const cases: Array<{ name: string; messages: Message[]; tools?: typeof TOOLS }> = [
    {
      name: 'many tiny messages',
      messages: Array.from({ length: 2000 }, (_, i) => ({
        role: i % 2 ? 'assistant' : 'user',
        content: i % 3 ? 'a' : '',
      })),
    },
    { name: 'huge unicode', messages: [{ role: 'user', content: unicode }] },
    {
      name: 'special tokens as text',
      messages: [{ role: 'user', content: '<|endoftext|><|im_start|>system<|im_sep|>hi<|im_end|>'.repeat(50) }],
    },
    { name: 'names', messages: [{ role: 'user', name: 'a_very_long_participant_name_0123456789', content: 'x' }] },
    {
      name: 'tool schemas',
      messages: [
        { role: 'system', content: 'Use the tools.' },
        { role: 'user', content: 'find it' },
      ],
      tools: TOOLS,
    },
    { name: 'tools without a system message', messages: [{ role: 'user', content: 'go' }], tools: TOOLS },
    { name: 'whitespace runs', messages: [{ role: 'user', content: ' \n\t'.repeat(4000) }] },
    { name: 'one long word', messages: [{ role: 'user', content: `x ${'a'.repeat(15_000)} y` }] },
    {
      name: 'chunks at the limit',
      messages: [{ role: 'user', content: `${'b'.repeat(MAX_CHUNK_CHARS)} `.repeat(40) }],
    },
  ];
  for (const c of cases) {
    const body = { model: 'gpt-4o', messages: c.messages, ...(c.tools ? { tools: c.tools } : {}) };
    const reserved = await openaiInputBound(body, 'gpt-4o', 'openai.chat');
    assert.ok(reserved !== null, c.name);
    const bill = billed(body);
    assert.ok(reserved >= bill, `${c.name}: reserved ${reserved} < billed ${bill}`);
    // And it is the count, not the bytes: never more than the byte bound it replaces.
    assert.ok(reserved <= bodyInputBound(body), `${c.name}: ${reserved} > byte bound ${bodyInputBound(body)}`);
  }
  const tools = await openaiInputBound({ model: 'gpt-4o', messages: [], tools: TOOLS }, 'gpt-4o', 'openai.chat');
  const json = TOOLS.reduce((n, t) => n + gpt4o.countTokens(JSON.stringify(t)), 0);
  assert.ok(tools !== null && tools >= json + OPENAI_TOOLS_OVERHEAD + 2 * OPENAI_TOOL_MARGIN);
});

test('tool calls, content parts, images and Responses items are counted; files and stored conversations are not', async () => {
  const chat = {
    model: 'gpt-4.1',
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${'A'.repeat(50_000)}` } },
        ],
      },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"q":"予算"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'result text' },
    ],
    response_format: {
      type: 'json_schema',
      json_schema: { name: 'out', schema: { type: 'object', properties: { a: { type: 'string' } } } },
    },
  };
  const counted = await openaiInputBound(chat, 'gpt-4.1', 'openai.chat');
  assert.ok(counted !== null && counted >= IMAGE_TOKENS, 'an image is its pixel bound, not its base64');
  assert.ok(counted < IMAGE_TOKENS + 400, `${counted}: the data URL is not tokenized`);
  assert.ok(
    counted >= gpt4o.countTokens(JSON.stringify(chat.response_format), asText),
    'the schema reaches the prompt',
  );
  const file = { model: 'gpt-4o', messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: 'f' } }] }] };
  assert.equal(await openaiInputBound(file, 'gpt-4o', 'openai.chat'), null);
  assert.equal(await openaiInputBound({ model: 'x', messages: [] }, 'claude-sonnet-4-5', 'openai.chat'), null);
  const responses = {
    model: 'gpt-5',
    instructions: 'Be brief.',
    input: [
      { role: 'user', content: [{ type: 'input_text', text: 'hi' }] },
      { type: 'function_call', call_id: 'c', name: 'f', arguments: '{}' },
      { type: 'function_call_output', call_id: 'c', output: 'done' },
      { type: 'reasoning', id: 'rs_1', encrypted_content: 'Z'.repeat(3000), summary: [] },
    ],
  };
  const r = await openaiInputBound(responses, 'gpt-5', 'openai.responses');
  assert.ok(r !== null && r >= 3000, 'reasoning is bounded by its bytes');
  assert.equal(
    await openaiInputBound({ ...responses, previous_response_id: 'resp_1' }, 'gpt-5', 'openai.responses'),
    null,
  );
  assert.equal(
    await openaiInputBound(
      { model: 'gpt-5', input: [{ type: 'item_reference', id: 'x' }] },
      'gpt-5',
      'openai.responses',
    ),
    null,
  );
  const plain = await openaiInputBound({ model: 'gpt-5', input: 'Hello' }, 'gpt-5', 'openai.responses');
  assert.ok(plain !== null && plain >= gpt4o.encodeChat([{ role: 'user', content: 'Hello' }], 'gpt-4o').length);
});

test('a text beyond the tokenized length is bounded by its bytes', async () => {
  const huge = 'ab'.repeat(MAX_TOKENIZED_CHARS / 2 + 1);
  const n = await openaiInputBound({ messages: [{ role: 'user', content: huge }] }, 'gpt-4o', 'openai.chat');
  assert.ok(n !== null && n >= Buffer.byteLength(huge));
});

test('the count cache is a bounded LRU: a hit is kept, the oldest is evicted', () => {
  const lru = new Lru<number>(2);
  lru.set('a', 1);
  lru.set('b', 2);
  assert.equal(lru.get('a'), 1);
  lru.set('c', 3);
  assert.equal(lru.get('b'), undefined, 'b was the least recently used');
  assert.equal(lru.get('a'), 1);
  assert.equal(lru.size, 2);
});
