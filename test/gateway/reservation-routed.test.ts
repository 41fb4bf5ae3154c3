// Tight reservations for routed aliases, and the tokenizer's load at open (a gateway on a bootstrapped root, in this
// process on the root's own code, against a local upstream speaking OpenAI's Chat Completions): an alias reserves the
// largest count over its deployments, fallbacks included, so the reservation holds whichever answers — each counted
// on the body it is sent, in its own format (Messages by count_tokens, Chat by its tokenizer); a deployment whose
// tokenizer is not published (a Claude model behind an OpenAI-compatible endpoint) keeps the byte bound.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { encodeChat as cl100k } from 'gpt-tokenizer/encoding/cl100k_base';
import { encodeChat as o200k } from 'gpt-tokenizer/encoding/o200k_base';
import type { encoderLoaded as EncoderLoaded } from '../../staging/PKG-BUDGETER-001/HOT/budgeter/tokens/openai-encoder.js';
import type { openGateway as OpenGateway, OpenedGateway } from '../../staging/PKG-GATEWAY-001/HOT/gateway/open.js';
import type { loadGatewayConfig as LoadGatewayConfig } from '../../staging/PKG-GATEWAY-001/HOT/gateway/settings.js';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';
import { bootstrapSignedRoot } from '../lib/signed-root.js';
import { AUTH_SECRET, budgetEntries, configSet, issueKey, KEYS } from './harness.js';
import { startUpstream, type Upstream } from './upstream.js';

const { bodyInputBounds } =
  await fromDevRoot<typeof import('../../staging/PKG-BUDGETER-001/HOT/budgeter/bound.js')>('HOT/budgeter/bound.js');

const MAX_TOKENS = 128;
/** Russian prose: cl100k (gpt-4) needs markedly more tokens for it than o200k (gpt-4o), and bytes far more still. */
const TEXT = Array.from(
  { length: 40 },
  (_, i) => `Шаг ${i}: прочитайте файл, исправьте падающий тест и снова запустите все проверки проекта.`,
).join('\n');
const messages = [{ role: 'user' as const, content: TEXT }];

let work: string;
let root: string;
let upstream: Upstream;
let served: OpenedGateway | null = null;
let url: string;
let key: string;
let hot: (rel: string) => Promise<unknown>;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'cp-reserve-routed-'));
  root = join(work, 'root');
  bootstrapSignedRoot(join(work, 'build'), root);
  upstream = await startUpstream(KEYS);
  const deployment = (id: string, model: string) => ({
    id,
    provider: 'openai',
    base_url: upstream.url,
    credential_env: 'ROUTED_OAI_KEY',
    model,
  });
  configSet(
    root,
    'gateway.routing',
    JSON.stringify({
      deployments: [
        deployment('four-o', 'gpt-4o'),
        deployment('four', 'gpt-4'),
        // Anthropic's OpenAI SDK compatibility endpoint serves Claude on Chat Completions.
        deployment('claude', 'claude-sonnet-4-5'),
        // Anthropic's own Messages API, counted by its count_tokens (switched on below).
        {
          id: 'messages',
          provider: 'anthropic',
          base_url: upstream.url,
          credential_env: 'ROUTED_ANT_KEY',
          model: 'claude-sonnet-4-5',
        },
      ],
      aliases: {
        fallback: { targets: ['four-o', 'four'] },
        mixed: { targets: [['four-o', 'claude']] },
        cross: { targets: ['messages', 'four'] },
      },
    }),
  );
  configSet(root, 'gateway.count_input_tokens', JSON.stringify({ anthropic: true }));
  // The root's own modules, as `cplane serve` loads them (one copy of the encoder's state the gateway fills).
  hot = (rel: string) => import(pathToFileURL(join(root, 'HOT', rel)).href);
  key = issueKey('AGENT-ROUTED');
});
after(async () => {
  await served?.gateway.drain();
  await served?.close();
  await upstream?.close();
  rmSync(work, { recursive: true, force: true });
});

async function open(env: NodeJS.ProcessEnv, routing: boolean): Promise<OpenedGateway> {
  const { openGateway } = (await hot('gateway/open.js')) as { openGateway: typeof OpenGateway };
  const { loadGatewayConfig } = (await hot('gateway/settings.js')) as { loadGatewayConfig: typeof LoadGatewayConfig };
  const settings = loadGatewayConfig(root);
  return openGateway(
    root,
    { CPLANE_AUTH_SECRET: AUTH_SECRET, ...env },
    routing ? settings : { ...settings, routing: undefined },
    () => {},
  );
}

test('the o200k tokenizer starts loading as the gateway opens with an OpenAI-family upstream, and not without one', async () => {
  const { encoderLoaded } = (await hot('budgeter/tokens/openai-encoder.js')) as {
    encoderLoaded: typeof EncoderLoaded;
  };
  const anthropicOnly = await open({ ANTHROPIC_BASE_URL: upstream.url, ANTHROPIC_API_KEY: KEYS.anthropic }, false);
  await anthropicOnly.close();
  assert.equal(encoderLoaded('o200k_base'), false, 'no OpenAI-family upstream: nothing loaded');
  // An OpenAI-family upstream by a routing deployment alone (no OPENAI_* in the environment).
  served = await open({ ROUTED_OAI_KEY: KEYS.openai, ROUTED_ANT_KEY: KEYS.anthropic }, true);
  assert.equal(encoderLoaded('o200k_base'), true, 'the load began while the gateway opened');
  assert.equal(encoderLoaded('cl100k_base'), false, 'the older encoding still waits for a call that needs it');
  const address = await served.gateway.listen('127.0.0.1', 0);
  url = `http://127.0.0.1:${address.port}`;
});

async function reservedFor(alias: string, session: string): Promise<number> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'x-cplane-session': session },
    body: JSON.stringify({ model: alias, max_tokens: MAX_TOKENS, messages }),
  });
  assert.equal(res.status, 200, await res.text());
  const allocated = budgetEntries(root).filter(
    (e) => e.event_type === 'BUDGET_ALLOCATED' && e.metadata.session_id === session,
  );
  assert.equal(allocated.length, 1);
  return allocated[0]?.metadata.reserved_tokens as number;
}

test('an alias reserves the largest tokenizer count over its deployments, its fallback included', async () => {
  const counts = { gpt4o: o200k(messages, 'gpt-4o').length, gpt4: cl100k(messages, 'gpt-4').length };
  assert.ok(counts.gpt4 > counts.gpt4o * 1.2, `gpt-4 counts ${counts.gpt4}, gpt-4o ${counts.gpt4o}`);
  const byteBound = bodyInputBounds({ model: 'fallback', max_tokens: MAX_TOKENS, messages }).bound + MAX_TOKENS;
  const reserved = await reservedFor('fallback', 'SES-ROUTED-FALLBACK');
  // Served by gpt-4o (the first group), reserved for gpt-4 (the fallback) all the same.
  assert.equal(upstream.requests.at(-1)?.body?.model, 'gpt-4o');
  assert.ok(reserved >= counts.gpt4 + MAX_TOKENS, `reserved ${reserved}: covers gpt-4's ${counts.gpt4}`);
  assert.ok(reserved < byteBound / 2, `reserved ${reserved}: a count, not the byte bound's ${byteBound}`);
});

test('an alias spanning an Anthropic and an OpenAI deployment keeps the byte bound: Claude’s tokenizer is not published', async () => {
  const body = { model: 'mixed', max_tokens: MAX_TOKENS, messages };
  const reserved = await reservedFor('mixed', 'SES-ROUTED-MIXED');
  assert.ok(reserved > o200k(messages, 'gpt-4o').length * 2 + MAX_TOKENS, 'not the gpt-4o count alone');
  // The gateway's byte bound of the client's body (one byte more for the brace its prompt and the rest each carry).
  assert.equal(reserved, bodyInputBounds(body).bound + 1 + MAX_TOKENS);
});

/** Reserved for an Anthropic-client call to the `cross` alias (Messages deployment first, gpt-4 on Chat second). */
async function crossReserved(session: string, content: string): Promise<{ reserved: number; counts: number[] }> {
  const asked = [{ role: 'user' as const, content }];
  const body = { model: 'cross', max_tokens: MAX_TOKENS, messages: asked };
  const res = await fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'anthropic-version': '2023-06-01',
      'x-api-key': key,
      'x-cplane-session': session,
    },
    body: JSON.stringify(body),
  });
  assert.equal(res.status, 200, await res.text());
  const counted = upstream.requests.filter((r) => r.path === '/v1/messages/count_tokens').at(-1);
  assert.deepEqual(
    counted?.body,
    { model: 'claude-sonnet-4-5', messages: asked },
    "the Messages deployment's count, its model",
  );
  // The local upstream counts a body's characters; the gateway adds its margin (gateway/input-counts.ts).
  const { withMargin } = (await hot('gateway/input-counts.js')) as { withMargin: (n: number) => number };
  const messagesCount = withMargin(JSON.stringify({ model: 'claude-sonnet-4-5', messages: asked }).length);
  // The gpt-4 deployment is sent the body as Chat Completions, counted by gpt-4's tokenizer (cl100k).
  const chatCount = cl100k(asked, 'gpt-4').length;
  const allocated = budgetEntries(root).filter(
    (e) => e.event_type === 'BUDGET_ALLOCATED' && e.metadata.session_id === session,
  );
  assert.equal(allocated.length, 1);
  const reserved = allocated[0]?.metadata.reserved_tokens as number;
  const byteBound = bodyInputBounds(body).bound + 1 + MAX_TOKENS;
  assert.ok(reserved < byteBound, `reserved ${reserved}: counted, not the byte bound's ${byteBound}`);
  return { reserved, counts: [messagesCount, chatCount] };
}

test('an alias across formats counts each deployment its own body: Messages by count_tokens, the translated Chat body by its tokenizer', async () => {
  // Russian prose: Anthropic's count (here, of characters) is the larger.
  const prose = await crossReserved('SES-ROUTED-CROSS-RU', TEXT);
  const [messagesCount = 0, chatCount = 0] = prose.counts;
  assert.ok(messagesCount > chatCount, `count_tokens ${messagesCount} over gpt-4's ${chatCount} here`);
  assert.equal(prose.reserved, messagesCount + MAX_TOKENS, 'the larger count: the Messages deployment');
  // Emoji: gpt-4's tokenizer needs more tokens for them than they have characters, so the Chat body's count is larger.
  const emoji = await crossReserved('SES-ROUTED-CROSS-EMOJI', '🦜🧬🪐🫧'.repeat(300));
  const [emojiMessages = 0, emojiChat = 0] = emoji.counts;
  assert.ok(emojiChat > emojiMessages, `gpt-4 ${emojiChat} over count_tokens ${emojiMessages} here`);
  assert.ok(emoji.reserved >= emojiChat + MAX_TOKENS, `reserved ${emoji.reserved}: covers gpt-4's ${emojiChat}`);
  assert.ok(emoji.reserved > emojiMessages + MAX_TOKENS, 'more than the Messages count alone');
});
