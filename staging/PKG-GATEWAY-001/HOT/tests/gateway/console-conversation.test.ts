// The console reads a recorded prompt as a conversation. Each body below is a request as the provider's API
// reference documents it (Anthropic Messages with tools, Chat Completions tool calling, Responses function
// calling, Gemini function calling), split into pieces the way the gateway records it (jsonPieces).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { conversationOf, conversationOfPieces, type Item } from '../../gateway/console/conversation.js';
import { jsonPieces } from '../../gateway/request-body.js';

const roles = (items: Item[] | null): string[] =>
  (items ?? []).map((x) =>
    x.kind === 'message' ? `${x.kind}:${x.role}` : x.kind === 'tool' ? `tool:${x.name}` : x.kind,
  );

/** The message at `i`, asserted to be one. */
function message(items: Item[] | null, i: number): Extract<Item, { kind: 'message' }> {
  const x = items?.[i];
  assert.ok(x !== undefined && x.kind === 'message', `item ${i} is a message`);
  return x;
}

const anthropic = {
  model: 'claude-sonnet-4-5',
  max_tokens: 1024,
  system: [{ type: 'text', text: 'You are a weather bot.' }],
  tools: [
    {
      name: 'get_weather',
      description: 'Get the current weather in a given location',
      input_schema: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
    },
  ],
  messages: [
    { role: 'user', content: 'What is the weather like in San Francisco?' },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'I need to use get_weather.' },
        {
          type: 'tool_use',
          id: 'toolu_01A09q90qw90lq917835lq9',
          name: 'get_weather',
          input: { location: 'San Francisco, CA' },
        },
      ],
    },
    {
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: 'toolu_01A09q90qw90lq917835lq9', content: '15 degrees' }],
    },
  ],
};

test('an Anthropic Messages prompt: system, tools, messages, a tool call and its result; no punctuation pieces', () => {
  const { whole, pieces } = jsonPieces(anthropic);
  assert.ok(
    pieces.some((p) => p === ']}'),
    'the store splits a closing piece off',
  );
  const items = conversationOf(whole);
  assert.deepEqual(roles(items), [
    'setting',
    'setting',
    'system',
    'tool:get_weather',
    'message:user',
    'message:assistant',
    'message:user',
  ]);
  const assistant = items?.[5] as Extract<Item, { kind: 'message' }>;
  assert.deepEqual(assistant.parts[1], {
    kind: 'tool_call',
    id: 'toolu_01A09q90qw90lq917835lq9',
    name: 'get_weather',
    input: JSON.stringify({ location: 'San Francisco, CA' }, null, 2),
  });
  const result = message(items, 6).parts[0];
  assert.deepEqual(result, {
    kind: 'tool_result',
    id: 'toolu_01A09q90qw90lq917835lq9',
    is_error: false,
    parts: [{ kind: 'text', text: '15 degrees' }],
  });
});

test('a turn that continues the one before: its new pieces read as the messages they add', () => {
  const before = jsonPieces({ ...anthropic, messages: anthropic.messages.slice(0, 1) }).pieces;
  const after = jsonPieces(anthropic).pieces;
  // What the store gives as new: the pieces after the previous prompt less its closing piece.
  const shared = before.length - 1;
  assert.deepEqual(after.slice(0, shared), before.slice(0, shared));
  const items = conversationOfPieces(after.slice(shared), true);
  assert.deepEqual(roles(items), ['message:assistant', 'message:user']);
  assert.equal(conversationOfPieces(['not json'], true), null, 'an unreadable piece gives the raw pieces');
  assert.equal(conversationOf('{"messages":[{"role":"user","content":"cut'), null);
});

test('Chat Completions: tool_calls and a role "tool" message', () => {
  const items = conversationOf(
    JSON.stringify({
      model: 'gpt-4.1',
      messages: [
        { role: 'developer', content: 'Be terse.' },
        { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'call_12345xyz',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"location":"Paris, France"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'call_12345xyz', content: '18C' },
      ],
      tools: [
        {
          type: 'function',
          function: { name: 'get_weather', description: 'Get weather', parameters: { type: 'object', properties: {} } },
        },
      ],
    }),
  );
  assert.deepEqual(roles(items), [
    'setting',
    'message:developer',
    'message:user',
    'message:assistant',
    'message:tool',
    'tool:get_weather',
  ]);
  const call = message(items, 3).parts[0];
  assert.deepEqual(call, {
    kind: 'tool_call',
    id: 'call_12345xyz',
    name: 'get_weather',
    input: JSON.stringify({ location: 'Paris, France' }, null, 2),
  });
  const result = message(items, 4).parts[0];
  assert.deepEqual(result, {
    kind: 'tool_result',
    id: 'call_12345xyz',
    is_error: false,
    parts: [{ kind: 'text', text: '18C' }],
  });
});

test('Responses: instructions, input items, function_call and function_call_output', () => {
  const items = conversationOf(
    JSON.stringify({
      model: 'gpt-4.1',
      instructions: 'Talk like a pirate.',
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'Weather in Bogotá?' }] },
        { type: 'function_call', call_id: 'call_abc', name: 'get_weather', arguments: '{"location":"Bogotá"}' },
        { type: 'function_call_output', call_id: 'call_abc', output: '{"temperature":25}' },
      ],
      tools: [{ type: 'function', name: 'get_weather', description: 'Get weather', parameters: { type: 'object' } }],
    }),
  );
  assert.deepEqual(roles(items), [
    'setting',
    'system',
    'message:user',
    'message:assistant',
    'message:tool',
    'tool:get_weather',
  ]);
  assert.deepEqual(message(items, 2).parts, [{ kind: 'text', text: 'Weather in Bogotá?' }]);
  assert.equal((message(items, 4).parts[0] as { kind: string }).kind, 'tool_result');
  assert.deepEqual(roles(conversationOf('{"model":"m","input":"hi"}')), ['setting', 'message:user']);
});

test('Gemini contents: systemInstruction, functionCall and functionResponse parts, functionDeclarations', () => {
  const items = conversationOf(
    JSON.stringify({
      systemInstruction: { parts: [{ text: 'You are a cat.' }] },
      contents: [
        { role: 'user', parts: [{ text: 'Turn the lights down.' }] },
        { role: 'model', parts: [{ functionCall: { name: 'dim_lights', args: { brightness: 0.3 } } }] },
        { role: 'user', parts: [{ functionResponse: { name: 'dim_lights', response: { ok: true } } }] },
      ],
      tools: [{ functionDeclarations: [{ name: 'dim_lights', description: 'Dim', parameters: { type: 'object' } }] }],
    }),
  );
  assert.deepEqual(roles(items), ['system', 'message:user', 'message:model', 'message:user', 'tool:dim_lights']);
  assert.equal((message(items, 2).parts[0] as { name: string }).name, 'dim_lights');
  assert.equal((message(items, 3).parts[0] as { kind: string }).kind, 'tool_result');
});
