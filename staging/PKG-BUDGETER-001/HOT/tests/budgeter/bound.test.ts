import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  IMAGE_TOKENS,
  MESSAGE_OVERHEAD_TOKENS,
  TOOL_USE_OVERHEAD_TOKENS,
  bodyInputBound,
  bodyInputLimit,
  bodyOutputBound,
  promptInputBound,
} from '../../budgeter/bound.js';

const CJK = '予算は決して超えてはならない。'; // 15 code units, 45 UTF-8 bytes
const EMOJI = '👩‍👩‍👧‍👦🚀'; // a ZWJ family and a rocket: 13 code units, 29 UTF-8 bytes

test('a prompt is bounded by its UTF-8 bytes, not its length: CJK and emoji count every byte', () => {
  assert.equal(Buffer.byteLength(CJK), 45);
  assert.equal(promptInputBound(CJK), 45 + 2 * MESSAGE_OVERHEAD_TOKENS);
  assert.equal(promptInputBound(EMOJI), Buffer.byteLength(EMOJI) + 2 * MESSAGE_OVERHEAD_TOKENS);
  assert.ok(promptInputBound(CJK.repeat(100)) >= 3 * CJK.length * 100, 'three bytes per CJK character');
  assert.equal(promptInputBound(''), 2 * MESSAGE_OVERHEAD_TOKENS, 'an empty prompt still pays its template');
  assert.equal(
    promptInputBound('ab', '系统'),
    2 + 6 + 3 * MESSAGE_OVERHEAD_TOKENS,
    'a system prompt is one more message',
  );
  // A lone surrogate is sent as U+FFFD, three bytes.
  assert.equal(promptInputBound('\ud800'), 3 + 2 * MESSAGE_OVERHEAD_TOKENS);
});

test('a rendered body is bounded by every text it carries plus an overhead per message', () => {
  const body = {
    model: 'claude-sonnet-4-5',
    max_tokens: 300,
    system: [{ type: 'text', text: `规则 ${CJK}`, cache_control: { type: 'ephemeral' } }],
    messages: [
      { role: 'user', content: [{ type: 'text', text: CJK }] },
      { role: 'assistant', content: EMOJI },
      { role: 'user', content: CJK.repeat(3) },
    ],
    tools: [{ name: 't', description: '検索ツール', input_schema: { type: 'object' } }],
  };
  const texts = [`规则 ${CJK}`, CJK, EMOJI, CJK.repeat(3), '検索ツール'].reduce(
    (sum, t) => sum + Buffer.byteLength(t),
    0,
  );
  const bound = bodyInputBound(body);
  assert.ok(
    bound >= texts + 6 * MESSAGE_OVERHEAD_TOKENS + TOOL_USE_OVERHEAD_TOKENS,
    `bound ${bound} < texts ${texts} + overheads`,
  );
  const { tools: _tools, ...withoutTools } = body;
  assert.ok(
    bound - bodyInputBound(withoutTools) >= TOOL_USE_OVERHEAD_TOKENS,
    "tools pay the provider's tool-use prompt",
  );
  // Escapes only lengthen the JSON: a text of quotes and backslashes is still covered byte for byte.
  const escaped = { model: 'm', max_tokens: 1, messages: [{ role: 'user', content: '"\\\n'.repeat(50) }] };
  assert.ok(bodyInputBound(escaped) >= 150 + 2 * MESSAGE_OVERHEAD_TOKENS);
});

test('an image is billed by pixels, not bytes: each image block adds its own bound, wherever it is nested', () => {
  const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0K' } };
  const text = { model: 'm', max_tokens: 1, messages: [{ role: 'user', content: [{ type: 'text', text: 'look' }] }] };
  const one = { ...text, messages: [{ role: 'user', content: [image, { type: 'text', text: 'look' }] }] };
  const nested = {
    ...text,
    messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: [image, image] }] }],
  };
  assert.ok(bodyInputBound(one) >= bodyInputBound(text) + IMAGE_TOKENS);
  assert.ok(bodyInputBound(nested) >= 2 * IMAGE_TOKENS);
  const openai = {
    ...text,
    messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png' } }] }],
  };
  assert.ok(bodyInputBound(openai) >= IMAGE_TOKENS);
});

test('a Responses body is bounded like a chat body: its input items and instructions have their overhead, its images their bound', () => {
  const image = { type: 'input_image', image_url: 'https://x/y.png' };
  const items = Array.from({ length: 40 }, () => ({ role: 'user', content: 'a' }));
  const body = { model: 'm', instructions: 'be brief', input: [{ role: 'user', content: [image] }, ...items] };
  assert.ok(bodyInputBound(body) >= IMAGE_TOKENS + MESSAGE_OVERHEAD_TOKENS * (41 + 1 + 1));
});

test('the input limit an honest usage stays under is the bound, or none for a body whose documents its bytes do not bound', () => {
  const text = { model: 'm', max_tokens: 1, messages: [{ role: 'user', content: 'hello' }] };
  assert.equal(bodyInputLimit(text), bodyInputBound(text));
  const pdf = { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0x' } };
  assert.equal(bodyInputLimit({ ...text, messages: [{ role: 'user', content: [pdf] }] }), null);
  const file = { type: 'input_file', file_id: 'file-1' };
  assert.equal(bodyInputLimit({ model: 'm', input: [{ role: 'user', content: [file] }] }), null);
});

test('a rendered body asks for the largest of its max-token fields; without one the request max applies', () => {
  assert.equal(bodyOutputBound({ max_tokens: 300 }, 50), 300);
  assert.equal(bodyOutputBound({ max_completion_tokens: 700, max_tokens: 300 }, 50), 700);
  assert.equal(bodyOutputBound({}, 50), 50);
  assert.equal(
    bodyOutputBound({ max_completion_tokens: 100, n: 3 }, 50),
    300,
    'each of n choices is billed its own output',
  );
  assert.equal(
    bodyOutputBound({ max_tokens: '9000', max_completion_tokens: -1 }, 50),
    50,
    'values a provider refuses do not count',
  );
});
