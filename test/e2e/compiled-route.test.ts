// Compiler → router → Anthropic provider over real HTTP → a local server that simulates prefix caching:
// the compiled breakpoints reach the wire, and each EXCHANGE records the stable prefix hash and the
// provider's cache counts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';

const { compilePrompt } =
  await fromDevRoot<typeof import('../../staging/PKG-COMPILER-001/HOT/compiler/compile.js')>('HOT/compiler/compile.js');
const { renderAnthropic } = await fromDevRoot<
  typeof import('../../staging/PKG-COMPILER-001/HOT/compiler/render/anthropic.js')
>('HOT/compiler/render/anthropic.js');
const { startAnthropicCacheServer } = await fromDevRoot<
  typeof import('../../staging/PKG-COMPILER-001/HOT/tests/compiler/fixtures/anthropic-cache-server.js')
>('HOT/tests/compiler/fixtures/anthropic-cache-server.js');
const { Router } =
  await fromDevRoot<typeof import('../../staging/PKG-ROUTER-001/HOT/router/router.js')>('HOT/router/router.js');
const { loadRouterConfig } =
  await fromDevRoot<typeof import('../../staging/PKG-ROUTER-001/HOT/router/config.js')>('HOT/router/config.js');
const { AnthropicProvider } = await fromDevRoot<
  typeof import('../../staging/PKG-PROVIDER-ANTHROPIC-001/HOT/providers/anthropic/provider.js')
>('HOT/providers/anthropic/provider.js');
const { Ledger, verifyLedger } =
  await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/index.js')>(
    'HOT/kernel/ledger/index.js',
  );

const source = (name: string, lines: number): { path: string; content: string } => ({
  path: `src/${name}.ts`,
  content: Array.from(
    { length: lines },
    (_, i) => `export function ${name}${i}(s: string): string { return s + '${i}'; }`,
  ).join('\n'),
});

test('compiled prompts routed to Anthropic: breakpoints on the wire, stable hash and cache counts in every EXCHANGE', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-e2e-compiled-'));
  const server = await startAnthropicCacheServer({
    apiKey: 'test-key',
    minCacheTokens: 1024,
    reply: (_b, i) => `turn ${i + 1} done`,
  });
  const ledger = Ledger.open(join(dir, 'ledger.sqlite'), { create: true });
  t.after(async () => {
    ledger.close();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const provider = new AnthropicProvider({ config: { base_url: server.url, api_key: 'test-key' }, env: {} });
  const router = new Router({
    ledger,
    config: loadRouterConfig(undefined, { default_provider: 'anthropic', default_model: 'claude-test' }),
    providers: [provider],
    devMode: true,
  });

  const turns = 6;
  for (let turn = 1; turn <= turns; turn += 1) {
    const compiled = compilePrompt({
      role: 'executor',
      model: 'claude-test',
      zones: {
        developer_instructions: 'Run the tests.',
        turn_context: 'cwd: /srv',
        user_instructions: 'Be brief.',
        environment_context: 'os: linux',
      },
      tiers: { L0: { files: [source('core', 300)] }, L1: { files: [source('service', 120)] } },
      task: {
        task_id: `T-${turn}`,
        max_output_tokens: 256,
        delta_context: `after turn ${turn - 1}`,
        guide_cache_key: 'guide:v1',
        task_prompt: `Turn ${turn}: do step ${turn}.`,
      },
    });
    const tail = compiled.messages[compiled.messages.length - 1];
    const res = await router.route({
      prompt: typeof tail?.content === 'string' ? tail.content : JSON.stringify(tail?.content),
      contract_id: 'PRC-E2E',
      agent_id: 'AGENT-E2E',
      session_id: 'SES-E2E',
      compiled: {
        stable_prefix_hash: compiled.stable_prefix_hash,
        body: renderAnthropic(compiled) as unknown as Record<string, unknown>,
      },
    });
    assert.equal(res.outcome, 'success', `${res.error_code ?? ''} ${res.error_message ?? ''}`);
    assert.equal(res.content, `turn ${turn} done`);
  }

  const sent = server.requests.map((r) => JSON.stringify(r.body));
  assert.ok(
    sent.every((body) => body.includes('"cache_control"')),
    'the compiled breakpoints reach the wire',
  );
  const exchanges = ledger.history('SES-E2E');
  assert.equal(exchanges.length, turns);
  const stable = new Set(exchanges.map((e) => e.metadata.stable_prefix_hash));
  assert.equal(stable.size, 1, 'the stable prefix never moved across turns');
  assert.equal(exchanges[0]?.metadata.cache_read_tokens, 0);
  assert.ok(Number(exchanges[0]?.metadata.cache_write_tokens) > 0, 'turn 1 writes the cache');
  const later = exchanges.slice(1);
  const read = later.reduce((n, e) => n + Number(e.metadata.cache_read_tokens), 0);
  const input = later.reduce((n, e) => n + Number(e.metadata.input_tokens), 0);
  t.diagnostic(
    `turns 2-${turns}: ${read} of ${input} input tokens served from cache (${((100 * read) / input).toFixed(1)}%)`,
  );
  assert.ok(read / input >= 0.8, `cache share ${(read / input).toFixed(3)} < 0.8`);
  assert.ok(
    later.every((e) => /^Task ID: T-\d/.test(String(e.metadata.prompt)) || String(e.metadata.prompt).includes('Turn ')),
    "the EXCHANGE prompt is the turn's dynamic tail",
  );
  assert.equal(verifyLedger(ledger).ok, true);
});
