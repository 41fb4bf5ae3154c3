import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { installOne } from '../../../kernel/installer/install.js';
import { withRootSession } from '../../../kernel/installer/session.js';
import { uninstallOne } from '../../../kernel/installer/uninstall.js';
import { verifyRoot } from '../../../kernel/installer/verify.js';
import { Ledger, ledgerPathForRoot, verifyLedger } from '../../../kernel/ledger/index.js';
import { OwnershipRegistry } from '../../../kernel/registry/ownership.js';
import { listReceipts } from '../../../kernel/registry/receipt.js';
import { isGovernedPath } from '../../../kernel/root/layout.js';
import { createRoot } from '../../../kernel/installer/genesis.js';
import { buildArchive, ledgerEntries, newRoot, session, tempDir } from './helpers.js';

const installScript = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'scripts', 'install.js');

test('uninstall removes files, emptied directories, receipt and ownership rows, and records it', async (t) => {
  const dir = tempDir(t);
  const root = newRoot(dir);
  const s = await session(t, root);
  const a = await buildArchive(dir, {
    id: 'PKG-ALPHA-001',
    files: { 'HOT/alpha/deep/a.js': 'a', 'HOT/shared.js': 's' },
  });
  await installOne(s, { archivePath: a, mode: 'install', dev: true });
  const outcome = await uninstallOne(s, 'PKG-ALPHA-001');
  assert.equal(outcome.removed, 2);
  assert.equal(existsSync(join(root, 'HOT/alpha')), false);
  assert.equal(existsSync(join(root, 'HOT/shared.js')), false);
  assert.equal(existsSync(join(root, 'HOT/installed/PKG-ALPHA-001')), false);
  assert.equal(listReceipts(root).size, 0);
  const registry = OwnershipRegistry.open(root);
  t.after(() => registry.close());
  assert.deepEqual(registry.all(), []);
  const last = ledgerEntries(root).at(-1)!;
  assert.equal(last.event_type, 'PACKAGE_UNINSTALLED');
  assert.equal(last.submission_id, 'PKG-ALPHA-001');
  await assert.rejects(uninstallOne(s, 'PKG-ALPHA-001'), { code: 'ERR_NOT_INSTALLED' });
});

test('verify finds modified, missing and re-typed files, and registry/receipt disagreement', async (t) => {
  const dir = tempDir(t);
  const root = newRoot(dir);
  const a = await buildArchive(dir, {
    id: 'PKG-ALPHA-001',
    files: { 'HOT/alpha/a.js': 'aaaa', 'HOT/alpha/b.js': 'bbbb', 'HOT/alpha/c.js': 'cccc', 'HOT/alpha/d.js': 'dddd' },
  });
  await withRootSession(root, {}, (s) => installOne(s, { archivePath: a, mode: 'install', dev: true }));
  assert.equal(verifyRoot(root).ok, true);
  writeFileSync(join(root, 'HOT/alpha/a.js'), 'AAAA');
  writeFileSync(join(root, 'HOT/alpha/b.js'), 'longer');
  rmSync(join(root, 'HOT/alpha/c.js'));
  const registry = OwnershipRegistry.open(root);
  registry.setPackageFiles('PKG-ROGUE-001', [{ path: 'HOT/alpha/d.js', sha256: 'sha256:x', size: 1 }], []);
  registry.close();
  const result = verifyRoot(root);
  assert.equal(result.ok, false);
  const byPath = Object.fromEntries(result.findings.map((f) => [f.path, f.problem]));
  assert.deepEqual(byPath, {
    'HOT/alpha/a.js': 'digest',
    'HOT/alpha/b.js': 'size',
    'HOT/alpha/c.js': 'missing',
    'HOT/alpha/d.js': 'owner_mismatch',
  });
});

test('governed paths: everything under HOT except installed/, ledger/ and registries/', () => {
  assert.equal(isGovernedPath('HOT/kernel/ledger/index.js'), true);
  assert.equal(isGovernedPath('HOT/package.json'), true);
  for (const path of [
    'HOT/installed/PKG-A-001/receipt.json',
    'HOT/ledger/ledger.sqlite',
    'HOT/registries/trust.json',
    'HOT/registries',
    'README.md',
    'HOT/../x',
    'HOT//x',
    'HOT',
  ]) {
    assert.equal(isGovernedPath(path), false, path);
  }
});

test('genesis refuses a non-empty directory', (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'stray.txt'), 'x');
  assert.throws(() => createRoot(dir), { code: 'ERR_ROOT_NOT_EMPTY' });
  createRoot(dir, { allow: ['stray.txt'] });
  assert.equal(existsSync(join(dir, 'HOT/registries/ownership.sqlite')), true);
});

test('two concurrent installer processes both succeed without interleaving their commits', async (t) => {
  const dir = tempDir(t);
  const root = newRoot(dir);
  const archives = await Promise.all(
    ['ALPHA', 'BETA', 'GAMMA', 'DELTA'].map((name) =>
      buildArchive(dir, {
        id: `PKG-${name}-001`,
        files: Object.fromEntries(
          Array.from({ length: 20 }, (_, i) => [`HOT/${name.toLowerCase()}/f${i}.js`, `${name} ${i}`]),
        ),
      }),
    ),
  );
  const run = (list: string[]): Promise<number> =>
    new Promise((resolve) => {
      const child = spawn(process.execPath, [installScript, '--root', root, '--dev', ...list], { stdio: 'ignore' });
      child.on('exit', (code) => resolve(code ?? 1));
    });
  assert.deepEqual(await Promise.all([run(archives.slice(0, 2)), run(archives.slice(2))]), [0, 0]);
  assert.equal(listReceipts(root).size, 4);
  assert.deepEqual(verifyRoot(root).findings, []);
  const entries = ledgerEntries(root).filter((e) => e.event_type === 'INSTALLED');
  assert.equal(entries.length, 4);
  const ledger = Ledger.open(ledgerPathForRoot(root));
  try {
    assert.equal(verifyLedger(ledger).ok, true);
  } finally {
    ledger.close();
  }
});
