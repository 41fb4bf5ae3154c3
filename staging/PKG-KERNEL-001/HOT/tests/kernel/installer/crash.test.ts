// Kill the real installer process at each commit step; the next command that opens the root repairs it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CpError } from '../../../kernel/errors.js';
import { COMMIT_STEPS, type StepHook } from '../../../kernel/installer/hooks.js';
import { installOne } from '../../../kernel/installer/install.js';
import { withRootSession } from '../../../kernel/installer/session.js';
import { uninstallOne } from '../../../kernel/installer/uninstall.js';
import { verifyRoot } from '../../../kernel/installer/verify.js';
import { Ledger, ledgerPathForRoot, verifyLedger } from '../../../kernel/ledger/index.js';
import { readReceipt } from '../../../kernel/registry/receipt.js';
import { buildArchive, codeOf, ledgerEntries, newRoot, tempDir } from './helpers.js';

const installScript = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'scripts', 'install.js');
const V1 = { 'HOT/alpha/a.js': 'a v1', 'HOT/alpha/b.js': 'b v1', 'HOT/alpha/only-v1.js': 'old' };
const V2 = {
  'HOT/alpha/a.js': 'a v2',
  'HOT/alpha/b.js': 'b v2',
  'HOT/alpha/new/deep/n.js': 'a directory new to the root',
  'HOT/alpha/only-v2.js': 'new',
};

for (const step of COMMIT_STEPS) {
  test(`an upgrade killed at ${step} is repaired to fully ${step === 'before-journal' ? 'old' : 'new'}`, async (t) => {
    const dir = tempDir(t);
    const root = newRoot(dir);
    const v1 = await buildArchive(dir, { id: 'PKG-ALPHA-001', version: '1.0.0', files: V1 });
    const v2 = await buildArchive(dir, { id: 'PKG-ALPHA-001', version: '2.0.0', files: V2 });
    await withRootSession(root, {}, (s) => installOne(s, { archivePath: v1, mode: 'install', dev: true }));

    const child = spawnSync(process.execPath, [installScript, '--root', root, '--upgrade', '--dev', v2], {
      env: { ...process.env, CPLANE_TEST_CRASH_AT: step },
      encoding: 'utf8',
    });
    assert.equal(child.signal, 'SIGKILL', `the installer should have been killed at ${step}: ${child.stderr}`);

    const repair = await withRootSession(root, {}, (s) => s.repair);
    const expectNew = step !== 'before-journal';
    if (expectNew) assert.equal(repair.rolled_forward?.package_id, 'PKG-ALPHA-001');
    else assert.equal(repair.rolled_back.length, 1);

    const want = expectNew ? V2 : V1;
    const gone = expectNew ? V1 : V2;
    for (const [path, text] of Object.entries(want)) assert.equal(readFileSync(join(root, path), 'utf8'), text, path);
    for (const path of Object.keys(gone).filter((p) => !(p in want)))
      assert.equal(existsSync(join(root, path)), false, path);
    assert.equal(readReceipt(root, 'PKG-ALPHA-001')!.version, expectNew ? '2.0.0' : '1.0.0');
    assert.deepEqual(verifyRoot(root).findings, []);
    assert.equal(existsSync(join(root, 'HOT/registries/journal.json')), false);
    assert.deepEqual(readdirSync(join(root, 'HOT/registries/txn')), []);

    const upgrades = ledgerEntries(root).filter((e) => e.event_type === 'PACKAGE_UPGRADED');
    assert.equal(upgrades.length, expectNew ? 1 : 0, 'the upgrade is recorded exactly once');
    const ledger = Ledger.open(ledgerPathForRoot(root));
    try {
      assert.equal(verifyLedger(ledger, { anchor: readReceipt(root, 'PKG-ALPHA-001')!.ledger_anchor }).ok, true);
    } finally {
      ledger.close();
    }
  });
}

test('the root entry installs several archives in one process, one progress line each', async (t) => {
  const dir = tempDir(t);
  const root = newRoot(dir);
  const a = await buildArchive(dir, { id: 'PKG-ALPHA-001', files: { 'HOT/alpha/a.js': 'a' } });
  const b = await buildArchive(dir, {
    id: 'PKG-BETA-001',
    deps: { 'PKG-ALPHA-001': '^1.0.0' },
    files: { 'HOT/beta/b.js': 'b' },
  });
  const bad = await buildArchive(dir, {
    id: 'PKG-GAMMA-001',
    deps: { 'PKG-NOPE-001': '*' },
    files: { 'HOT/gamma/g.js': 'g' },
  });
  const ok = spawnSync(process.execPath, [installScript, '--root', root, '--dev', a, b], { encoding: 'utf8' });
  assert.equal(ok.status, 0, ok.stderr);
  const lines = ok.stdout.trim().split('\n');
  assert.equal(lines.length, 2);
  assert.match(lines[0]!, /^\[1\/2\] installed PKG-ALPHA-001 1\.0\.0: 1 files, .*\(\d+ ms\)$/);
  assert.match(lines[1]!, /^\[2\/2\] installed PKG-BETA-001 1\.0\.0/);
  const failed = spawnSync(process.execPath, [installScript, '--root', root, '--dev', bad], { encoding: 'utf8' });
  assert.equal(failed.status, 3);
  assert.match(failed.stderr, /ERR_DEPENDENCY_MISSING: package 1 of 1 .*PKG-GAMMA-001/);
  assert.equal(readReceipt(root, 'PKG-GAMMA-001'), null);
});

test('a commit that fails after its journal (a full disk) says it is left pending and how it is finished; the next session finishes it', async (t) => {
  const dir = tempDir(t);
  const root = newRoot(dir);
  const v1 = await buildArchive(dir, { id: 'PKG-ALPHA-001', version: '1.0.0', files: V1 });
  const v2 = await buildArchive(dir, { id: 'PKG-ALPHA-001', version: '2.0.0', files: V2 });
  await withRootSession(root, {}, (s) => installOne(s, { archivePath: v1, mode: 'install', dev: true }));
  const diskFull: StepHook = (step) => {
    if (step === 'after-files')
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', syscall: 'write' });
  };
  const pending = (kind: string) => (error: unknown) => {
    assert.equal(codeOf(error), 'ERR_DISK_FULL');
    const { message, hint, details } = error as CpError;
    assert.match(message, new RegExp(`the ${kind} of PKG-ALPHA-001 \\(TXN-[0-9a-f]+\\) is journaled but not finished`));
    assert.match(hint, /cplane verify --root R/);
    assert.doesNotMatch(hint, /nothing was left half-done/);
    assert.equal(details.commit_pending, true);
    return true;
  };

  await assert.rejects(
    withRootSession(root, {}, (s) =>
      installOne(s, { archivePath: v2, mode: 'upgrade', dev: true }, { hook: diskFull }),
    ),
    pending('upgrade'),
  );
  assert.equal(existsSync(join(root, 'HOT/registries/journal.json')), true);
  const repair = await withRootSession(root, {}, (s) => s.repair);
  assert.equal(repair.rolled_forward?.package_id, 'PKG-ALPHA-001');
  for (const [path, text] of Object.entries(V2)) assert.equal(readFileSync(join(root, path), 'utf8'), text, path);
  assert.deepEqual(verifyRoot(root).findings, []);

  await assert.rejects(
    withRootSession(root, {}, (s) => uninstallOne(s, 'PKG-ALPHA-001', diskFull)),
    pending('uninstall'),
  );
  await withRootSession(root, {}, (s) => s.repair);
  assert.equal(readReceipt(root, 'PKG-ALPHA-001'), null);
  for (const path of Object.keys(V2)) assert.equal(existsSync(join(root, path)), false, path);
  assert.deepEqual(verifyRoot(root).findings, []);
});
