// A cloud provider chosen by operator config (`gateway.upstreams`), behind `cplane serve` on a bootstrapped root:
// the official Anthropic SDK streams through the gateway to a local Bedrock runtime speaking its eventstream format,
// gets Anthropic's events, and each call is one EXCHANGE with exact usage; no AWS secret reaches the ledger.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { ScriptedServer } from '../../staging/PKG-PROVIDER-SPEC-001/HOT/tests/providers/fixtures/server.js';
import {
  bedrockError,
  chunkFrame,
  streamReply,
} from '../../staging/PKG-PROVIDER-BEDROCK-001/HOT/tests/providers/bedrock-fake.js';
import {
  converseEvent,
  converseStream,
  converseWhole,
  textEvents,
  toolEvents,
} from '../../staging/PKG-PROVIDER-BEDROCK-001/HOT/tests/providers/converse-fake.js';
import { cli, configSet, issueKey, ledgerEntries, startServed, type Served } from './harness.js';

const AWS_SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY-served-must-not-leak';
const AWS_TOKEN = 'IQoJb3JpZ2luX2VjEXAMPLE-served-token-must-not-leak';
const MODEL_ID = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const LLAMA_ID = 'meta.llama3-3-70b-instruct-v1:0';
const HAIKU_ID = 'us.anthropic.claude-haiku-4-5-20251001-v1:0';

let served: Served;
let bedrock: ScriptedServer;
let key: string;

before(async () => {
  bedrock = await ScriptedServer.start();
  served = await startServed(
    [],
    (root) => {
      configSet(root, 'gateway.upstreams.anthropic', 'bedrock');
      // Bedrock's on-demand price for Llama 3.3 70B (us-east-1): $0.72 per million tokens in and out.
      configSet(
        root,
        'budget.pricing.llama-3-3-70b',
        JSON.stringify({
          input_per_mtok: 0.72,
          output_per_mtok: 0.72,
          cache_read_per_mtok: 0.72,
          cache_write_5m_per_mtok: 0.72,
          cache_write_1h_per_mtok: 0.72,
        }),
      );
      configSet(
        root,
        'providers.bedrock',
        JSON.stringify({
          base_url: bedrock.url,
          options: {
            models: { 'claude-sonnet-4-5': MODEL_ID, 'claude-haiku-4-5': HAIKU_ID, 'llama-3-3-70b': LLAMA_ID },
          },
        }),
      );
    },
    {
      AWS_ACCESS_KEY_ID: 'AKIAIOSFODNN7EXAMPLE',
      AWS_SECRET_ACCESS_KEY: AWS_SECRET,
      AWS_SESSION_TOKEN: AWS_TOKEN,
      AWS_REGION: 'us-east-1',
    },
  );
  key = issueKey('AGENT-CLOUD');
});
after(async () => {
  await served.cleanup();
  await bedrock.close();
});

test('gateway.upstreams.anthropic = bedrock: the Anthropic SDK streams through Bedrock; one EXCHANGE, exact usage', async () => {
  const usage = { input_tokens: 25, cache_creation_input_tokens: 100, cache_read_input_tokens: 900, output_tokens: 1 };
  bedrock.push(
    streamReply('4b1e0c2a-bedrock-stream-1', [
      chunkFrame({
        type: 'message_start',
        message: {
          id: 'msg_bdrk_01',
          type: 'message',
          role: 'assistant',
          model: 'claude-sonnet-4-5-20250929',
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage,
        },
      }),
      chunkFrame({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
      chunkFrame({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello from ' } }),
      chunkFrame({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Bedrock' } }),
      chunkFrame({ type: 'content_block_stop', index: 0 }),
      chunkFrame({
        type: 'message_delta',
        delta: { stop_reason: 'end_turn', stop_sequence: null },
        usage: { output_tokens: 7 },
      }),
      chunkFrame({
        type: 'message_stop',
        'amazon-bedrock-invocationMetrics': {
          inputTokenCount: 25,
          outputTokenCount: 7,
          invocationLatency: 500,
          firstByteLatency: 200,
        },
      }),
    ]),
  );
  const client = new Anthropic({
    apiKey: key,
    baseURL: served.url,
    maxRetries: 0,
    defaultHeaders: { 'x-cplane-session': 'SES-BEDROCK' },
  });
  const stream = client.messages.stream({
    model: 'claude-sonnet-4-5',
    max_tokens: 64,
    messages: [{ role: 'user', content: 'hi' }],
  });
  const final = await stream.finalMessage();
  assert.equal((final.content[0] as { text: string }).text, 'Hello from Bedrock');
  assert.equal(final.usage.output_tokens, 7);
  const [req] = bedrock.received;
  assert.equal(req?.url, '/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream');
  assert.match(
    String(req?.headers.authorization),
    /^AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE\/\d{8}\/us-east-1\/bedrock\/aws4_request/,
  );
  assert.equal((req?.json as Record<string, unknown> | undefined)?.anthropic_version, 'bedrock-2023-05-31');
  assert.equal(served.upstream.requests.length, 0, 'nothing went to the anthropic upstream');
  const exchanges = ledgerEntries(served.root).filter(
    (e) => e.event_type === 'EXCHANGE' && e.metadata.session_id === 'SES-BEDROCK',
  );
  assert.equal(exchanges.length, 1);
  const m = exchanges[0]?.metadata as Record<string, unknown>;
  assert.deepEqual(
    [m.input_tokens, m.cache_read_tokens, m.cache_write_tokens, m.output_tokens, m.usage_complete],
    [1025, 900, 100, 7, true],
  );
});

test('count_tokens through Bedrock: the Anthropic SDK counts a Claude prompt via /model/{id}/count-tokens', async () => {
  bedrock.push({ status: 200, headers: { 'x-amzn-requestid': 'req-count-1' }, body: { inputTokens: 14 } });
  const client = new Anthropic({ apiKey: key, baseURL: served.url, maxRetries: 0 });
  const counted = await client.messages.countTokens({
    model: 'claude-sonnet-4-5',
    messages: [{ role: 'user', content: 'How many tokens?' }],
  });
  assert.equal(counted.input_tokens, 14);
  const req = bedrock.received.at(-1);
  assert.equal(req?.url, `/model/${encodeURIComponent(MODEL_ID)}/count-tokens`);
  assert.match(String(req?.headers.authorization), /^AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE\//);
});

test('models through Bedrock: the Anthropic SDK lists the configured models; one EXCHANGE, nothing sent to Bedrock', async () => {
  const before = bedrock.received.length;
  const client = new Anthropic({
    apiKey: key,
    baseURL: served.url,
    maxRetries: 0,
    defaultHeaders: { 'x-cplane-session': 'SES-BEDROCK-MODELS' },
  });
  const ids: string[] = [];
  for await (const model of client.models.list()) ids.push(model.id);
  assert.deepEqual(ids, ['claude-haiku-4-5', 'claude-sonnet-4-5', 'llama-3-3-70b']);
  assert.equal(bedrock.received.length, before, 'Bedrock runtime has no listing of these names: none was asked');
  const exchanges = ledgerEntries(served.root).filter(
    (e) => e.event_type === 'EXCHANGE' && e.metadata.session_id === 'SES-BEDROCK-MODELS',
  );
  assert.equal(exchanges.length, 1);
});

test('a Bedrock throttle reaches the SDK as a 429; the AWS secret and session token are in no record or response', async () => {
  bedrock.push(
    bedrockError(429, 'ThrottlingException', 'Too many requests, please wait before trying again.', 'req-throttle'),
  );
  bedrock.push(
    bedrockError(429, 'ThrottlingException', 'Too many requests, please wait before trying again.', 'req-throttle-2'),
  );
  bedrock.push(
    bedrockError(429, 'ThrottlingException', 'Too many requests, please wait before trying again.', 'req-throttle-3'),
  );
  const client = new Anthropic({
    apiKey: key,
    baseURL: served.url,
    maxRetries: 0,
    defaultHeaders: { 'x-cplane-session': 'SES-THROTTLE' },
  });
  const error = await client.messages
    .create({ model: 'claude-sonnet-4-5', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] })
    .catch((e: unknown) => e);
  assert.ok(error instanceof Anthropic.APIError, String(error));
  assert.ok([429, 503].includes(error.status ?? 0), `status ${error.status}`);
  const everything =
    JSON.stringify(ledgerEntries(served.root)) + served.stdout() + served.stderr() + JSON.stringify(error);
  assert.equal(everything.includes(AWS_SECRET), false, 'the AWS secret key is nowhere');
  assert.equal(everything.includes(AWS_TOKEN), false, 'the AWS session token is nowhere');
});

function exchangesOf(session: string): Record<string, unknown>[] {
  return ledgerEntries(served.root)
    .filter((e) => e.event_type === 'EXCHANGE' && e.metadata.session_id === session)
    .map((e) => e.metadata as Record<string, unknown>);
}

const WEATHER_TOOL = {
  name: 'get_weather',
  description: 'Weather for a city',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
};

test('a Llama on Bedrock: the Anthropic SDK streams a tool call through ConverseStream; one EXCHANGE, exact usage', async () => {
  const call = { id: 'tooluse_kZJMlvQmRJ6eAyJE5GIl7Q', name: 'get_weather', input: { city: 'Paris' } };
  bedrock.push(
    converseStream(
      'c0ffee00-converse-stream-1',
      toolEvents(call, { inputTokens: 310, outputTokens: 48, cacheReadInputTokens: 0, cacheWriteInputTokens: 0 }),
    ),
  );
  const client = new Anthropic({
    apiKey: key,
    baseURL: served.url,
    maxRetries: 0,
    defaultHeaders: { 'x-cplane-session': 'SES-CONVERSE' },
  });
  const final = await client.messages
    .stream({
      model: 'llama-3-3-70b',
      max_tokens: 256,
      tools: [WEATHER_TOOL],
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
    })
    .finalMessage();
  assert.deepEqual(
    final.content.map((b) => (b.type === 'tool_use' ? [b.type, b.id, b.name, b.input] : [b.type])),
    [['text'], ['tool_use', call.id, 'get_weather', { city: 'Paris' }]],
  );
  assert.equal(final.stop_reason, 'tool_use');
  assert.deepEqual([final.usage.input_tokens, final.usage.output_tokens], [310, 48]);
  const req = bedrock.received.at(-1);
  assert.equal(req?.url, `/model/${encodeURIComponent(LLAMA_ID)}/converse-stream`);
  const sent = req?.json as { toolConfig?: { tools?: { toolSpec?: { name?: string } }[] } } | undefined;
  assert.equal(sent?.toolConfig?.tools?.[0]?.toolSpec?.name, 'get_weather');
  const exchanges = exchangesOf('SES-CONVERSE');
  assert.equal(exchanges.length, 1);
  const m = exchanges[0] as Record<string, unknown>;
  assert.deepEqual(
    [m.input_tokens, m.cache_read_tokens, m.cache_write_tokens, m.output_tokens, m.usage_complete],
    [310, 0, 0, 48, true],
  );
});

test('a Llama on Bedrock: the OpenAI SDK is translated to Messages, then to Converse; the tool result goes back', async () => {
  bedrock.push(
    converseWhole('c0ffee00-converse-2', [{ text: 'It is 18°C and clear in Paris.' }], 'end_turn', {
      inputTokens: 402,
      outputTokens: 12,
    }),
  );
  const client = new OpenAI({
    apiKey: key,
    baseURL: `${served.url}/v1`,
    maxRetries: 0,
    defaultHeaders: { 'x-cplane-session': 'SES-CONVERSE-CHAT' },
  });
  const reply = await client.chat.completions.create({
    model: 'llama-3-3-70b',
    max_tokens: 128,
    tools: [
      {
        type: 'function',
        function: { name: 'get_weather', description: 'Weather for a city', parameters: WEATHER_TOOL.input_schema },
      },
    ],
    messages: [
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '18°C, clear' },
    ],
  });
  assert.equal(reply.choices[0]?.message.content, 'It is 18°C and clear in Paris.');
  assert.equal(reply.choices[0]?.finish_reason, 'stop');
  assert.deepEqual([reply.usage?.prompt_tokens, reply.usage?.completion_tokens], [402, 12]);
  const req = bedrock.received.at(-1);
  assert.equal(req?.url, `/model/${encodeURIComponent(LLAMA_ID)}/converse`);
  const sent = req?.json as { messages: { role: string; content: Record<string, unknown>[] }[] };
  assert.deepEqual(sent.messages[1]?.content.at(-1), {
    toolUse: { toolUseId: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
  });
  assert.deepEqual(sent.messages[2]?.content, [
    { toolResult: { toolUseId: 'call_1', content: [{ text: '18°C, clear' }] } },
  ]);
  const exchanges = exchangesOf('SES-CONVERSE-CHAT');
  assert.equal(exchanges.length, 1);
  const m = exchanges[0] as Record<string, unknown>;
  assert.deepEqual([m.input_tokens, m.output_tokens, m.usage_complete], [402, 12, true]);
});

test('gateway.upstreams names an installed provider id per family; providers.<id>.options is an object', () => {
  for (const [key, value] of [
    ['gateway.upstreams.anthropic', 'Not An Id'],
    ['gateway.upstreams.cohere', 'bedrock'],
    ['providers.bedrock.options', '"us-east-1"'],
  ] as const) {
    const r = cli(['config', 'set', key, value, '--root', served.root]);
    assert.notEqual(r.status, 0, `${key}=${value} was accepted`);
    assert.match(r.stderr + r.stdout, /ERR_CONFIG_VALUE_INVALID/);
  }
});

/** A valid frame with one payload byte flipped: its message CRC no longer matches. */
function crcBroken(frame: Uint8Array): Uint8Array {
  const copy = Buffer.from(frame);
  copy[copy.length - 6] = (copy[copy.length - 6] as number) ^ 0xff;
  return copy;
}

const HOSTILE_START = chunkFrame({
  type: 'message_start',
  message: {
    id: 'msg_bdrk_hostile',
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-5-20250929',
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: 12, output_tokens: 1 },
  },
});
const HOSTILE_TEXT = [
  chunkFrame({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
  chunkFrame({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'partial' } }),
];
const oddBytes: [name: string, model: string, frames: Uint8Array[]][] = [
  ['a frame whose CRC does not match', 'claude-haiku-4-5', [HOSTILE_START, ...HOSTILE_TEXT.map(crcBroken)]],
  ['a length prefix of 4 GiB', 'claude-haiku-4-5', [HOSTILE_START, Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0])]],
  [
    'a chunk that is not base64 of an event',
    'claude-haiku-4-5',
    [HOSTILE_START, ...HOSTILE_TEXT, converseEvent('chunk', { bytes: '%%% not base64 {' })],
  ],
  [
    'a usage of 1e300 output tokens',
    'claude-haiku-4-5',
    [
      HOSTILE_START,
      ...HOSTILE_TEXT,
      chunkFrame({ type: 'content_block_stop', index: 0 }),
      chunkFrame({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 1e300 } }),
      chunkFrame({ type: 'message_stop' }),
    ],
  ],
  [
    'ConverseStream usage before messageStop',
    'llama-3-3-70b',
    [
      converseEvent('messageStart', { role: 'assistant' }),
      converseEvent('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'partial' } }),
      converseEvent('metadata', { usage: { inputTokens: 5, outputTokens: 2, totalTokens: 7 } }),
    ],
  ],
  [
    'ConverseStream with a negative block index',
    'llama-3-3-70b',
    [
      converseEvent('messageStart', { role: 'assistant' }),
      converseEvent('contentBlockDelta', { contentBlockIndex: -1, delta: { text: 'x' } }),
    ],
  ],
];

/** A whole, well-formed stream for `model` (InvokeModel's chunks for Claude, ConverseStream's events otherwise). */
function goodStream(model: string, text: string): Uint8Array[] {
  const u = { inputTokens: 3, outputTokens: 2, cacheReadInputTokens: 0, cacheWriteInputTokens: 0 };
  if (model !== 'claude-haiku-4-5') return textEvents(text, 'end_turn', u);
  return [
    HOSTILE_START,
    chunkFrame({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
    chunkFrame({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }),
    chunkFrame({ type: 'content_block_stop', index: 0 }),
    chunkFrame({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 2 } }),
    chunkFrame({ type: 'message_stop' }),
  ];
}

test(`odd bytes from Bedrock through \`cplane serve\`: ${oddBytes.length} cases each end in an error or unknown usage, recorded and charged as unknown; the next call is served, exact`, async () => {
  const client = new Anthropic({ apiKey: key, baseURL: served.url, maxRetries: 0 });
  const stream = (model: string, session: string) =>
    client.messages
      .stream(
        { model, max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] },
        { headers: { 'x-cplane-session': session } },
      )
      .finalMessage();
  for (const [i, [name, model, frames]] of oddBytes.entries()) {
    bedrock.push(streamReply(`odd-${i}`, frames));
    const failed = await stream(model, `SES-ODD-${i}`).then(
      (m) => m,
      (e: unknown) => e,
    );
    const exchanges = exchangesOf(`SES-ODD-${i}`);
    assert.equal(exchanges.length, 1, `${name}: one EXCHANGE`);
    const m = exchanges[0] as {
      outcome: string;
      error_code?: string;
      output_tokens: number | null;
      upstream_request_id: string;
      budget: { decision: string; charged_tokens: number; reason?: string };
    };
    assert.equal(m.upstream_request_id, `odd-${i}`, name);
    assert.equal(
      m.budget.decision,
      'SETTLED_USAGE_UNKNOWN',
      `${name}: charged as unknown, ${JSON.stringify(m.budget)}`,
    );
    assert.ok(m.budget.charged_tokens > 0 && m.budget.charged_tokens < 1000, `${name}: the reservation, not the claim`);
    if (name.includes('1e300')) {
      // The stream itself was whole: the client has it as sent; only its count is not believed.
      assert.ok(!(failed instanceof Error), `${name}: ${String(failed)}`);
      assert.deepEqual([m.outcome, m.output_tokens], ['success', null], name);
      assert.match(
        JSON.stringify(m.budget),
        /output_tokens not a token count in the provider's usage \(it sent .*1e\+300/,
        name,
      );
    } else {
      assert.ok(failed instanceof Error, `${name}: the SDK's stream fails, got ${JSON.stringify(failed)}`);
      assert.deepEqual([m.outcome, m.error_code], ['error', 'MALFORMED_RESPONSE'], name);
    }
    bedrock.push(streamReply(`good-${i}`, goodStream(model, `served after ${i}`)));
    const next = await stream(model, `SES-ODD-NEXT-${i}`);
    assert.equal((next.content[0] as { text: string }).text, `served after ${i}`, `${name}: the next call is served`);
    const n = exchangesOf(`SES-ODD-NEXT-${i}`)[0] as Record<string, unknown>;
    // Claude on Bedrock without cache counts (none cached): zero, so the call is priced exactly.
    const exact = model === 'claude-haiku-4-5' ? [12, 0, 0, 2] : [3, 0, 0, 2];
    assert.deepEqual([n.input_tokens, n.cache_read_tokens, n.cache_write_tokens, n.output_tokens], exact, name);
    assert.equal((n.budget as { decision: string }).decision, 'SETTLED', name);
  }
  assert.doesNotMatch(served.stderr(), /ERR_INTERNAL/);
});
