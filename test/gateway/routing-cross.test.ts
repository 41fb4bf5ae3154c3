// Cross-format routed aliases through `cplane serve` (a real process on a bootstrapped root): an alias mixing an
// Anthropic deployment and an OpenAI one, each a local upstream speaking its real wire format, the official SDKs as
// clients. Each attempt is translated into its deployment's format and its reply back; a fallback crosses formats
// before the first byte; one EXCHANGE lists every attempt with the surface it went out on; usage exact.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type OpenAI from 'openai';
import { REPO } from '../../scripts/lib/repo.js';
import {
  DEFAULT_USAGE,
  GeminiServer,
} from '../../staging/PKG-PROVIDER-GEMINI-001/HOT/tests/providers/fixtures/gemini-server.js';
import { budgetRecordsIn, configSet, issueKey, ledgerEntries, startServed, type Served } from './harness.js';
import { sdkClients } from './translated.js';
import { startUpstream, type Upstream, USAGE } from './upstream.js';

const KEYS_A = { anthropic: 'sk-ant-xroute-A-0123456789abcdef', openai: 'sk-oai-xroute-A-0123456789abcdef' };
const KEYS_B = { anthropic: 'sk-ant-xroute-B-0123456789abcdef', openai: 'sk-oai-xroute-B-0123456789abcdef' };
const ENV = {
  XROUTE_ANT_A: KEYS_A.anthropic,
  XROUTE_OAI_B: KEYS_B.openai,
  XROUTE_GEMINI: 'AIzaSyXROUTE-gemini-SECRET-0123456789',
  // docs/routing.md's example across formats names these.
  ANTHROPIC_KEY_PRIMARY: KEYS_A.anthropic,
  OPENAI_KEY_FALLBACK: KEYS_B.openai,
};

/** docs/routing.md's example across formats (an Anthropic deployment, an OpenAI fallback), pointed at A and B. */
function docsExample(): { deployments: Array<Record<string, unknown>>; aliases: Record<string, unknown> } {
  const text = readFileSync(join(REPO, 'docs', 'routing.md'), 'utf8');
  const section = text.slice(text.indexOf('## Across wire formats'));
  const match = /cplane config set gateway\.routing '(\{[^']+)'/.exec(section);
  assert.ok(match?.[1], 'docs/routing.md has the example across formats');
  const config = JSON.parse(match[1]) as ReturnType<typeof docsExample>;
  for (const d of config.deployments) d.base_url = d.provider === 'anthropic' ? A.url : B.url;
  return config;
}

let served: Served;
let key: string;
/** Speaks Anthropic Messages for the `ant` deployment. */
let A: Upstream;
/** Speaks Chat Completions for the `oai` deployment. */
let B: Upstream;
/** Speaks the Gemini API for the `gem` deployment. */
let G: GeminiServer;

before(async () => {
  [A, B, G] = await Promise.all([startUpstream(KEYS_A), startUpstream(KEYS_B), GeminiServer.start(ENV.XROUTE_GEMINI)]);
  Object.assign(process.env, ENV);
  const example = docsExample();
  const routing = {
    deployments: [
      ...example.deployments,
      { id: 'ant', provider: 'anthropic', base_url: A.url, credential_env: 'XROUTE_ANT_A', model: 'claude-x' },
      { id: 'oai', provider: 'openai', base_url: B.url, credential_env: 'XROUTE_OAI_B', model: 'gpt-4.1-mini' },
      { id: 'gem', provider: 'gemini', base_url: G.url, credential_env: 'XROUTE_GEMINI', model: 'gemini-2.5-flash' },
    ],
    aliases: {
      ...example.aliases,
      // Anthropic first, OpenAI as its fallback.
      cross: { targets: ['ant', 'oai'] },
      // OpenAI first, Anthropic as its fallback.
      'cross-o': { targets: ['oai', 'ant'] },
      // Anthropic first, Gemini as its fallback.
      'cross-g': { targets: ['ant', 'gem'] },
    },
  };
  const price = {
    input_per_mtok: 3,
    output_per_mtok: 15,
    cache_read_per_mtok: 0.3,
    cache_write_5m_per_mtok: 3.75,
    cache_write_1h_per_mtok: 6,
  };
  served = await startServed([], (root) => {
    configSet(
      root,
      'budget.pricing',
      JSON.stringify({
        'claude-x': price,
        'gpt-4.1-mini': price,
        'claude-sonnet-4-5': price,
        'gpt-4.1': price,
        'gemini-2.5-flash': price,
      }),
    );
    configSet(root, 'gateway.routing', JSON.stringify(routing));
  });
  key = issueKey('AGENT-XROUTE');
});
after(async () => {
  await served?.cleanup();
  await Promise.all([A?.close(), B?.close(), G?.close()]);
  for (const name of Object.keys(ENV)) delete process.env[name];
});

const { anthropic, openai } = sdkClients(() => ({ url: served.url, key }));

type Entry = ReturnType<typeof ledgerEntries>[number];
interface Attempt {
  deployment: string;
  provider: string;
  model: string;
  outcome: string;
  status: number | null;
  kind: string | null;
  upstream_surface?: string;
}
const attemptsOf = (e: Entry): Attempt[] => e.metadata.attempts as Attempt[];
const overloaded = { status: 529, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } };
const weatherTool = {
  name: 'get_weather',
  description: 'weather',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } },
};

/** The session's one EXCHANGE and its budget records (one settlement: the call is charged once). */
function oneExchange(session: string): { exchange: Entry; all: Entry[] } {
  const all = ledgerEntries(served.root);
  const exchanges = all.filter((e) => e.event_type === 'EXCHANGE' && e.metadata.session_id === session);
  assert.equal(exchanges.length, 1, 'one EXCHANGE per client request');
  const exchange = exchanges[0] as Entry;
  const settled = budgetRecordsIn(all).filter(
    (e) => e.event_type === 'BUDGET_SETTLED' && e.metadata.request_id === exchange.metadata.gateway_request_id,
  );
  assert.equal(settled.length, 1, 'settled once');
  assert.equal(settled[0]?.decision, 'SETTLED', 'charged at the answer (a 529 bills nothing)');
  return { exchange, all };
}

/** Anthropic's 529, then the OpenAI deployment's answer: both attempts named, with the surface each went out on. */
function assertAnthropicThenOpenai(exchange: Entry): void {
  assert.deepEqual(
    attemptsOf(exchange).map((a) => [
      a.deployment,
      a.provider,
      a.model,
      a.outcome,
      a.status,
      a.kind,
      a.upstream_surface,
    ]),
    [
      ['ant', 'anthropic', 'claude-x', 'error', 529, 'overloaded', 'anthropic.messages'],
      ['oai', 'openai', 'gpt-4.1-mini', 'success', null, null, 'openai.chat'],
    ],
  );
  const meta = exchange.metadata;
  assert.equal(meta.model_alias, 'cross');
  assert.equal(meta.served_by, 'oai/gpt-4.1-mini');
  assert.equal(meta.surface, 'anthropic.messages');
  assert.equal(meta.upstream_surface, 'openai.chat');
  assert.equal(meta.model_id, 'gpt-4.1-mini');
  // Chat Completions' usage, bucket by bucket: prompt_tokens include the cache reads; it has no cache-write bucket.
  assert.equal(meta.input_tokens, USAGE.input + USAGE.cacheRead);
  assert.equal(meta.cache_read_tokens, USAGE.cacheRead);
  assert.equal(meta.cache_write_tokens, 0);
  assert.equal(meta.output_tokens, USAGE.output);
  assert.equal(meta.usage_complete, true);
}

test('Anthropic SDK, whole, tool call: the Anthropic deployment answers 529 → the OpenAI one serves, translated', async () => {
  const session = 'SES-XR-A-JSON';
  A.faults.push(overloaded);
  const before = { a: A.requests.length, b: B.requests.length };
  const { data, response } = await anthropic(session)
    .messages.create({
      model: 'cross',
      max_tokens: 256,
      tools: [weatherTool],
      messages: [{ role: 'user', content: 'weather in Paris?' }],
    })
    .withResponse();
  assert.equal(A.requests.length, before.a + 1);
  assert.equal(A.requests.at(-1)?.path, '/v1/messages');
  assert.equal(A.requests.at(-1)?.body?.model, 'claude-x', 'the Anthropic deployment is asked for its own model');
  assert.equal(B.requests.length, before.b + 1);
  const sent = B.requests.at(-1);
  assert.equal(sent?.path, '/v1/chat/completions');
  assert.equal(sent?.headers.authorization, `Bearer ${KEYS_B.openai}`);
  assert.deepEqual(sent?.body, {
    model: 'gpt-4.1-mini',
    messages: [{ role: 'user', content: 'weather in Paris?' }],
    max_completion_tokens: 256,
    tools: [
      {
        type: 'function',
        function: { name: 'get_weather', description: 'weather', parameters: weatherTool.input_schema },
      },
    ],
  });
  assert.equal(response.headers.get('x-cplane-served-by'), 'oai/gpt-4.1-mini');
  assert.equal(data.type, 'message');
  assert.equal(data.model, 'gpt-4.1-mini');
  assert.deepEqual(data.content, [{ type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } }]);
  assert.equal(data.stop_reason, 'tool_use');
  assert.equal(data.usage.input_tokens, USAGE.input, "Anthropic's input_tokens excludes cache reads");
  assert.equal(data.usage.cache_read_input_tokens, USAGE.cacheRead);
  assert.equal(data.usage.output_tokens, USAGE.output);
  const { exchange } = oneExchange(session);
  assertAnthropicThenOpenai(exchange);
  assert.equal(exchange.metadata.finish_reason, 'tool_use');
});

test('Anthropic SDK, streamed, tool call: 529 → the OpenAI deployment streams, translated into Messages events', async () => {
  const session = 'SES-XR-A-STREAM';
  A.faults.push(overloaded);
  const stream = anthropic(session).messages.stream({
    model: 'cross',
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
  const sent = B.requests.at(-1)?.body;
  assert.equal(sent?.stream, true);
  assert.deepEqual(sent?.stream_options, { include_usage: true }, 'usage asked of the upstream, never estimated');
  const { exchange } = oneExchange(session);
  assertAnthropicThenOpenai(exchange);
  assert.equal(exchange.metadata.stream, true);
});

test('OpenAI SDK, alias whose first deployment is Anthropic: sent as Messages, answered as a chat completion', async () => {
  const session = 'SES-XR-O-JSON';
  const before = B.requests.length;
  const { data, response } = await openai(session)
    .chat.completions.create({
      model: 'cross',
      max_completion_tokens: 256,
      messages: [{ role: 'user', content: 'weather in Paris?' }],
      tools: [
        {
          type: 'function',
          function: { name: 'get_weather', description: 'weather', parameters: weatherTool.input_schema },
        },
      ],
    })
    .withResponse();
  assert.equal(B.requests.length, before, 'the OpenAI deployment is not asked');
  const sent = A.requests.at(-1);
  assert.equal(sent?.path, '/v1/messages');
  assert.equal(sent?.headers['x-api-key'], KEYS_A.anthropic);
  assert.deepEqual(sent?.body, {
    model: 'claude-x',
    max_tokens: 256,
    messages: [{ role: 'user', content: 'weather in Paris?' }],
    tools: [{ name: 'get_weather', description: 'weather', input_schema: weatherTool.input_schema }],
  });
  assert.equal(response.headers.get('x-cplane-served-by'), 'ant/claude-x');
  assert.equal(data.object, 'chat.completion');
  assert.equal(data.model, 'claude-x');
  const choice = data.choices[0];
  assert.equal(choice?.finish_reason, 'tool_calls');
  assert.equal(choice?.message.content, 'Hello from upstream');
  assert.deepEqual(choice?.message.tool_calls, [
    { id: 'toolu_01', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
  ]);
  assert.equal(data.usage?.prompt_tokens, USAGE.input + USAGE.cacheWrite + USAGE.cacheRead);
  assert.equal(data.usage?.prompt_tokens_details?.cached_tokens, USAGE.cacheRead);
  assert.equal(data.usage?.completion_tokens, USAGE.output);
  const { exchange } = oneExchange(session);
  assert.deepEqual(
    attemptsOf(exchange).map((a) => [a.deployment, a.outcome, a.upstream_surface]),
    [['ant', 'success', 'anthropic.messages']],
  );
  const meta = exchange.metadata;
  assert.equal(meta.surface, 'openai.chat');
  assert.equal(meta.upstream_surface, 'anthropic.messages');
  assert.equal(meta.model_id, 'claude-x');
  assert.equal(meta.input_tokens, USAGE.input + USAGE.cacheWrite + USAGE.cacheRead);
  assert.equal(meta.cache_read_tokens, USAGE.cacheRead);
  assert.equal(meta.cache_write_tokens, USAGE.cacheWrite);
  assert.equal(meta.output_tokens, USAGE.output);
});

test('OpenAI SDK, streamed: the Anthropic deployment streams translated chunks; after its 529 the OpenAI one streams its own', async () => {
  const read = async (session: string): Promise<{ text: string; usage: OpenAI.CompletionUsage | null }> => {
    const stream = await openai(session).chat.completions.create({
      model: 'cross',
      max_completion_tokens: 256,
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'hi' }],
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      usage = chunk.usage ?? usage;
    }
    return { text, usage };
  };
  const translated = await read('SES-XR-O-STREAM');
  assert.equal(translated.text, 'Hello from upstream');
  assert.equal(translated.usage?.prompt_tokens, USAGE.input + USAGE.cacheWrite + USAGE.cacheRead);
  assert.equal(translated.usage?.completion_tokens, USAGE.output);
  A.faults.push(overloaded);
  const own = await read('SES-XR-O-FALLBACK');
  assert.equal(own.text, 'Hello from upstream');
  assert.equal(own.usage?.prompt_tokens, USAGE.input + USAGE.cacheRead);
  const first = oneExchange('SES-XR-O-STREAM').exchange;
  assert.equal(first.metadata.upstream_surface, 'anthropic.messages');
  assert.equal(first.metadata.output_tokens, USAGE.output);
  const second = oneExchange('SES-XR-O-FALLBACK').exchange;
  assert.deepEqual(
    attemptsOf(second).map((a) => [a.deployment, a.status, a.upstream_surface]),
    [
      ['ant', 529, 'anthropic.messages'],
      ['oai', null, 'openai.chat'],
    ],
  );
  assert.equal(second.metadata.upstream_surface, undefined, "served in the client's own format");
  assert.equal(second.metadata.served_by, 'oai/gpt-4.1-mini');
});

test('a field one deployment cannot be sent is left out of the call for that deployment, named in the EXCHANGE', async () => {
  const session = 'SES-XR-SKIP';
  const before = B.requests.length;
  // OpenAI first: `thinking` has no Chat Completions equivalent, so the call goes to the Anthropic deployment alone.
  const message = await anthropic(session).messages.create({
    model: 'cross-o',
    max_tokens: 2048,
    thinking: { type: 'enabled', budget_tokens: 1024 },
    messages: [{ role: 'user', content: 'hi' }],
  });
  assert.equal(message.model, 'claude-x');
  assert.equal(B.requests.length, before, 'nothing was sent to the OpenAI deployment');
  assert.deepEqual(A.requests.at(-1)?.body?.thinking, { type: 'enabled', budget_tokens: 1024 });
  const { exchange } = oneExchange(session);
  assert.deepEqual(
    attemptsOf(exchange).map((a) => a.deployment),
    ['ant'],
  );
  const skipped = exchange.metadata.skipped_deployments as Array<Record<string, unknown>>;
  assert.equal(skipped.length, 1);
  assert.equal(skipped[0]?.deployment, 'oai');
  assert.equal(skipped[0]?.upstream_surface, 'openai.chat');
  assert.equal(skipped[0]?.field, 'thinking');
  assert.match(String(skipped[0]?.why), /Chat Completions/);
});

test('an untranslatable field with a mixed alias: refused before anything is sent, the field named', async () => {
  const before = { a: A.requests.length, b: B.requests.length };
  // A Gemini client: both deployments need a translation, and neither can carry two candidates.
  const res = await fetch(`${served.url}/v1beta/models/cross:generateContent`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-goog-api-key': key, 'x-cplane-session': 'SES-XR-REFUSE-G' },
    body: JSON.stringify({
      contents: [{ role: 'user', parts: [{ text: 'hi' }] }],
      generationConfig: { candidateCount: 2 },
    }),
  });
  const text = await res.text();
  assert.equal(res.status, 400, text);
  assert.match(text, /TRANSLATION_UNSUPPORTED/);
  assert.match(text, /generationConfig\.candidateCount/);
  assert.equal(A.requests.length, before.a, 'nothing reached the Anthropic deployment');
  assert.equal(B.requests.length, before.b, 'nothing reached the OpenAI deployment');
  const all = ledgerEntries(served.root);
  const refusals = all.filter(
    (e) => e.event_type === 'PROMPT_REJECTED' && JSON.stringify(e).includes('TRANSLATION_UNSUPPORTED'),
  );
  assert.equal(refusals.length, 1);
  const reason = JSON.stringify(refusals[0]);
  assert.match(reason, /model alias \\"cross\\": ant \(anthropic\.messages\): generationConfig\.candidateCount/);
  assert.match(reason, /oai \(openai\.chat\): generationConfig\.candidateCount/);
  assert.equal(all.filter((e) => e.event_type === 'EXCHANGE' && e.metadata.session_id === 'SES-XR-REFUSE-G').length, 0);
});

test("docs/routing.md's example across formats: Anthropic answers 529, the OpenAI fallback serves the Anthropic client", async () => {
  const session = 'SES-XR-DOCS';
  A.faults.push(overloaded);
  const { data, response } = await anthropic(session)
    .messages.create({ model: 'smart', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] })
    .withResponse();
  assert.equal(response.headers.get('x-cplane-served-by'), 'gpt/gpt-4.1');
  assert.deepEqual(data.content, [{ type: 'text', text: 'Hello from upstream' }]);
  assert.equal(A.requests.at(-1)?.body?.model, 'claude-sonnet-4-5');
  assert.equal(B.requests.at(-1)?.body?.model, 'gpt-4.1');
  const { exchange } = oneExchange(session);
  assert.deepEqual(
    attemptsOf(exchange).map((a) => [a.deployment, a.status, a.upstream_surface]),
    [
      ['claude', 529, 'anthropic.messages'],
      ['gpt', null, 'openai.chat'],
    ],
  );
  assert.equal(exchange.metadata.upstream_surface, 'openai.chat');
});

test('Anthropic SDK, streamed: 529 → a Gemini deployment streams, its model in the path, translated into Messages events', async () => {
  const session = 'SES-XR-GEMINI';
  A.faults.push(overloaded);
  const final = await anthropic(session)
    .messages.stream({ model: 'cross-g', max_tokens: 256, messages: [{ role: 'user', content: 'Hello' }] })
    .finalMessage();
  const seen = G.seen.at(-1);
  assert.equal(seen?.path, '/v1beta/models/gemini-2.5-flash:streamGenerateContent');
  assert.equal(seen?.query.get('alt'), 'sse');
  assert.equal(seen?.headers['x-goog-api-key'], ENV.XROUTE_GEMINI);
  assert.deepEqual(seen?.body, {
    contents: [{ role: 'user', parts: [{ text: 'Hello' }] }],
    generationConfig: { maxOutputTokens: 256 },
  });
  assert.deepEqual(final.content, [{ type: 'text', text: 'Hello from Gemini' }]);
  const u = DEFAULT_USAGE;
  assert.equal(final.usage.input_tokens, u.prompt - (u.cached ?? 0));
  assert.equal(final.usage.cache_read_input_tokens, u.cached);
  assert.equal(final.usage.output_tokens, u.candidates + (u.thoughts ?? 0), 'thinking is billed as output');
  const { exchange } = oneExchange(session);
  assert.deepEqual(
    attemptsOf(exchange).map((a) => [a.deployment, a.provider, a.status, a.upstream_surface]),
    [
      ['ant', 'anthropic', 529, 'anthropic.messages'],
      ['gem', 'gemini', null, 'gemini.stream'],
    ],
  );
  const meta = exchange.metadata;
  assert.equal(meta.upstream_surface, 'gemini.stream');
  assert.equal(meta.served_by, 'gem/gemini-2.5-flash');
  assert.deepEqual(
    [meta.input_tokens, meta.cache_read_tokens, meta.cache_write_tokens, meta.output_tokens, meta.usage_complete],
    [u.prompt, u.cached, 0, u.candidates + (u.thoughts ?? 0), true],
  );
});

test('count_tokens on a mixed alias goes to the deployment that speaks it; an alias with none is refused', async () => {
  const before = B.requests.length;
  // OpenAI first: it has no count_tokens, so the Anthropic deployment counts, for its own model.
  const counted = await anthropic('SES-XR-COUNT').messages.countTokens({
    model: 'cross-o',
    messages: [{ role: 'user', content: 'hi' }],
  });
  const seen = A.requests.at(-1);
  assert.equal(seen?.path, '/v1/messages/count_tokens');
  assert.equal(seen?.body?.model, 'claude-x');
  assert.equal(counted.input_tokens, JSON.stringify(seen?.body).length, "the local upstream's count");
  assert.equal(B.requests.length, before);
  // Gemini's countTokens: neither deployment of `cross` speaks it.
  const res = await fetch(`${served.url}/v1beta/models/cross:countTokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-goog-api-key': key },
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
  });
  const text = await res.text();
  assert.equal(res.status, 400, text);
  assert.match(text, /VALIDATION_FAILED: model alias \\"cross\\" has no deployment that speaks gemini\.count_tokens/);
});

test('a stream from the Anthropic deployment cut after its first bytes is not restarted on the OpenAI one', async () => {
  const session = 'SES-XR-MIDSTREAM';
  A.faults.push({ dieAfterFrames: 3 });
  const before = B.requests.length;
  const stream = anthropic(session).messages.stream({
    model: 'cross',
    max_tokens: 64,
    messages: [{ role: 'user', content: 'hi' }],
  });
  await assert.rejects(stream.finalMessage());
  assert.equal(B.requests.length, before, 'no attempt on the OpenAI deployment');
  let exchanges: Entry[] = [];
  for (let i = 0; i < 10 && exchanges.length === 0; i += 1) {
    if (i > 0) await new Promise((r) => setTimeout(r, 100));
    exchanges = ledgerEntries(served.root).filter(
      (e) => e.event_type === 'EXCHANGE' && e.metadata.session_id === session,
    );
  }
  assert.equal(exchanges.length, 1);
  assert.notEqual(exchanges[0]?.decision, 'SUCCESS');
  assert.deepEqual(
    attemptsOf(exchanges[0] as Entry).map((a) => a.deployment),
    ['ant'],
  );
});
