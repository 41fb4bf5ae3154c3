// The router's periodic checkpoints: the head is signed once `every_entries` entries or `every_seconds` seconds have
// passed since the newest checkpoint in the root, and a checkpoint that cannot be written never costs the response.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { warningText } from '#kernel/catalogue/define.js';
import { createRoot } from '#kernel/installer/genesis.js';
import { checkpointDir, Ledger, ledgerPathForRoot } from '#kernel/ledger/index.js';
import { rootKeyPath } from '#kernel/signing/index.js';
import { routerCheckpointer } from '../../router/checkpoints.js';
import { loadRouterConfig } from '../../router/config.js';
import { Router } from '../../router/router.js';
import { MockProvider } from '#providers/mock/provider.js';
import { request } from './harness.js';

function keyedRoot(
  t: { after: (fn: () => void) => void },
  now: { ms: number },
  rootKey = true,
): { root: string; ledger: Ledger } {
  const dir = mkdtempSync(join(tmpdir(), 'cp-router-cp-'));
  const root = join(dir, 'root');
  createRoot(root, { clock: () => now.ms, rootKey });
  const ledger = Ledger.open(ledgerPathForRoot(root), { clock: () => now.ms, synchronous: 'OFF' });
  t.after(() => {
    ledger.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { root, ledger };
}

const files = (root: string): string[] => readdirSync(checkpointDir(root)).sort();
const append = (ledger: Ledger, n: number): void => {
  ledger.appendBatch(
    Array.from({ length: n }, (_, i) => ({
      event_type: 'NOTE',
      submission_id: 'S',
      decision: 'OK',
      reason: `n${i}`,
      metadata: {},
    })),
  );
};

test('the router checkpoints every N entries, and after T seconds only when the head moved', (t) => {
  const now = { ms: Date.parse('2026-03-01T12:00:00.000Z') };
  const { root, ledger } = keyedRoot(t, now);
  const after = routerCheckpointer({
    root,
    ledger,
    config: { every_entries: 5, every_seconds: 60 },
    clock: () => now.ms,
  });
  assert.ok(after);
  assert.equal(files(root).length, 1, 'genesis checkpointed ROOT_CREATED');
  append(ledger, 3);
  assert.equal(after(), null);
  assert.equal(files(root).length, 1, '3 entries, 0 s: not due');
  append(ledger, 2);
  assert.equal(after(), null);
  assert.equal(files(root).length, 2, '5 entries: due');
  append(ledger, 1);
  after();
  assert.equal(files(root).length, 2, '1 entry, 0 s: not due');
  now.ms += 61_000;
  after();
  assert.equal(files(root).length, 3, '1 entry, 61 s: due');
  assert.equal(Number.parseInt(files(root).at(-1) as string, 10), ledger.head().seq);
  now.ms += 61_000;
  after();
  assert.equal(files(root).length, 3, 'nothing new to sign, however long it has been');
});

test('routing through a router with the checkpointer signs the head after the route; no config section means none', async (t) => {
  const now = { ms: Date.parse('2026-03-01T12:00:00.000Z') };
  const { root, ledger } = keyedRoot(t, now);
  const config = loadRouterConfig(undefined, {
    default_provider: 'mock',
    default_model: 'mock-model-1',
    checkpoint: { every_entries: 1, every_seconds: 3600 },
  });
  const router = new Router({
    ledger,
    config,
    providers: [new MockProvider({})],
    devMode: true,
    clock: () => now.ms,
    afterRoute: routerCheckpointer({ root, ledger, config: config.checkpoint, clock: () => now.ms }),
  });
  const response = await router.route(request());
  assert.equal(response.outcome, 'success');
  assert.deepEqual(response.warnings, []);
  assert.equal(Number.parseInt(files(root).at(-1) as string, 10), ledger.head().seq);
  assert.equal(routerCheckpointer({ root, ledger, config: undefined }), undefined);
});

test('a checkpoint that cannot be written is a warning on the response, never a lost exchange', async (t) => {
  const now = { ms: Date.parse('2026-03-01T12:00:00.000Z') };
  const { root, ledger } = keyedRoot(t, now);
  writeFileSync(rootKeyPath(root), 'damaged');
  const config = loadRouterConfig(undefined, {
    default_provider: 'mock',
    default_model: 'mock-model-1',
    checkpoint: { every_entries: 1, every_seconds: 3600 },
  });
  const router = new Router({
    ledger,
    config,
    providers: [new MockProvider({})],
    devMode: true,
    clock: () => now.ms,
    afterRoute: routerCheckpointer({ root, ledger, config: config.checkpoint, clock: () => now.ms }),
  });
  const response = await router.route(request());
  assert.equal(response.outcome, 'success');
  assert.match(response.exchange_entry_id, /^LED-/);
  assert.equal(response.warnings.length, 1);
  assert.match(warningText(response.warnings[0]!), /^CHECKPOINT_FAILED: .*ERR_ROOT_KEY_INVALID/);
});

test('a root without a root key routes as before and writes no checkpoint', (t) => {
  const now = { ms: Date.parse('2026-03-01T12:00:00.000Z') };
  const { root, ledger } = keyedRoot(t, now, false);
  const after = routerCheckpointer({
    root,
    ledger,
    config: { every_entries: 1, every_seconds: 1 },
    clock: () => now.ms,
  });
  append(ledger, 3);
  assert.equal(after?.(), null);
  assert.throws(() => readdirSync(checkpointDir(root)), { code: 'ENOENT' });
});
