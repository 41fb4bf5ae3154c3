// Claude's extended thinking through Bedrock Converse, as AWS documents it: the request's `thinking` in
// `additionalModelRequestFields`, earlier turns' thinking sent back as `reasoningContent` (reasoningText with its
// signature, redactedContent), and the reply's reasoning blocks — whole and streamed — read back as Messages
// thinking and redacted_thinking blocks with exact usage.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inspect } from 'node:util';
import { isProviderError } from '#providers/errors.js';
import { readText } from '#providers/http.js';
import { SseParser } from '#providers/wire/sse.js';
import { BedrockProvider } from '../../providers/bedrock/provider.js';
import { fixedClock } from '#tests/providers/fixtures/clock.js';
import { ScriptedServer } from '#tests/providers/fixtures/server.js';
import { converseStream, converseWhole, reasoningEvents } from './converse-fake.js';

const ENV = { AWS_ACCESS_KEY_ID: 'AKIAIOSFODNN7EXAMPLE', AWS_SECRET_ACCESS_KEY: 'secret', AWS_REGION: 'us-east-1' };
const CLAUDE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const SIGNATURE = 'EqQBCkgIARABGAIiQL2nKXyTj4Q1t0uKMfzyHbUGrh+e3DEWTH5Ft6ptS1kkSGpHxFxCv9Kt2dk0Bb1B0+Nq8hqWmJb8Ly';
const REDACTED = 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP';

const make = (baseUrl: string) =>
  new BedrockProvider({
    // Claude goes through InvokeModel unless the operator sends every model through Converse.
    config: { base_url: baseUrl, options: { api: 'converse', models: { claude: CLAUDE, llama: 'meta.llama3' } } },
    env: ENV,
    clock: fixedClock(),
    readFile: () => null,
  });

const REQUEST = {
  model: 'claude',
  max_tokens: 4096,
  thinking: { type: 'enabled', budget_tokens: 2048 },
  messages: [
    { role: 'user', content: 'Is 1021 prime?' },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'No divisor up to 31 divides it.', signature: SIGNATURE },
        { type: 'redacted_thinking', data: REDACTED },
        { type: 'text', text: 'Yes.' },
      ],
    },
    { role: 'user', content: 'And 1023?' },
  ],
};

const USAGE = { inputTokens: 120, outputTokens: 310, cacheReadInputTokens: 1000, cacheWriteInputTokens: 0 };

test('converse reasoning: thinking goes in additionalModelRequestFields, earlier reasoning back with its signature', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  const content = [
    { reasoningContent: { reasoningText: { text: '1023 = 3 × 341.', signature: 'sig-2' } } },
    { reasoningContent: { redactedContent: 'cmVkYWN0ZWQ=' } },
    { text: 'No: 1023 = 3 × 11 × 31.' },
  ];
  server.push(converseWhole('req-think-1', content, 'end_turn', USAGE));
  const provider = make(server.url);
  const response = await provider.call(
    { surface: 'anthropic.messages', body: REQUEST, headers: {} },
    { timeoutMs: 5000 },
  );
  const sent = server.received[0];
  assert.equal(sent?.url, `/model/${encodeURIComponent(CLAUDE)}/converse`);
  assert.deepEqual(sent?.json, {
    messages: [
      { role: 'user', content: [{ text: 'Is 1021 prime?' }] },
      {
        role: 'assistant',
        content: [
          { reasoningContent: { reasoningText: { text: 'No divisor up to 31 divides it.', signature: SIGNATURE } } },
          { reasoningContent: { redactedContent: REDACTED } },
          { text: 'Yes.' },
        ],
      },
      { role: 'user', content: [{ text: 'And 1023?' }] },
    ],
    inferenceConfig: { maxTokens: 4096 },
    additionalModelRequestFields: { thinking: { type: 'enabled', budget_tokens: 2048 } },
  });
  const reply = JSON.parse(await readText(response.body, Number.POSITIVE_INFINITY)) as Record<string, unknown>;
  assert.deepEqual(reply.content, [
    { type: 'thinking', thinking: '1023 = 3 × 341.', signature: 'sig-2' },
    { type: 'redacted_thinking', data: 'cmVkYWN0ZWQ=' },
    { type: 'text', text: 'No: 1023 = 3 × 11 × 31.' },
  ]);
  const reader = provider.reader('anthropic.messages');
  assert.equal(reader.body(reply), null);
  const { usage } = reader.result();
  // Thinking is output: Converse's outputTokens holds it, as Anthropic's output_tokens does.
  assert.deepEqual(
    [usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens, usage.output_tokens],
    [1120, 1000, 0, 310],
  );
});

test('converse-stream reasoning: reasoningContent deltas become thinking, signature and redacted_thinking events', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  const thought: [string, string] = ['1023 = 3', ' × 341.'];
  server.push(converseStream('req-think-2', reasoningEvents(thought, 'sig-2', 'cmVkYWN0ZWQ=', 'No.', USAGE)));
  const provider = make(server.url);
  const body = { ...REQUEST, stream: true };
  const response = await provider.call({ surface: 'anthropic.messages', body, headers: {} }, { timeoutMs: 5000 });
  assert.equal(server.received[0]?.url, `/model/${encodeURIComponent(CLAUDE)}/converse-stream`);
  const reader = provider.reader('anthropic.messages');
  const parser = new SseParser();
  const events: [string | null, Record<string, unknown>][] = [];
  for await (const chunk of response.body)
    for (const frame of parser.push(chunk))
      if (frame.data !== null) {
        events.push([frame.event, JSON.parse(frame.data)]);
        reader.event(frame.event, frame.data);
      }
  const blockEvents = events
    .filter(([name]) => name?.startsWith('content_block'))
    .map(([name, data]) => [name, data.index, data.content_block ?? data.delta ?? null]);
  assert.deepEqual(blockEvents, [
    ['content_block_start', 0, { type: 'thinking', thinking: '', signature: '' }],
    ['content_block_delta', 0, { type: 'thinking_delta', thinking: '1023 = 3' }],
    ['content_block_delta', 0, { type: 'thinking_delta', thinking: ' × 341.' }],
    ['content_block_delta', 0, { type: 'signature_delta', signature: 'sig-2' }],
    ['content_block_stop', 0, null],
    ['content_block_start', 1, { type: 'redacted_thinking', data: 'cmVkYWN0ZWQ=' }],
    ['content_block_stop', 1, null],
    ['content_block_start', 2, { type: 'text', text: '' }],
    ['content_block_delta', 2, { type: 'text_delta', text: 'No.' }],
    ['content_block_stop', 2, null],
  ]);
  const result = reader.result();
  assert.deepEqual(
    result.blocks.map((b) => b.type),
    ['thinking', 'redacted_thinking', 'text'],
  );
  assert.equal(result.blocks[0]?.thinking, '1023 = 3 × 341.');
  assert.deepEqual(
    [result.usage.input_tokens, result.usage.cache_read_tokens, result.usage.output_tokens, result.usage_final],
    [1120, 1000, 310, true],
  );
  assert.equal(result.complete, true);
});

test('converse reasoning: thinking for a model that is not Claude, or in a form Converse does not document, is refused', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  const provider = make(server.url);
  const cases: [Record<string, unknown>, string][] = [
    [{ ...REQUEST, model: 'llama' }, '"thinking"'],
    [{ ...REQUEST, thinking: { type: 'enabled' } }, '"thinking.budget_tokens"'],
    [{ ...REQUEST, thinking: { type: 'enabled', budget_tokens: 2048, display: 'x' } }, '"thinking.display"'],
  ];
  for (const [body, field] of cases) {
    const error = await provider.call({ surface: 'anthropic.messages', body, headers: {} }, { timeoutMs: 5000 }).then(
      () => assert.fail(`${field}: expected a refusal`),
      (e: unknown) => e,
    );
    assert.ok(isProviderError(error) && error.message.includes(field), inspect(error));
  }
  assert.equal(server.received.length, 0);
});
