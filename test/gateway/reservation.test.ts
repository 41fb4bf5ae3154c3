// What a call reserves through `cplane serve`: an OpenAI-family model's body counted with its tokenizer, so a dozen
// concurrent calls whose real usage fits a small session budget are all admitted (the byte bound admitted three).
// Whether the tokenizer loads at open: reservation-routed.test.ts.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { encodeChat } from 'gpt-tokenizer/encoding/o200k_base';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';
import { GeminiServer } from '../../staging/PKG-PROVIDER-GEMINI-001/HOT/tests/providers/fixtures/gemini-server.js';
import { budgetEntries, configSet, issueKey, startServed, type Served } from './harness.js';

const { bodyInputBounds } =
  await fromDevRoot<typeof import('../../staging/PKG-BUDGETER-001/HOT/budgeter/bound.js')>('HOT/budgeter/bound.js');
const { withMargin } =
  await fromDevRoot<typeof import('../../staging/PKG-GATEWAY-001/HOT/gateway/input-counts.js')>(
    'HOT/gateway/input-counts.js',
  );

const SESSION = 'SES-R-12';
const MAX_TOKENS = 256;
/** An agent's system prompt of about 6 KB of prose and code. */
const SYSTEM = Array.from(
  { length: 60 },
  (_, i) => `Rule ${i}: read the file before you edit it; run \`npm test -- --grep case${i}\` and report the result.`,
).join('\n');
const chatBody = (i: number) => ({
  model: 'gpt-4.1-mini',
  max_tokens: MAX_TOKENS,
  messages: [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: `Task ${i}: fix the failing test in src/parser.ts.` },
  ],
});
/** Room for a dozen calls' token-counted reservations (about 1.6k tokens each), not for four byte-bounded ones. */
const SESSION_LIMIT = 24_000;

let work: string;
let resolveLog: string;
let served: Served;
let gemini: GeminiServer;
let key: string;
const GEMINI_KEY = 'AIzaSyUPSTREAM-gemini-SECRET-0123456789';

before(async () => {
  // Each module the gateway resolves whose name holds `gpt-tokenizer` is noted, from the gateway's own process.
  work = mkdtempSync(join(tmpdir(), 'cp-reserve-'));
  gemini = await GeminiServer.start(GEMINI_KEY);
  resolveLog = join(work, 'resolved.log');
  writeFileSync(resolveLog, '');
  writeFileSync(
    join(work, 'hooks.mjs'),
    `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  if (specifier.includes('gpt-tokenizer')) appendFileSync(${JSON.stringify(resolveLog)}, specifier + '\\n');
  return next(specifier, context);
}\n`,
  );
  writeFileSync(
    join(work, 'register.mjs'),
    `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(join(work, 'hooks.mjs')).href)});\n`,
  );
  served = await startServed(
    [],
    (root) => {
      configSet(root, 'budget.limits.session', JSON.stringify({ by_id: { [SESSION]: { max_tokens: SESSION_LIMIT } } }));
      configSet(root, 'gateway.count_input_tokens', JSON.stringify({ anthropic: true, gemini: true, timeout_ms: 300 }));
    },
    {
      NODE_OPTIONS: `--import ${pathToFileURL(join(work, 'register.mjs')).href}`,
      GOOGLE_GEMINI_BASE_URL: gemini.url,
      GEMINI_API_KEY: GEMINI_KEY,
    },
  );
  key = issueKey('AGENT-RESERVE');
});
after(async () => {
  await served.cleanup();
  await gemini.close();
  rmSync(work, { recursive: true, force: true });
});

const post = (path: string, body: unknown, session: string, headers: Record<string, string>) =>
  fetch(`${served.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-cplane-session': session, ...headers },
    body: JSON.stringify(body),
  });

test('a dozen concurrent calls whose usage fits the session budget are all admitted, each reserving its token count', async () => {
  const byteBound = bodyInputBounds(chatBody(0)).bound + MAX_TOKENS;
  assert.ok(4 * byteBound > SESSION_LIMIT, `the byte bound (${byteBound} a call) would refuse the fourth`);
  const before = served.upstream.requests.length;
  let open!: () => void;
  served.upstream.gate = new Promise<void>((r) => {
    open = r;
  });
  let answered = 0;
  const calls = Array.from({ length: 12 }, (_, i) =>
    post('/v1/chat/completions', chatBody(i), SESSION, { authorization: `Bearer ${key}` }).then(async (res) => {
      answered += 1;
      return { status: res.status, text: await res.text() };
    }),
  );
  // Every call holds its reservation at once: the upstream answers none until all twelve reached it.
  while (served.upstream.requests.length - before < 12 && answered === 0) await new Promise((r) => setTimeout(r, 20));
  open();
  served.upstream.gate = null;
  const results = await Promise.all(calls);
  for (const r of results) assert.equal(r.status, 200, r.text);
  const allocated = budgetEntries(served.root).filter(
    (e) => e.event_type === 'BUDGET_ALLOCATED' && e.metadata.session_id === SESSION,
  );
  assert.equal(allocated.length, 12);
  for (const [i, e] of allocated.entries()) {
    const reserved = e.metadata.reserved_tokens as number;
    const counted = encodeChat(chatBody(i).messages, 'gpt-4o').length;
    assert.ok(reserved >= counted + MAX_TOKENS, `reserved ${reserved}, the tokenizer counts ${counted}`);
    assert.ok(reserved < byteBound / 2, `reserved ${reserved}: the count, not the ${byteBound} of the byte bound`);
  }
  assert.match(readFileSync(resolveLog, 'utf8'), /gpt-tokenizer\/encoding\/o200k_base/);
});

const anthropicHeaders = () => ({ 'x-api-key': key, 'anthropic-version': '2023-06-01' });
const messagesBody = (topic: string) => ({
  model: 'claude-sonnet-4-5',
  max_tokens: 64,
  system: SYSTEM,
  messages: [{ role: 'user', content: `Review ${topic}: ${'check every call site. '.repeat(100)}` }],
});

async function reservedFor(session: string, body: unknown): Promise<number> {
  const res = await post('/v1/messages', body, session, anthropicHeaders());
  assert.equal(res.status, 200, await res.text());
  const allocated = budgetEntries(served.root).filter(
    (e) => e.event_type === 'BUDGET_ALLOCATED' && e.metadata.session_id === session,
  );
  assert.equal(allocated.length, 1);
  return allocated[0]?.metadata.reserved_tokens as number;
}

test("with count_tokens switched on, an Anthropic call reserves the upstream's count and its margin", async () => {
  const before = served.upstream.requests.length;
  served.upstream.faults.push({ status: 200, body: { input_tokens: 100 } });
  const reserved = await reservedFor('SES-R-CT-1', messagesBody('the parser'));
  const counted = served.upstream.requests.slice(before).find((r) => r.path === '/v1/messages/count_tokens');
  assert.ok(counted, 'count_tokens was asked');
  assert.equal(counted.headers['anthropic-version'], '2023-06-01');
  assert.deepEqual(
    Object.keys(counted.body ?? {}).sort(),
    ['messages', 'model', 'system'],
    'no max_tokens: count_tokens refuses it',
  );
  assert.equal(reserved, withMargin(100) + 64);
});

test("a count_tokens that fails or is slower than its timeout: the conversation's counted prefix and the bytes of the rest", async () => {
  const first = messagesBody('the parser');
  const added = (i: number) => [
    { role: 'assistant', content: `Looked at call site ${i}.` },
    { role: 'user', content: `tool result ${i}: ${'export const x = 1;\n'.repeat(60)}` },
  ];
  const rest = (messages: unknown[]) => bodyInputBounds({ messages }).bound;
  // The next turn of the conversation counted 100 above; its own count is refused (overloaded).
  served.upstream.faults.push({
    status: 529,
    body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
  });
  const second = { ...first, messages: [...first.messages, ...added(1)] };
  assert.equal(await reservedFor('SES-R-CT-2', second), withMargin(100) + rest(added(1)) + 64);
  // The turn after: its count would come after 3 s, so it is given up at 300 ms and the call served meanwhile.
  served.upstream.faults.push({ replyDelayMs: 3000 });
  const third = { ...second, messages: [...second.messages, ...added(2)] };
  assert.equal(await reservedFor('SES-R-CT-3', third), withMargin(100) + rest([...added(1), ...added(2)]) + 64);
  // A conversation nothing was counted for, its count refused: the byte bound (the gateway's adds one byte for the
  // brace its prompt and the rest of the body each carry).
  served.upstream.faults.push({ status: 500, body: { type: 'error', error: { type: 'api_error', message: 'x' } } });
  const fresh = messagesBody('the printer');
  assert.equal(await reservedFor('SES-R-CT-4', fresh), bodyInputBounds(fresh).bound + 1 + 64);
});

test("with countTokens switched on, a Gemini call reserves the whole request's count (system and tools included) and its margin", async () => {
  const seen = gemini.seen.length;
  const body = {
    systemInstruction: { parts: [{ text: SYSTEM }] },
    contents: [{ role: 'user', parts: [{ text: `Summarise: ${'the budget holds. '.repeat(100)}` }] }],
    generationConfig: { maxOutputTokens: 128 },
  };
  const res = await post('/v1beta/models/gemini-2.5-flash:generateContent', body, 'SES-R-GEM', {
    'x-goog-api-key': key,
  });
  assert.equal(res.status, 200, await res.text());
  const count = gemini.seen.slice(seen).find((s) => s.path.endsWith(':countTokens'));
  assert.ok(count, 'countTokens was asked');
  assert.equal(count.path, '/v1beta/models/gemini-2.5-flash:countTokens');
  assert.deepEqual(count.body, {
    generateContentRequest: {
      model: 'models/gemini-2.5-flash',
      systemInstruction: body.systemInstruction,
      contents: body.contents,
    },
  });
  const allocated = budgetEntries(served.root).filter(
    (e) => e.event_type === 'BUDGET_ALLOCATED' && e.metadata.session_id === 'SES-R-GEM',
  );
  // The fake Gemini API counts every request 11 tokens.
  assert.equal(allocated[0]?.metadata.reserved_tokens, withMargin(11) + 128);
});
