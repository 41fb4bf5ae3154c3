// The official Google Gen AI SDK (@google/genai) against `cplane serve` (a real process on a bootstrapped root) in
// front of a fake Gemini API speaking its real wire format: each call is one EXCHANGE whose usage is exactly what the
// upstream's usageMetadata said, the client's cplane key accepted in x-goog-api-key or ?key= and never passed on.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError, GoogleGenAI, type Content } from '@google/genai';
import {
  DEFAULT_USAGE,
  GeminiServer,
  geminiErrors,
} from '../../staging/PKG-PROVIDER-GEMINI-001/HOT/tests/providers/fixtures/gemini-server.js';
import { budgetEntries, cli, issueKey, ledgerEntries, startServed, type Served } from './harness.js';

const UPSTREAM_KEY = 'AIzaSyUPSTREAM-gemini-SECRET-0123456789';

let served: Served;
let gemini: GeminiServer;
let key: string;

const client = (session: string, apiKey = key): GoogleGenAI =>
  new GoogleGenAI({ apiKey, httpOptions: { baseUrl: served.url, headers: { 'x-cplane-session': session } } });

before(async () => {
  gemini = await GeminiServer.start(UPSTREAM_KEY);
  served = await startServed([], () => {}, { GOOGLE_GEMINI_BASE_URL: gemini.url, GEMINI_API_KEY: UPSTREAM_KEY });
  key = issueKey('AGENT-GEMINI');
});
after(async () => {
  await served.cleanup();
  await gemini.close();
});

const exchangesOf = (session: string) =>
  ledgerEntries(served.root).filter((e) => e.event_type === 'EXCHANGE' && e.metadata.session_id === session);

function oneExchange(session: string): Record<string, unknown> {
  const exchanges = exchangesOf(session);
  assert.equal(exchanges.length, 1, `one EXCHANGE for ${session}`);
  return exchanges[0]?.metadata ?? {};
}

/** usageMetadata as normalised: the prompt (its cached part inside), candidates with thinking, no cache writes. */
function assertExactUsage(meta: Record<string, unknown>): void {
  const u = DEFAULT_USAGE;
  assert.deepEqual(
    [meta.input_tokens, meta.output_tokens, meta.cache_read_tokens, meta.cache_write_tokens],
    [u.prompt, u.candidates + (u.thoughts ?? 0), u.cached, 0],
  );
  assert.equal(meta.usage_complete, true);
}

function assertUpstreamGotOurKey(): void {
  const seen = gemini.seen.at(-1);
  assert.equal(seen?.headers['x-goog-api-key'], UPSTREAM_KEY, "the upstream gets the gateway's key");
  assert.equal(seen?.query.get('key'), null);
  assert.ok(!JSON.stringify(seen?.headers).includes(key), "the client's key never goes upstream");
}

test('generateContent: the SDK gets the reply; one EXCHANGE with exact usage, the model from the path', async () => {
  const session = 'SES-G-JSON';
  const reply = await client(session).models.generateContent({
    model: 'gemini-2.5-flash',
    contents: 'Hello',
    config: { maxOutputTokens: 256, systemInstruction: 'Be brief.' },
  });
  assert.equal(reply.text, 'Hello from Gemini');
  assert.equal(reply.usageMetadata?.thoughtsTokenCount, DEFAULT_USAGE.thoughts);
  assertUpstreamGotOurKey();
  assert.equal(gemini.seen.at(-1)?.path, '/v1beta/models/gemini-2.5-flash:generateContent');
  const meta = oneExchange(session);
  assertExactUsage(meta);
  assert.equal(meta.surface, 'gemini.generate');
  assert.equal(meta.stream, false);
  assert.equal(meta.agent_id, 'AGENT-GEMINI');
  assert.equal(meta.finish_reason, 'stop');
  assert.equal(meta.upstream_request_id, 'xtSfaIRs8_Sf2Q-skYe5Dg', "the reply's responseId names it");
  assert.deepEqual(Object.keys(JSON.parse(String(meta.prompt))), ['systemInstruction', 'contents']);
  // Priced from the shipped table (gemini-2.5-flash: 0.30 in, 2.50 out, 0.03 cache read per million tokens).
  const [settled, ...more] = budgetEntries(served.root).filter(
    (e) => e.event_type === 'BUDGET_SETTLED' && e.metadata.request_id === meta.gateway_request_id,
  );
  assert.equal(more.length, 0);
  assert.equal(settled?.decision, 'SETTLED');
  const u = DEFAULT_USAGE;
  const uncached = u.prompt - (u.cached ?? 0);
  const nano =
    Math.round(uncached * 300) +
    Math.round((u.candidates + (u.thoughts ?? 0)) * 2500) +
    Math.round((u.cached ?? 0) * 30);
  assert.equal(settled?.metadata.cost, nano / 1e9, JSON.stringify(settled?.metadata));
});

test('streaming (alt=sse): the SDK assembles the text; one EXCHANGE with the final chunk usage', async () => {
  const session = 'SES-G-STREAM';
  const stream = await client(session).models.generateContentStream({
    model: 'gemini-2.5-flash',
    contents: 'Hello',
    config: { maxOutputTokens: 256 },
  });
  let text = '';
  let last: number | undefined;
  for await (const chunk of stream) {
    text += chunk.text ?? '';
    last = chunk.usageMetadata?.candidatesTokenCount ?? last;
  }
  assert.equal(text, 'Hello from Gemini');
  assert.equal(last, DEFAULT_USAGE.candidates);
  assert.equal(gemini.seen.at(-1)?.query.get('alt'), 'sse');
  assertUpstreamGotOurKey();
  const meta = oneExchange(session);
  assertExactUsage(meta);
  assert.equal(meta.surface, 'gemini.stream');
  assert.equal(meta.stream, true);
  assert.deepEqual(JSON.parse(String(meta.response)), [{ type: 'text', text: 'Hello from Gemini' }]);
});

test('a function call round trip: the call, then the functionResponse turn; one EXCHANGE per round trip', async () => {
  const session = 'SES-G-TOOLS';
  const ai = client(session);
  const tools = [
    {
      functionDeclarations: [
        {
          name: 'get_weather',
          description: 'The weather in a city',
          parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      ],
    },
  ];
  const contents: Content[] = [{ role: 'user', parts: [{ text: 'What is the weather in Paris?' }] }];
  const first = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents, config: { tools } });
  const call = first.functionCalls?.[0];
  assert.equal(call?.name, 'get_weather');
  assert.deepEqual(call?.args, { city: 'Paris' });
  contents.push(first.candidates?.[0]?.content as Content, {
    role: 'user',
    parts: [{ functionResponse: { name: 'get_weather', response: { sky: 'sunny' } } }],
  });
  const stream = await ai.models.generateContentStream({ model: 'gemini-2.5-flash', contents, config: { tools } });
  let text = '';
  for await (const chunk of stream) text += chunk.text ?? '';
  assert.equal(text, 'It is sunny in Paris.');
  const exchanges = exchangesOf(session);
  assert.equal(exchanges.length, 2);
  const [asked, answered] = exchanges.map((e) => e.metadata);
  assert.equal(asked?.finish_reason, 'tool_use');
  assert.deepEqual(JSON.parse(String(asked?.response)), [
    { type: 'tool_use', id: null, name: 'get_weather', input: { city: 'Paris' } },
  ]);
  assert.equal(answered?.finish_reason, 'stop');
  assert.ok(String(answered?.prompt).includes('functionResponse'));
  for (const meta of exchanges.map((e) => e.metadata)) assertExactUsage(meta);
});

test('countTokens and models.list pass through, governed: one EXCHANGE each, zero usage', async () => {
  const session = 'SES-G-PASS';
  const ai = client(session);
  const counted = await ai.models.countTokens({ model: 'gemini-2.5-flash', contents: 'The quick brown fox' });
  assert.equal(counted.totalTokens, 11);
  assert.equal(gemini.seen.at(-1)?.path, '/v1beta/models/gemini-2.5-flash:countTokens');
  const names: string[] = [];
  for await (const model of await ai.models.list()) names.push(String(model.name));
  assert.deepEqual(names, ['models/gemini-2.5-flash', 'models/gemini-2.5-pro']);
  assertUpstreamGotOurKey();
  const exchanges = exchangesOf(session);
  assert.deepEqual(
    exchanges.map((e) => [e.metadata.surface, e.metadata.input_tokens, e.metadata.output_tokens]),
    [
      ['gemini.count_tokens', 0, 0],
      ['gemini.models', 0, 0],
    ],
  );
});

test('the key in ?key= is accepted, and is in no record, log line or upstream request', async () => {
  const session = 'SES-G-QUERY';
  const res = await fetch(
    `${served.url}/v1beta/models/gemini-2.5-flash:generateContent?key=${encodeURIComponent(key)}`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-cplane-session': session },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'Hello' }] }] }),
    },
  );
  assert.equal(res.status, 200, await res.clone().text());
  assert.equal(((await res.json()) as { responseId?: string }).responseId, 'xtSfaIRs8_Sf2Q-skYe5Dg');
  assertUpstreamGotOurKey();
  oneExchange(session);
  const exported = cli(['ledger', 'export', '--root', served.root]);
  assert.ok(!exported.stdout.includes(key), 'the key is in no ledger entry');
  assert.ok(!served.stdout().includes(key) && !served.stderr().includes(key), 'the key is in no log line');
  assert.ok(!served.stdout().includes('key='), 'the query string is not logged');
});

test("refusals and upstream failures reach the SDK in Google's error shape", async () => {
  const session = 'SES-G-ERR';
  const denied = await client(session, 'not-a-cplane-key')
    .models.generateContent({ model: 'gemini-2.5-flash', contents: 'Hello' })
    .catch((e: unknown) => e);
  assert.ok(denied instanceof ApiError, String(denied));
  assert.equal(denied.status, 401);
  const body = JSON.parse(denied.message) as { error: { code: number; status: string; message: string } };
  assert.equal(body.error.code, 401);
  assert.equal(body.error.status, 'UNAUTHENTICATED');
  assert.match(body.error.message, /^AUTH_/);

  gemini.push({ status: 400, body: geminiErrors.invalidArgument('* GenerateContentRequest.contents[0].parts: empty') });
  const invalid = await client(session)
    .models.generateContent({ model: 'gemini-2.5-flash', contents: 'Hello' })
    .catch((e: unknown) => e);
  assert.ok(invalid instanceof ApiError && invalid.status === 400, String(invalid));
  const upstream = JSON.parse(invalid.message) as { error: { status: string; message: string } };
  assert.equal(upstream.error.status, 'INVALID_ARGUMENT');
  assert.match(upstream.error.message, /contents\[0\]\.parts: empty/);
  assert.equal(exchangesOf(session).length, 1, 'the upstream refusal is an EXCHANGE; the gateway refusal none');

  const unstreamed = await fetch(`${served.url}/v1beta/models/gemini-2.5-flash:streamGenerateContent`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-goog-api-key': key },
    body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'Hello' }] }] }),
  });
  assert.equal(unstreamed.status, 400);
  assert.equal(((await unstreamed.json()) as { error: { status: string } }).error.status, 'INVALID_ARGUMENT');
  const unknown = await fetch(`${served.url}/v1beta/models/gemini-2.5-flash:embedContent`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-goog-api-key': key },
    body: '{}',
  });
  assert.equal(unknown.status, 404);
  assert.deepEqual(((await unknown.json()) as { error: { code: number; status: string } }).error.status, 'NOT_FOUND');
});

test('a stream the upstream cuts mid-reply: the client told in an error chunk, one EXCHANGE, charged as unknown', async () => {
  const session = 'SES-G-CUT';
  gemini.push({ answer: { text: 'an answer the upstream never finishes' }, cutAfterChunks: 1 });
  const stream = await client(session).models.generateContentStream({
    model: 'gemini-2.5-flash',
    contents: 'Hello',
    config: { maxOutputTokens: 64 },
  });
  let text = '';
  const failed = await (async () => {
    for await (const chunk of stream) text += chunk.text ?? '';
  })().catch((e: unknown) => e);
  assert.equal(text, 'an answer the upstr', 'what arrived before the cut was forwarded');
  assert.ok(failed instanceof ApiError, `the SDK reads the error chunk as a failure: ${String(failed)}`);
  const meta = oneExchange(session);
  assert.equal(meta.outcome, 'error');
  assert.equal(meta.usage_complete, false);
  const settled = budgetEntries(served.root).filter(
    (e) => e.event_type === 'BUDGET_SETTLED' && e.metadata.request_id === meta.gateway_request_id,
  );
  assert.deepEqual(
    settled.map((e) => e.decision),
    ['SETTLED_USAGE_UNKNOWN'],
    'the reservation stays charged',
  );
});
