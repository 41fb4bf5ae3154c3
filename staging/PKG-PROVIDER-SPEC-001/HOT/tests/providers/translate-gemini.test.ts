// Gemini ⇄ Messages translation (and Gemini ⇄ Chat Completions through Messages): requests, replies, streams.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { translatorFor, type Translator } from '../../providers/translate/index.js';
import type { SseFrame } from '../../providers/wire/sse.js';

const g2a = translatorFor('gemini.generate', 'anthropic.messages') as Translator;
const gs2a = translatorFor('gemini.stream', 'anthropic.messages') as Translator;
const g2c = translatorFor('gemini.generate', 'openai.chat') as Translator;
const a2g = translatorFor('anthropic.messages', 'gemini.generate') as Translator;
const c2g = translatorFor('openai.chat', 'gemini.generate', () => 1_700_000_000) as Translator;
const call = { model: 'claude-sonnet-4-5', stream: false, defaultMaxTokens: 32_000 };

function ok(result: ReturnType<Translator['request']>): Record<string, unknown> {
  assert.ok(result.ok, result.ok ? '' : `${result.refusal.field}: ${result.refusal.why}`);
  return result.value;
}
function refused(result: ReturnType<Translator['request']>): string {
  assert.ok(!result.ok, 'expected a refusal');
  return result.refusal.field;
}

const PNG = 'iVBORw0KGgo=';

test('Gemini → Messages request: system parts, images, function calls paired with their responses, schemas', () => {
  const body = {
    systemInstruction: { role: 'user', parts: [{ text: 'Be brief.' }, { text: 'Use tools.' }] },
    contents: [
      { role: 'user', parts: [{ text: 'look' }, { inlineData: { mimeType: 'image/png', data: PNG } }] },
      {
        role: 'model',
        parts: [{ text: 'calling' }, { functionCall: { name: 'get_weather', args: { city: 'Paris' } } }],
      },
      { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { error: 'offline' } } }] },
      { role: 'model', parts: [{ functionCall: { id: 'fc-9', name: 'get_weather', args: {} } }] },
      { parts: [{ functionResponse: { id: 'fc-9', name: 'get_weather', response: { sky: 'clear', temp: 18 } } }] },
    ],
    tools: [
      {
        functionDeclarations: [
          {
            name: 'get_weather',
            description: 'weather',
            parameters: {
              type: 'OBJECT',
              properties: {
                city: { type: 'STRING', nullable: true },
                days: { type: 'ARRAY', items: { type: 'INTEGER' } },
              },
              required: ['city'],
              propertyOrdering: ['city', 'days'],
            },
          },
          { name: 'now' },
        ],
      },
    ],
    toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['now'] } },
    generationConfig: { maxOutputTokens: 99, temperature: 0.2, topP: 0.9, topK: 5, stopSequences: ['X'] },
  };
  assert.deepEqual(ok(gs2a.request(body, { ...call, stream: true })), {
    model: 'claude-sonnet-4-5',
    max_tokens: 99,
    system: [
      { type: 'text', text: 'Be brief.' },
      { type: 'text', text: 'Use tools.' },
    ],
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'calling' },
          { type: 'tool_use', id: 'call_1_1', name: 'get_weather', input: { city: 'Paris' } },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1_1', content: 'offline', is_error: true }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'fc-9', name: 'get_weather', input: {} }] },
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: 'fc-9', content: '{"sky":"clear","temp":18}' }],
      },
    ],
    temperature: 0.2,
    top_p: 0.9,
    top_k: 5,
    stop_sequences: ['X'],
    tools: [
      {
        name: 'get_weather',
        description: 'weather',
        input_schema: {
          type: 'object',
          properties: { city: { type: ['string', 'null'] }, days: { type: 'array', items: { type: 'integer' } } },
          required: ['city'],
        },
      },
      { name: 'now', input_schema: { type: 'object', properties: {} } },
    ],
    tool_choice: { type: 'tool', name: 'now' },
    stream: true,
  });
  // No output limit in the body: the one the gateway reserved for.
  assert.equal(ok(g2a.request({ contents: [{ parts: [{ text: 'hi' }] }] }, call)).max_tokens, 32_000);
});

const gBase = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] };

test('Gemini → Messages / Chat request: what the target cannot express is refused, naming the Gemini field', () => {
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ ...gBase, safetySettings: [] }, 'safetySettings'],
    [{ ...gBase, cachedContent: 'cachedContents/x' }, 'cachedContent'],
    [{ ...gBase, generationConfig: { candidateCount: 2 } }, 'generationConfig.candidateCount'],
    [{ ...gBase, generationConfig: { responseMimeType: 'application/json' } }, 'generationConfig.responseMimeType'],
    [{ ...gBase, generationConfig: { temperature: 1.5 } }, 'generationConfig.temperature'],
    [{ ...gBase, generationConfig: { thinkingConfig: { thinkingBudget: 1024 } } }, 'generationConfig.thinkingConfig'],
    [
      { ...gBase, generationConfig: { thinkingConfig: { includeThoughts: 'yes' } } },
      'generationConfig.thinkingConfig.includeThoughts',
    ],
    [{ ...gBase, generationConfig: { seed: 7 } }, 'generationConfig.seed'],
    [{ contents: [{ role: 'user', parts: [{ fileData: { fileUri: 'gs://x' } }] }] }, 'contents[0].parts[0].fileData'],
    [
      { contents: [{ role: 'user', parts: [{ inlineData: { mimeType: 'audio/wav', data: 'AA==' } }] }] },
      'contents[0].parts[0].inlineData.mimeType',
    ],
    [{ contents: [{ role: 'model', parts: [{ text: 'x', thought: true }] }] }, 'contents[0].parts[0].thought'],
    [
      { contents: [{ role: 'user', parts: [{ functionResponse: { name: 'f', response: {} } }] }] },
      'contents[0].parts[0].functionResponse.id',
    ],
    [{ ...gBase, tools: [{ googleSearch: {} }] }, 'tools[0].googleSearch'],
    [
      { ...gBase, tools: [{ functionDeclarations: [{ name: 'f', parameters: { type: 'OBJECT', oneOf: [] } }] }] },
      'tools[0].functionDeclarations[0].parameters.oneOf',
    ],
    [
      { ...gBase, toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['a', 'b'] } } },
      'toolConfig.functionCallingConfig.allowedFunctionNames',
    ],
    [
      { ...gBase, toolConfig: { functionCallingConfig: { mode: 'VALIDATED' } } },
      'toolConfig.functionCallingConfig.mode',
    ],
  ];
  for (const [body, field] of cases) assert.equal(refused(g2a.request(body, call)), field, JSON.stringify(body));
  // Through Messages to Chat: Chat's refusals named as the Gemini field they came from; Chat's wider range accepted.
  const gpt = { ...call, model: 'gpt-4.1-mini' };
  assert.equal(refused(g2c.request({ ...gBase, generationConfig: { topK: 3 } }, gpt)), 'generationConfig.topK');
  assert.equal(
    refused(g2c.request({ ...gBase, generationConfig: { stopSequences: ['a', 'b', 'c', 'd', 'e'] } }, gpt)),
    'generationConfig.stopSequences',
  );
  const chat = ok(g2c.request({ ...gBase, generationConfig: { temperature: 1.5, maxOutputTokens: 9 } }, gpt));
  assert.deepEqual(chat, {
    model: 'gpt-4.1-mini',
    messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
    max_completion_tokens: 9,
    temperature: 1.5,
  });
});

test("Gemini → Messages request: Google's placeholder thought signature on a call carries no thought; a real one is refused", () => {
  // Gemini CLI marks the first call of each model turn in its active loop with Google's documented placeholder when it
  // has no signature from the model (https://ai.google.dev/gemini-api/docs/thought-signatures).
  const history = (signature: Record<string, string>) => ({
    contents: [
      { role: 'user', parts: [{ text: 'List the files.' }] },
      {
        role: 'model',
        parts: [
          { text: 'Listing.' },
          { functionCall: { name: 'list_directory', args: { dir_path: '/w' } }, ...signature },
        ],
      },
      {
        role: 'user',
        parts: [{ functionResponse: { name: 'list_directory', response: { output: 'notes.txt' } } }],
      },
    ],
  });
  const placeholder = history({ thoughtSignature: 'skip_thought_signature_validator' });
  const minted = history({ thoughtSignature: 'CiQBcsjafQ==' });
  assert.deepEqual(ok(g2a.request(placeholder, call)), ok(g2a.request(history({}), call)));
  assert.deepEqual(ok(g2a.request(placeholder, call)).messages, [
    { role: 'user', content: [{ type: 'text', text: 'List the files.' }] },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Listing.' },
        { type: 'tool_use', id: 'call_1_1', name: 'list_directory', input: { dir_path: '/w' } },
      ],
    },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1_1', content: 'notes.txt' }] },
  ]);
  // A signature the model minted holds thoughts only Gemini can read: refused, on every target.
  assert.equal(refused(g2a.request(minted, call)), 'contents[1].parts[1].thoughtSignature');
  const gpt = { ...call, model: 'gpt-4.1-mini' };
  assert.equal(refused(g2c.request(minted, gpt)), 'contents[1].parts[1].thoughtSignature');
  ok(g2c.request(placeholder, gpt));
});

test('Messages → Gemini request: system, parts in order, tool calls by id, results by name, choices; refusals', () => {
  const body = {
    model: 'gemini-2.5-flash',
    max_tokens: 50,
    system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: PNG } },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'toolu_1', name: 'f', input: { a: 1 } },
          { type: 'tool_use', id: 'toolu_gemini_r_0', name: 'g', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'done' }] },
          { type: 'tool_result', tool_use_id: 'toolu_gemini_r_0', content: 'boom', is_error: true },
        ],
      },
    ],
    tools: [{ name: 'f', description: 'd', input_schema: { type: 'object', properties: {} } }],
    tool_choice: { type: 'tool', name: 'f' },
    stop_sequences: ['END'],
    temperature: 0.3,
    top_k: 4,
    metadata: { user_id: 'u-1' },
    stream: true,
  };
  assert.deepEqual(ok(a2g.request(body)), {
    systemInstruction: { parts: [{ text: 'Be brief.' }] },
    contents: [
      { role: 'user', parts: [{ text: 'look' }, { inlineData: { mimeType: 'image/jpeg', data: PNG } }] },
      {
        role: 'model',
        parts: [
          { functionCall: { id: 'toolu_1', name: 'f', args: { a: 1 } } },
          { functionCall: { name: 'g', args: {} } },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { id: 'toolu_1', name: 'f', response: { output: 'done' } } },
          { functionResponse: { name: 'g', response: { error: 'boom' } } },
        ],
      },
    ],
    generationConfig: { maxOutputTokens: 50, stopSequences: ['END'], temperature: 0.3, topK: 4 },
    tools: [
      {
        functionDeclarations: [
          { name: 'f', description: 'd', parametersJsonSchema: { type: 'object', properties: {} } },
        ],
      },
    ],
    toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['f'] } },
  });
  const base = { model: 'gemini-2.5-flash', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
  const user = (block: unknown) => ({ ...base, messages: [{ role: 'user', content: [block] }] });
  const cases: Array<[Record<string, unknown>, string]> = [
    [user({ type: 'image', source: { type: 'url', url: 'https://x/y.png' } }), 'messages[0].content[0].source.type'],
    [user({ type: 'document', source: {} }), 'messages[0].content[0].type'],
    [user({ type: 'tool_result', tool_use_id: 'nobody', content: 'x' }), 'messages[0].content[0].tool_use_id'],
    [{ ...base, stop_sequences: ['1', '2', '3', '4', '5', '6'] }, 'stop_sequences'],
    [{ ...base, thinking: { type: 'enabled', budget_tokens: 1024 } }, 'thinking'],
    [
      { ...base, tool_choice: { type: 'auto', disable_parallel_tool_use: true } },
      'tool_choice.disable_parallel_tool_use',
    ],
    [{ ...base, tools: [{ type: 'web_search_20250305', name: 'web_search' }] }, 'tools[0].type'],
    [{ ...base, service_tier: 'auto' }, 'service_tier'],
  ];
  for (const [b, field] of cases) assert.equal(refused(a2g.request(b)), field, JSON.stringify(b));
  // Chat → Gemini goes through Messages: a refusal of the second step says it names the Messages form's field.
  const viaMessages = c2g.request({
    model: 'gemini-2.5-flash',
    max_completion_tokens: 5,
    messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png' } }] }],
  });
  assert.ok(!viaMessages.ok);
  assert.equal(viaMessages.refusal.field, 'messages[0].content[0].source.type');
  assert.match(viaMessages.refusal.why, /anthropic\.messages form/);
});

const geminiReply = {
  candidates: [
    {
      content: {
        role: 'model',
        parts: [{ text: 'Hel' }, { text: 'lo' }, { functionCall: { name: 'f', args: { a: 1 } } }],
      },
      finishReason: 'STOP',
      index: 0,
    },
  ],
  usageMetadata: {
    promptTokenCount: 100,
    cachedContentTokenCount: 60,
    toolUsePromptTokenCount: 5,
    candidatesTokenCount: 20,
    thoughtsTokenCount: 7,
    totalTokenCount: 132,
  },
  modelVersion: 'gemini-2.5-flash',
  responseId: 'resp-1',
};

test('whole replies: Gemini → Messages (ids made up where Gemini gave none) and Messages → Gemini, usage by bucket', () => {
  assert.deepEqual(ok(a2g.reply(geminiReply)), {
    id: 'msg_resp-1',
    type: 'message',
    role: 'assistant',
    model: 'gemini-2.5-flash',
    content: [
      { type: 'text', text: 'Hello' },
      { type: 'tool_use', id: 'toolu_gemini_resp-1_0', name: 'f', input: { a: 1 } },
    ],
    stop_reason: 'tool_use',
    stop_sequence: null,
    usage: { input_tokens: 45, cache_creation_input_tokens: 0, cache_read_input_tokens: 60, output_tokens: 27 },
  });
  const capped = { ...geminiReply, candidates: [{ content: { parts: [{ text: 'x' }] }, finishReason: 'MAX_TOKENS' }] };
  assert.equal(ok(a2g.reply(capped)).stop_reason, 'max_tokens');
  const blocked = { promptFeedback: { blockReason: 'SAFETY' }, usageMetadata: { promptTokenCount: 3 } };
  assert.equal(ok(a2g.reply(blocked)).stop_reason, 'refusal');
  assert.equal(
    refused(a2g.reply({ ...geminiReply, candidates: [{ finishReason: 'MALFORMED_FUNCTION_CALL' }] })),
    'candidates[0].finishReason',
  );
  const message = {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-5',
    content: [
      { type: 'text', text: 'Hi' },
      { type: 'tool_use', id: 'toolu_1', name: 'f', input: { a: 1 } },
    ],
    stop_reason: 'tool_use',
    stop_sequence: null,
    usage: { input_tokens: 10, cache_creation_input_tokens: 3, cache_read_input_tokens: 40, output_tokens: 7 },
  };
  assert.deepEqual(ok(g2a.reply(message)), {
    candidates: [
      {
        content: {
          role: 'model',
          parts: [{ text: 'Hi' }, { functionCall: { id: 'toolu_1', name: 'f', args: { a: 1 } } }],
        },
        finishReason: 'STOP',
        index: 0,
      },
    ],
    usageMetadata: {
      promptTokenCount: 53,
      cachedContentTokenCount: 40,
      candidatesTokenCount: 7,
      totalTokenCount: 60,
      cacheCreationInputTokenCount: 3,
    },
    modelVersion: 'claude-sonnet-4-5',
    responseId: 'msg_1',
  });
  const capped2 = ok(g2a.reply({ ...message, stop_reason: 'max_tokens' })) as {
    candidates: { finishReason: string }[];
  };
  assert.equal(capped2.candidates[0]?.finishReason, 'MAX_TOKENS');
  assert.equal(refused(g2a.reply({ ...message, stop_reason: 'pause_turn' })), 'stop_reason');
  assert.equal(refused(g2a.reply({ ...message, content: [{ type: 'thinking', thinking: 'x' }] })), 'content[0].type');
});

const sse = (event: string | null, data: unknown): SseFrame => {
  const text = JSON.stringify(data);
  return { raw: `${event === null ? '' : `event: ${event}\n`}data: ${text}\n\n`, event, data: text };
};
const payloads = (frames: SseFrame[]) => frames.map((f) => JSON.parse(f.data ?? 'null') as Record<string, unknown>);

test('stream Gemini → Messages: text runs, a whole function call as one block, the last chunk ends the message', () => {
  const stream = a2g.stream();
  const chunk = (parts: unknown[], extra: Record<string, unknown> = {}) =>
    sse(null, {
      candidates: [{ content: { role: 'model', parts }, index: 0, ...extra }],
      responseId: 'r1',
      modelVersion: 'gemini-2.5-flash',
    });
  const out = [
    ...stream.push(chunk([{ text: 'Hel' }])),
    ...stream.push(chunk([{ text: 'lo' }])),
    ...stream.push(chunk([{ functionCall: { id: 'c1', name: 'f', args: { a: 1 } } }], { finishReason: 'STOP' })),
  ];
  const last = sse(null, {});
  assert.deepEqual(stream.push(last), []);
  const types = out.map((f) => f.event);
  assert.deepEqual(types, [
    'message_start',
    'content_block_start',
    'content_block_delta',
    'content_block_delta',
    'content_block_stop',
    'content_block_start',
    'content_block_delta',
    'content_block_stop',
    'message_delta',
    'message_stop',
  ]);
  const body = payloads(out);
  assert.deepEqual(body[5]?.content_block, { type: 'tool_use', id: 'c1', name: 'f', input: {} });
  assert.deepEqual(body[6]?.delta, { type: 'input_json_delta', partial_json: '{"a":1}' });
  assert.deepEqual((body[8] as { delta?: unknown }).delta, { stop_reason: 'tool_use', stop_sequence: null });
  // No usageMetadata in the last chunk: every bucket unknown, never estimated.
  assert.deepEqual((body[8] as { usage?: unknown }).usage, {
    input_tokens: null,
    cache_creation_input_tokens: null,
    cache_read_input_tokens: null,
    output_tokens: null,
  });
});

test('stream Messages → Gemini: each chunk one event late, the last carrying finishReason and usageMetadata', () => {
  const stream = g2a.stream();
  const events = [
    sse('message_start', {
      type: 'message_start',
      message: {
        id: 'msg_1',
        model: 'claude-sonnet-4-5',
        usage: { input_tokens: 10, cache_creation_input_tokens: 0, cache_read_input_tokens: 5, output_tokens: 1 },
      },
    }),
    sse('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
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
    sse('message_delta', { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 9 } }),
    sse('message_stop', { type: 'message_stop' }),
  ];
  const out = payloads(events.flatMap((e) => stream.push(e)));
  assert.deepEqual(out, [
    {
      candidates: [{ content: { role: 'model', parts: [{ text: 'Hi' }] }, index: 0 }],
      modelVersion: 'claude-sonnet-4-5',
      responseId: 'msg_1',
    },
    {
      candidates: [
        {
          content: { role: 'model', parts: [{ functionCall: { id: 'toolu_1', name: 'f', args: { a: 1 } } }] },
          index: 0,
          finishReason: 'STOP',
        },
      ],
      usageMetadata: {
        promptTokenCount: 15,
        cachedContentTokenCount: 5,
        candidatesTokenCount: 9,
        totalTokenCount: 24,
        cacheCreationInputTokenCount: 0,
      },
      modelVersion: 'claude-sonnet-4-5',
      responseId: 'msg_1',
    },
  ]);
  assert.throws(() =>
    g2a
      .stream()
      .push(sse('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'thinking' } })),
  );
});
