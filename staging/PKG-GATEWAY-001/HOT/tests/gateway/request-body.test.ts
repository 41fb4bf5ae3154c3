import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bodyInputBounds } from '#budgeter/bound.js';
import { checkGeneration, jsonPieces } from '../../gateway/request-body.js';

test('jsonPieces: the pieces join to JSON.stringify exactly, whatever the values hold', () => {
  const hostile = JSON.parse(
    '{"__proto__":{"x":1},"messages":[{"role":"user","content":"a\\u2028b \\"q\\" \\ud800 😀"},[],null,{}],"empty":[],"n":1.5e300,"s":"","o":{"k":[1,2]}}',
  ) as Record<string, unknown>;
  for (const value of [hostile, {}, { a: [] }, { a: [[]] }, { a: 'x', b: ['y'] }]) {
    const { whole, pieces } = jsonPieces(value);
    assert.equal(whole, JSON.stringify(value));
    assert.equal(pieces.join(''), whole);
    assert.ok(
      pieces.every((p) => p.length > 0),
      'no empty piece',
    );
  }
});

test('a conversation resent with one more message shares every piece of the turn before it but the closing one', () => {
  const system = [{ type: 'text', text: 'You are a coding agent.', cache_control: { type: 'ephemeral' } }];
  const tools = [{ name: 'read_file', input_schema: { type: 'object' } }];
  const messages: unknown[] = [{ role: 'user', content: 'fix the bug' }];
  const first = checkGeneration('anthropic.messages', { model: 'm', max_tokens: 10, system, tools, messages });
  messages.push({ role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'read_file', input: {} }] });
  messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'code' }] });
  const second = checkGeneration('anthropic.messages', { model: 'm', max_tokens: 10, system, tools, messages });
  assert.ok(typeof first !== 'string' && typeof second !== 'string');
  // Fields in the order providers cache them: tools, then system, then messages.
  assert.deepEqual(Object.keys(JSON.parse(second.prompt) as object), ['tools', 'system', 'messages']);
  assert.equal(second.prompt, second.promptPieces.join(''));
  const shared = first.promptPieces.slice(0, -1);
  assert.deepEqual(second.promptPieces.slice(0, shared.length), shared);
  assert.ok(second.promptPieces.includes(`,${JSON.stringify(messages[2])}`), 'each message is a piece of its own');
  // Per turn: the two new messages and the closing brackets.
  assert.equal(second.promptPieces.length, first.promptPieces.length + 2);
});

test("the input bound at the edge is the body's own, taken from the prompt JSON already serialised", () => {
  const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0K' } };
  const bodies: Array<[Parameters<typeof checkGeneration>[0], Record<string, unknown>]> = [
    [
      'anthropic.messages',
      {
        metadata: { user_id: 'u "1"' },
        messages: [{ role: 'user', content: [image, { type: 'text', text: '規則 "q" \\ 😀' }] }],
        model: 'claude-sonnet-4-5',
        max_tokens: 64,
        system: 'be brief',
        tools: [{ name: 't', input_schema: { type: 'object' } }],
      },
    ],
    ['openai.chat', { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], temperature: 0.5 }],
    ['openai.responses', { model: 'gpt-4o', instructions: 'x', input: 'one text', max_output_tokens: 9 }],
  ];
  for (const [surface, body] of bodies) {
    const gen = checkGeneration(surface, body);
    assert.ok(typeof gen !== 'string', String(gen));
    const own = bodyInputBounds(body);
    // Two objects' JSON for one: at most one byte more than the body's own, never less.
    const edge = gen.bounds.estimated_input_tokens;
    assert.ok(edge >= own.bound && edge <= own.bound + 1, `${surface}: ${edge} against ${own.bound}`);
    assert.equal(gen.inputLimit, edge);
  }
  const pdf = { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0x' } };
  const withPdf = checkGeneration('anthropic.messages', {
    model: 'm',
    max_tokens: 1,
    messages: [{ role: 'user', content: [pdf] }],
  });
  assert.ok(typeof withPdf !== 'string');
  assert.equal(withPdf.inputLimit, null);
});
