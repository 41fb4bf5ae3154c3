import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isWireProvider } from '#providers/wire/spec.js';
import { installedProviders, loadInstalledProvider, openRouter, readBreakerStates } from '../../router/open.js';
import { runSmoke, SMOKE_ANSWER } from '../../router/smoke.js';

/** The root this code is installed in (or the repository's dev root). */
const CODE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

function scratch(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'cp-router-open-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('the smoke exchange passes through the installed router into a scratch ledger', async (t) => {
  const dir = scratch(t);
  const result = await runSmoke(CODE_ROOT, { ledgerPath: join(dir, 'smoke.sqlite') });
  assert.deepEqual(result.problems, []);
  assert.equal(result.ok, true);
  assert.match(result.message, /^SMOKE TEST PASSED/);
  assert.match(result.exchange_entry_id ?? '', /^LED-[a-f0-9]{8}$/);
});

test('the smoke check sees meaning, not structure: a provider answering otherwise FAILS it', async (t) => {
  const dir = scratch(t);
  const result = await runSmoke(CODE_ROOT, { ledgerPath: join(dir, 'smoke.sqlite'), mockResponse: 'The answer is 41' });
  assert.equal(result.ok, false);
  assert.match(result.message, /SMOKE TEST FAILED: route\(\) returned "The answer is 41", expected "The answer is 42"/);
  assert.match(result.message, /EXCHANGE metadata.response is not the provider's answer|route\(\) returned/);
  assert.equal(SMOKE_ANSWER, 'The answer is 42');
});

test('breaker state survives across router processes through the state file', async (t) => {
  const dir = scratch(t);
  const statePath = join(dir, 'breakers.json');
  const options = { provider: 'mock', devMode: true, ledgerPath: join(dir, 'l.sqlite'), breakerStatePath: statePath };
  const first = await openRouter(CODE_ROOT, options);
  const breaker = first.router.breakers.for('mock', 'mock-model-1');
  for (let i = 0; i < 3; i += 1) breaker.recordFailure();
  await first.close();
  assert.equal(readBreakerStates(statePath)[0]?.state, 'OPEN');
  const second = await openRouter(CODE_ROOT, options);
  try {
    const res = await second.router.route({ prompt: 'hi', contract_id: 'C', agent_id: 'A', session_id: 'S' });
    assert.equal(res.error_code, 'CIRCUIT_OPEN');
    assert.equal(res.dispatch_entry_id, '');
  } finally {
    await second.close();
  }
});

test('asking for a provider that is not installed is a coded error naming the installed ones', async (t) => {
  const dir = scratch(t);
  await assert.rejects(
    openRouter(CODE_ROOT, { provider: 'not-installed', ledgerPath: join(dir, 'l.sqlite') }),
    (e: { code?: string; hint?: string }) => e.code === 'ERR_ROUTER_PROVIDER_UNAVAILABLE' && /mock/.test(e.hint ?? ''),
  );
});

test('installed providers are discovered with the surfaces each serves, none constructed (no key needed)', async () => {
  const { providers, warnings } = await installedProviders(CODE_ROOT);
  assert.deepEqual(warnings, []);
  const serves = Object.fromEntries(providers.map((p) => [p.id, [...p.serves].sort()]));
  assert.deepEqual(serves.anthropic, ['anthropic.count_tokens', 'anthropic.messages', 'anthropic.models']);
  assert.deepEqual(serves.openai, ['openai.chat', 'openai.embeddings', 'openai.models', 'openai.responses']);
  assert.deepEqual(serves.gemini, ['gemini.count_tokens', 'gemini.generate', 'gemini.models', 'gemini.stream']);
  assert.deepEqual(serves.mock, [], 'the mock offers the gateway nothing');
  // Each package builds a provider meeting the whole contract: a wire call and a reader beside send.
  const anthropic = await loadInstalledProvider(CODE_ROOT, 'anthropic', { ANTHROPIC_API_KEY: 'k-0123456789' });
  const mock = await loadInstalledProvider(CODE_ROOT, 'mock', {});
  for (const provider of [anthropic, mock]) {
    assert.equal(typeof provider.send, 'function', provider.id);
    assert.ok(isWireProvider(provider), `${provider.id} has a wire call`);
  }
});
