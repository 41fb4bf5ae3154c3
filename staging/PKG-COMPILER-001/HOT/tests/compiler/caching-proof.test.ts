// The caching proof: a 20-turn scripted conversation compiled, rendered for Anthropic and POSTed with
// real fetch to a local Anthropic-compatible server that simulates prefix caching.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compilePrompt } from '../../compiler/compile.js';
import { renderAnthropic } from '../../compiler/render/anthropic.js';
import type { HistoryMessage, PromptSpec } from '../../compiler/spec.js';
import { startAnthropicCacheServer, type AnthropicUsage } from './fixtures/anthropic-cache-server.js';

const TURNS = 20;
/** Active history keeps this many recent messages; older ones graduate into the cached L3 tier. */
const ACTIVE_KEEP = 4;
const GRADUATE_EVERY = 5;

const source = (name: string, lines: number): { path: string; content: string } => ({
  path: `src/${name}.ts`,
  content: Array.from(
    { length: lines },
    (_, i) => `export function ${name}${i}(input: string): string { return input.trim() + '${i}'; }`,
  ).join('\n'),
});

function specForTurn(turn: number, graduated: HistoryMessage[], active: HistoryMessage[], delta: string): PromptSpec {
  return {
    role: 'executor',
    model: 'claude-test',
    zones: {
      developer_instructions: 'Run the tests after each change.',
      turn_context: 'cwd: /srv/app',
      user_instructions: 'Keep functions small.',
      environment_context: 'os: linux',
    },
    tiers: {
      L0: { files: [source('core', 300), source('util', 200)] },
      L1: { files: [source('service', 150)] },
      L2: { files: [source('http', 80)] },
      L3: { history: graduated },
    },
    file_tree: ['src/core.ts', 'src/util.ts', 'src/service.ts', 'src/http.ts', `src/gen-${turn}.ts`],
    active_files: [{ path: `src/gen-${turn}.ts`, content: `export const turn = ${turn};` }],
    active_history: active,
    task: {
      task_id: `T-${turn}`,
      max_output_tokens: 512,
      delta_context: delta,
      guide_cache_key: 'guide:executor:v1',
      task_prompt: `Turn ${turn}: implement step ${turn} of the refactoring plan.`,
    },
  };
}

test('20-turn conversation: >= 80% of input tokens after the first turn are served from the provider cache', async (t) => {
  const server = await startAnthropicCacheServer({
    apiKey: 'test-key',
    minCacheTokens: 1024,
    reply: (_b, i) => `Step ${i + 1} done: updated the functions and the tests pass.`,
  });
  t.after(() => server.close());
  const usages: AnthropicUsage[] = [];
  const stableHashes: string[] = [];
  let graduated: HistoryMessage[] = [];
  let active: HistoryMessage[] = [];
  let delta = 'No previous work.';
  for (let turn = 1; turn <= TURNS; turn += 1) {
    if (turn % GRADUATE_EVERY === 1 && active.length > ACTIVE_KEEP) {
      graduated = [...graduated, ...active.slice(0, active.length - ACTIVE_KEEP)];
      active = active.slice(active.length - ACTIVE_KEEP);
    }
    const compiled = compilePrompt(specForTurn(turn, graduated, active, delta));
    stableHashes.push(compiled.stable_prefix_hash);
    const response = await fetch(`${server.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'test-key', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify(renderAnthropic(compiled)),
    });
    assert.equal(response.status, 200, await response.clone().text());
    const reply = (await response.json()) as { content: { text: string }[]; usage: AnthropicUsage };
    usages.push(reply.usage);
    active = [
      ...active,
      { role: 'user', content: `Turn ${turn}: implement step ${turn} of the refactoring plan.` },
      { role: 'assistant', content: reply.content[0]!.text },
    ];
    delta = `Previous task T-${turn}: ${reply.content[0]!.text}`;
  }
  const inputOf = (u: AnthropicUsage): number =>
    u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;
  const later = usages.slice(1);
  const read = later.reduce((n, u) => n + u.cache_read_input_tokens, 0);
  const total = later.reduce((n, u) => n + inputOf(u), 0);
  const share = read / total;
  t.diagnostic(
    `turns 2-${TURNS}: ${read} of ${total} input tokens read from cache (${(share * 100).toFixed(1)}%); turn 1 wrote ${usages[0]!.cache_creation_input_tokens}`,
  );

  assert.equal(usages[0]!.cache_read_input_tokens, 0);
  assert.ok(usages[0]!.cache_creation_input_tokens > 0);
  assert.ok(
    later.every((u) => u.cache_read_input_tokens > 0),
    'every later turn reads from the cache',
  );
  assert.ok(share >= 0.8, `cache share ${share.toFixed(3)} is below 0.8`);
  // The stable prefix only moves when history graduates into L3; in between, its hash is identical.
  const distinct = new Set(stableHashes).size;
  assert.ok(distinct >= 2 && distinct <= Math.ceil(TURNS / GRADUATE_EVERY) + 1, `${distinct} distinct stable hashes`);
  assert.equal(stableHashes[1], stableHashes[2]);
  assert.ok(server.requests.every((r) => JSON.stringify(r.body).split('"cache_control"').length - 1 <= 4));
});

test('without breakpoints the simulated provider caches nothing (the proof is not vacuous)', async (t) => {
  const server = await startAnthropicCacheServer();
  t.after(() => server.close());
  const compiled = compilePrompt(specForTurn(1, [], [], 'none'));
  const body = JSON.parse(
    JSON.stringify(renderAnthropic(compiled)).replace(/,"cache_control":\{"type":"ephemeral"\}/g, ''),
  ) as object;
  const post = async () =>
    (await (
      await fetch(`${server.url}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify(body),
      })
    ).json()) as { usage: AnthropicUsage };
  await post();
  const second = await post();
  assert.equal(second.usage.cache_read_input_tokens, 0);
  assert.equal(second.usage.cache_creation_input_tokens, 0);
  assert.ok(second.usage.input_tokens > 5000);
});

test('the fixture speaks the wire format: auth, version header, breakpoint limit, errors', async (t) => {
  const server = await startAnthropicCacheServer({ apiKey: 'right', minCacheTokens: 1024 });
  t.after(() => server.close());
  const post = async (body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${server.url}/v1/messages`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-api-key': 'right',
        'anthropic-version': '2023-06-01',
        ...headers,
      },
      body: JSON.stringify(body),
    });
    return {
      status: res.status,
      json: (await res.json()) as { type: string; error?: { type: string; message: string }; usage?: AnthropicUsage },
    };
  };
  const block = (text: string) => ({ type: 'text', text, cache_control: { type: 'ephemeral' } });
  assert.equal(
    (await post({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }, { 'x-api-key': 'wrong' }))
      .json.error?.type,
    'authentication_error',
  );
  assert.equal((await post({ model: 'm', max_tokens: 5, messages: [] })).status, 400);
  const five = await post({
    model: 'm',
    max_tokens: 5,
    system: [block('a'), block('b')],
    messages: [{ role: 'user', content: [block('c'), block('d'), block('e')] }],
  });
  assert.equal(five.status, 400);
  assert.match(five.json.error?.message ?? '', /maximum of 4 blocks with cache_control/);
  // Under the minimum cacheable length nothing is written.
  const small = await post({
    model: 'm',
    max_tokens: 5,
    system: [block('short')],
    messages: [{ role: 'user', content: 'hi' }],
  });
  assert.equal(small.json.usage?.cache_creation_input_tokens, 0);
  const res = await fetch(`${server.url}/v1/other`, { method: 'POST' });
  assert.equal(res.status, 404);
});
