// The official SDKs routed to a model of the other API family, through `cplane serve` (a real process on a
// bootstrapped root) in front of a local upstream speaking both real wire formats: the request is translated
// before it is sent, the reply (whole or streamed) translated back, one EXCHANGE each with the upstream's own usage.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { issueKey, ledgerEntries, startServed, type Served } from './harness.js';
import { assertAnthropicUpstreamUsage, exchangesIn, sdkClients } from './translated.js';
import { USAGE } from './upstream.js';

let served: Served;
let key: string;
const { anthropic, openai } = sdkClients(() => ({ url: served.url, key }));

before(async () => {
  served = await startServed();
  key = issueKey('AGENT-TRANSLATE');
});
after(async () => {
  await served.cleanup();
});

const exchangesOf = (session: string) => exchangesIn(served.root, session);

/** The EXCHANGE's usage is the upstream's, bucket by bucket, whatever format the client read it in. */
function assertChatUpstreamUsage(meta: Record<string, unknown>): void {
  assert.equal(meta.input_tokens, USAGE.input + USAGE.cacheRead, 'prompt_tokens, cache reads included');
  assert.equal(meta.output_tokens, USAGE.output);
  assert.equal(meta.cache_read_tokens, USAGE.cacheRead);
  assert.equal(meta.cache_write_tokens, 0, 'Chat Completions has no cache-write bucket');
  assert.equal(meta.usage_complete, true);
  assert.equal(meta.upstream_surface, 'openai.chat');
  assert.equal(meta.model_id, 'gpt-4.1-mini', 'priced for the model that served');
}

const weatherTool = {
  name: 'get_weather',
  description: 'weather',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } },
};

test('Anthropic SDK → gpt-4.1-mini, whole: sent to Chat Completions, the reply read as a Message with exact usage', async () => {
  const session = 'SES-T-A-JSON';
  const message = await anthropic(session).messages.create({
    model: 'gpt-4.1-mini',
    max_tokens: 256,
    system: 'Be brief.',
    stop_sequences: ['END'],
    metadata: { user_id: 'user-7' },
    messages: [{ role: 'user', content: 'Hello' }],
  });
  const seen = served.upstream.requests.at(-1);
  assert.equal(seen?.path, '/v1/chat/completions');
  assert.equal(seen?.headers.authorization, 'Bearer sk-openai-upstream-SECRET-0123456789');
  assert.deepEqual(seen?.body, {
    model: 'gpt-4.1-mini',
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hello' },
    ],
    max_completion_tokens: 256,
    stop: ['END'],
    user: 'user-7',
  });
  assert.deepEqual(message.content, [{ type: 'text', text: 'Hello from upstream' }]);
  assert.equal(message.stop_reason, 'end_turn');
  assert.equal(message.usage.input_tokens, USAGE.input, "Anthropic's input_tokens excludes cache reads");
  assert.equal(message.usage.cache_read_input_tokens, USAGE.cacheRead);
  assert.equal(message.usage.output_tokens, USAGE.output);
  const [exchange, ...more] = exchangesOf(session);
  assert.equal(more.length, 0);
  assert.ok(exchange);
  assertChatUpstreamUsage(exchange.metadata);
  assert.equal(exchange.metadata.surface, 'anthropic.messages');
  assert.deepEqual(JSON.parse(String(exchange.metadata.response)), [{ type: 'text', text: 'Hello from upstream' }]);
});

test('Anthropic SDK → gpt-4.1-mini, streamed with a tool call: Messages events in order, tool input and usage exact', async () => {
  const session = 'SES-T-A-STREAM';
  const stream = anthropic(session).messages.stream({
    model: 'gpt-4.1-mini',
    max_tokens: 256,
    tools: [weatherTool],
    messages: [{ role: 'user', content: 'weather in Paris?' }],
  });
  const types: string[] = [];
  stream.on('streamEvent', (event) => types.push(event.type));
  const final = await stream.finalMessage();
  assert.deepEqual(types, [
    'message_start',
    'content_block_start',
    'content_block_delta',
    'content_block_stop',
    'message_delta',
    'message_stop',
  ]);
  assert.deepEqual(final.content, [{ type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } }]);
  assert.equal(final.stop_reason, 'tool_use');
  assert.equal(final.usage.input_tokens, USAGE.input);
  assert.equal(final.usage.cache_read_input_tokens, USAGE.cacheRead);
  assert.equal(final.usage.output_tokens, USAGE.output);
  const seen = served.upstream.requests.at(-1)?.body;
  assert.deepEqual(seen?.stream_options, { include_usage: true }, 'usage asked of the upstream, never estimated');
  assert.deepEqual(seen?.tools, [
    {
      type: 'function',
      function: { name: 'get_weather', description: 'weather', parameters: weatherTool.input_schema },
    },
  ]);
  const [exchange, ...more] = exchangesOf(session);
  assert.equal(more.length, 0);
  assert.ok(exchange);
  assertChatUpstreamUsage(exchange.metadata);
  assert.equal(exchange.metadata.stream, true);
  assert.equal(exchange.metadata.finish_reason, 'tool_use');
});

test('Anthropic SDK → gpt-4.1-mini, a tool round trip over two turns: ids kept, the result sent as a tool message', async () => {
  const session = 'SES-T-A-TOOLS';
  const client = anthropic(session);
  const question = { role: 'user' as const, content: 'weather in Paris?' };
  const first = await client.messages.create({
    model: 'gpt-4.1-mini',
    max_tokens: 256,
    tools: [weatherTool],
    tool_choice: { type: 'auto' },
    messages: [question],
  });
  assert.equal(first.stop_reason, 'tool_use');
  const call = first.content.find((b) => b.type === 'tool_use');
  assert.ok(call && call.type === 'tool_use');
  assert.deepEqual(call.input, { city: 'Paris' });
  const second = await client.messages.create({
    model: 'gpt-4.1-mini',
    max_tokens: 256,
    tools: [weatherTool],
    messages: [
      question,
      { role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '18°C, sunny' }] },
    ],
  });
  assert.equal(second.stop_reason, 'end_turn');
  assert.deepEqual(second.content, [{ type: 'text', text: 'Hello from upstream' }]);
  const sent = served.upstream.requests.at(-1)?.body;
  assert.deepEqual(sent?.messages, [
    { role: 'user', content: 'weather in Paris?' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
      ],
    },
    { role: 'tool', tool_call_id: 'call_1', content: '18°C, sunny' },
  ]);
  assert.equal(sent?.tool_choice, undefined);
  const exchanges = exchangesOf(session);
  assert.equal(exchanges.length, 2);
  for (const e of exchanges) assertChatUpstreamUsage(e.metadata);
});

test('OpenAI SDK → claude-sonnet-4-5, whole: sent to Messages, the reply read as a chat completion with exact usage', async () => {
  const session = 'SES-T-O-JSON';
  const completion = await openai(session).chat.completions.create({
    model: 'claude-sonnet-4-5',
    max_completion_tokens: 256,
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hello' },
    ],
    stop: 'END',
    user: 'user-7',
  });
  const seen = served.upstream.requests.at(-1);
  assert.equal(seen?.path, '/v1/messages');
  assert.equal(seen?.headers['x-api-key'], 'sk-ant-upstream-SECRET-0123456789');
  assert.deepEqual(seen?.body, {
    model: 'claude-sonnet-4-5',
    max_tokens: 256,
    system: 'Be brief.',
    messages: [{ role: 'user', content: 'Hello' }],
    stop_sequences: ['END'],
    metadata: { user_id: 'user-7' },
  });
  assert.equal(completion.object, 'chat.completion');
  assert.equal(completion.choices[0]?.message.content, 'Hello from upstream');
  assert.equal(completion.choices[0]?.finish_reason, 'stop');
  assert.equal(completion.usage?.prompt_tokens, USAGE.input + USAGE.cacheWrite + USAGE.cacheRead);
  assert.equal(completion.usage?.prompt_tokens_details?.cached_tokens, USAGE.cacheRead);
  assert.equal(completion.usage?.completion_tokens, USAGE.output);
  const [exchange, ...more] = exchangesOf(session);
  assert.equal(more.length, 0);
  assert.ok(exchange);
  assertAnthropicUpstreamUsage(exchange.metadata);
  assert.equal(exchange.metadata.surface, 'openai.chat');
});

const chatTool = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } } },
  },
};

test('OpenAI SDK → claude-sonnet-4-5, streamed with a tool call and include_usage: chunks in order, usage exact', async () => {
  const session = 'SES-T-O-STREAM';
  const stream = await openai(session).chat.completions.create({
    model: 'claude-sonnet-4-5',
    max_completion_tokens: 256,
    stream: true,
    stream_options: { include_usage: true },
    tools: [chatTool],
    messages: [{ role: 'user', content: 'weather in Paris?' }],
  });
  let text = '';
  let args = '';
  let finish: string | null = null;
  let usage: OpenAI.CompletionUsage | null | undefined = null;
  const ids: string[] = [];
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    text += choice?.delta.content ?? '';
    for (const call of choice?.delta.tool_calls ?? []) {
      if (call.id) ids.push(call.id);
      args += call.function?.arguments ?? '';
    }
    finish = choice?.finish_reason ?? finish;
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(text, 'Hello from upstream');
  assert.deepEqual(ids, ['toolu_01']);
  assert.deepEqual(JSON.parse(args), { city: 'Paris' });
  assert.equal(finish, 'tool_calls');
  assert.equal(usage?.prompt_tokens, USAGE.input + USAGE.cacheWrite + USAGE.cacheRead);
  assert.equal(usage?.completion_tokens, USAGE.output);
  assert.equal(usage?.prompt_tokens_details?.cached_tokens, USAGE.cacheRead);
  const [exchange, ...more] = exchangesOf(session);
  assert.equal(more.length, 0);
  assert.ok(exchange);
  assertAnthropicUpstreamUsage(exchange.metadata);
  assert.equal(exchange.metadata.stream, true);
  assert.equal(exchange.metadata.finish_reason, 'tool_use');
});

test('OpenAI SDK → claude-sonnet-4-5, streamed without include_usage: no usage chunk reaches the client', async () => {
  const session = 'SES-T-O-NOUSAGE';
  const stream = await openai(session).chat.completions.create({
    model: 'claude-sonnet-4-5',
    max_completion_tokens: 256,
    stream: true,
    messages: [{ role: 'user', content: 'Hello' }],
  });
  let text = '';
  for await (const chunk of stream) {
    assert.ok(chunk.usage === undefined || chunk.usage === null, 'the usage chunk is the client’s to ask for');
    text += chunk.choices[0]?.delta.content ?? '';
  }
  assert.equal(text, 'Hello from upstream');
  assertAnthropicUpstreamUsage(exchangesOf(session)[0]?.metadata ?? {});
});

test('OpenAI SDK → claude-sonnet-4-5, a tool round trip over two turns: ids kept, the result sent as tool_result', async () => {
  const session = 'SES-T-O-TOOLS';
  const client = openai(session);
  const question = { role: 'user' as const, content: 'weather in Paris?' };
  const first = await client.chat.completions.create({
    model: 'claude-sonnet-4-5',
    max_completion_tokens: 256,
    tools: [chatTool],
    tool_choice: 'required',
    messages: [question],
  });
  const message = first.choices[0]?.message;
  assert.equal(first.choices[0]?.finish_reason, 'tool_calls');
  assert.equal(message?.content, 'Hello from upstream');
  const call = message?.tool_calls?.[0];
  assert.ok(call && call.type === 'function');
  assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Paris' });
  assert.deepEqual(served.upstream.requests.at(-1)?.body?.tool_choice, { type: 'any' });
  const second = await client.chat.completions.create({
    model: 'claude-sonnet-4-5',
    max_completion_tokens: 256,
    tools: [chatTool],
    messages: [
      question,
      { role: 'assistant', content: message.content, tool_calls: message.tool_calls ?? [] },
      { role: 'tool', tool_call_id: call.id, content: '18°C, sunny' },
    ],
  });
  assert.equal(second.choices[0]?.finish_reason, 'stop');
  const sent = served.upstream.requests.at(-1)?.body;
  assert.deepEqual(sent?.messages, [
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
  const exchanges = exchangesOf(session);
  assert.equal(exchanges.length, 2);
  for (const e of exchanges) assertAnthropicUpstreamUsage(e.metadata);
});

test('a Claude-Code-like turn after a failed tool (is_error: true) reaches a gpt model; the tool message says Error', async () => {
  const session = 'SES-T-TOOL-ERROR';
  // As Claude Code sends it: its beta header, cached system blocks and tools, the failed Bash call's result.
  const res = await fetch(`${served.url}/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': key,
      'anthropic-version': '2023-06-01',
      'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14',
      'x-cplane-session': session,
    },
    body: JSON.stringify({
      model: 'gpt-4.1-mini',
      max_tokens: 32000,
      system: [
        { type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'Working directory: /repo' },
      ],
      tools: [
        {
          name: 'Bash',
          description: 'Run a command',
          input_schema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
          cache_control: { type: 'ephemeral' },
        },
      ],
      metadata: { user_id: 'user_abc_account__session_123' },
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'run the tests' }] },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'toolu_01', name: 'Bash', input: { command: 'npm t' } }],
        },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 'toolu_01',
              is_error: true,
              content: [{ type: 'text', text: 'Exit code 1\nnpm ERR! Missing script: "t"' }],
            },
          ],
        },
      ],
    }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  const message = (await res.json()) as { content: unknown };
  assert.deepEqual(message.content, [{ type: 'text', text: 'Hello from upstream' }]);
  const sent = served.upstream.requests.at(-1)?.body;
  assert.deepEqual((sent?.messages as unknown[] | undefined)?.at(-1), {
    role: 'tool',
    tool_call_id: 'toolu_01',
    content: 'Error: Exit code 1\nnpm ERR! Missing script: "t"',
  });
  const [exchange, ...more] = exchangesOf(session);
  assert.equal(more.length, 0);
  assert.ok(exchange);
  assertChatUpstreamUsage(exchange.metadata);
});

test('an untranslatable field is refused with TRANSLATION_UNSUPPORTED naming it; nothing reaches the upstream', async () => {
  const before = served.upstream.requests.length;
  await assert.rejects(
    openai('SES-T-REFUSE-O').chat.completions.create({
      model: 'claude-sonnet-4-5',
      max_completion_tokens: 256,
      n: 2,
      messages: [{ role: 'user', content: 'Hello' }],
    }),
    (e: unknown) =>
      e instanceof OpenAI.BadRequestError && /TRANSLATION_UNSUPPORTED/.test(e.message) && /\bn\b/.test(e.message),
  );
  await assert.rejects(
    anthropic('SES-T-REFUSE-A').messages.create({
      model: 'gpt-4.1-mini',
      max_tokens: 2048,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [{ role: 'user', content: 'Hello' }],
    }),
    (e: unknown) =>
      e instanceof Anthropic.BadRequestError && /TRANSLATION_UNSUPPORTED/.test(e.message) && /thinking/.test(e.message),
  );
  assert.equal(served.upstream.requests.length, before, 'the fake upstream saw no request');
  const refusals = ledgerEntries(served.root).filter(
    (e) => e.event_type === 'PROMPT_REJECTED' && JSON.stringify(e).includes('TRANSLATION_UNSUPPORTED'),
  );
  assert.equal(refusals.length, 2);
  assert.equal(exchangesOf('SES-T-REFUSE-O').length + exchangesOf('SES-T-REFUSE-A').length, 0);
});

test('an upstream error on a translated call reaches the client in its own API shape, its message kept', async () => {
  const session = 'SES-T-UPSTREAM-400';
  served.upstream.faults.push({
    status: 400,
    body: {
      error: {
        message: "Invalid 'messages[0].content': empty.",
        type: 'invalid_request_error',
        param: null,
        code: null,
      },
    },
  });
  await assert.rejects(
    anthropic(session).messages.create({
      model: 'gpt-4.1-mini',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'Hello' }],
    }),
    (e: unknown) => e instanceof Anthropic.BadRequestError && /messages\[0\]\.content/.test(e.message),
  );
  const [failed] = exchangesOf(session);
  assert.equal(failed?.decision, 'ERROR');
  assert.equal(failed?.metadata.upstream_surface, 'openai.chat');
});

test('a translated stream cut mid-way: the client gets an error, the EXCHANGE keeps the partial content, usage unknown', async () => {
  const session = 'SES-T-DIED';
  served.upstream.faults.push({ dieAfterFrames: 2 });
  const stream = anthropic(session).messages.stream({
    model: 'gpt-4.1-mini',
    max_tokens: 64,
    messages: [{ role: 'user', content: 'Hello' }],
  });
  await assert.rejects(stream.finalMessage(), (e: unknown) => {
    assert.ok(!String(e).includes(served.upstream.url), "the client is not told the upstream's address");
    return true;
  });
  const [cut] = exchangesOf(session);
  assert.equal(cut?.decision, 'ERROR');
  assert.equal(cut?.metadata.usage_complete, false);
  assert.match(String(cut?.metadata.response), /Hello /);
});
