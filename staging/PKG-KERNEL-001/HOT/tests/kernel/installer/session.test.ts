// One session, many commits: the receipts it keeps in memory must match the disk after every kind of
// commit (install, transfer through replaces, upgrade, uninstall, crash repair), and no commit leaves its
// staging directory behind.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { installOne } from '../../../kernel/installer/install.js';
import { ReceiptCache } from '../../../kernel/installer/receipt-cache.js';
import type { RootSession } from '../../../kernel/installer/session.js';
import { uninstallOne } from '../../../kernel/installer/uninstall.js';
import { verifyRoot } from '../../../kernel/installer/verify.js';
import { listReceipts, readReceipt } from '../../../kernel/registry/receipt.js';
import { buildArchive, newRoot, session, tempDir } from './helpers.js';

const installScript = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'scripts', 'install.js');

function assertInStep(root: string, s: RootSession, step: string): void {
  assert.deepEqual(s.receipts.all(), listReceipts(root), `${step}: the session's receipts differ from the disk`);
  assert.deepEqual(readdirSync(join(root, 'HOT/registries/txn')), [], `${step}: a staging directory was left behind`);
  assert.deepEqual(verifyRoot(root).findings, [], step);
}

test('one session: each plan sees the receipts the earlier commits wrote (replaces, upgrade, uninstall)', async (t) => {
  const dir = tempDir(t);
  const root = newRoot(dir);
  const s = await session(t, root);
  const install = async (spec: Parameters<typeof buildArchive>[1], mode: 'install' | 'upgrade' = 'install') =>
    installOne(s, { archivePath: await buildArchive(dir, spec), mode, dev: true });

  await install({
    id: 'PKG-ALPHA-001',
    files: { 'HOT/shared/x.js': 'alpha x', 'HOT/shared/y.js': 'alpha y', 'HOT/alpha/a.js': 'a' },
  });
  assertInStep(root, s, 'install');
  // BETA takes x.js from ALPHA, then GAMMA takes y.js: GAMMA's plan rewrites ALPHA's receipt from the one BETA's
  // commit left, so a stale ALPHA (still owning x.js, nothing transferred out) would come back here.
  await install({ id: 'PKG-BETA-001', replaces: ['PKG-ALPHA-001'], files: { 'HOT/shared/x.js': 'beta x' } });
  assertInStep(root, s, 'first transfer');
  await install({ id: 'PKG-GAMMA-001', replaces: ['PKG-ALPHA-001'], files: { 'HOT/shared/y.js': 'gamma y' } });
  assertInStep(root, s, 'second transfer');
  const alpha = readReceipt(root, 'PKG-ALPHA-001')!;
  assert.deepEqual(
    alpha.files.map((f) => f.path),
    ['HOT/alpha/a.js'],
  );
  assert.deepEqual(
    alpha.transferred_out.map((o) => [o.path, o.to_package]),
    [
      ['HOT/shared/x.js', 'PKG-BETA-001'],
      ['HOT/shared/y.js', 'PKG-GAMMA-001'],
    ],
  );

  // Upgrading BETA removes what 1.0.0 shipped and 2.0.0 does not; DELTA then needs BETA 2.
  const upgraded = await install(
    { id: 'PKG-BETA-001', version: '2.0.0', replaces: ['PKG-ALPHA-001'], files: { 'HOT/beta/b.js': 'beta 2' } },
    'upgrade',
  );
  assert.deepEqual([upgraded.action, upgraded.previous_version, upgraded.removed], ['upgraded', '1.0.0', 1]);
  assertInStep(root, s, 'upgrade');
  const deltaSpec = { id: 'PKG-DELTA-001', deps: { 'PKG-BETA-001': '^2.0.0' }, files: { 'HOT/delta/d.js': 'd' } };
  await install(deltaSpec);
  assertInStep(root, s, 'install against the upgrade');

  // Once uninstalled, the same archive installs again rather than being "unchanged".
  await uninstallOne(s, 'PKG-DELTA-001');
  assertInStep(root, s, 'uninstall');
  const again = await install(deltaSpec);
  assert.equal(again.action, 'installed');
  assert.equal(readFileSync(join(root, 'HOT/delta/d.js'), 'utf8'), 'd');
  assertInStep(root, s, 'reinstall');
  await assert.rejects(uninstallOne(s, 'PKG-BETA-001'), { code: 'ERR_HAS_DEPENDENTS' });
});

test('a session that repairs a crashed commit plans against the repaired receipts', async (t) => {
  const dir = tempDir(t);
  const root = newRoot(dir);
  const alpha = await buildArchive(dir, {
    id: 'PKG-ALPHA-001',
    files: { 'HOT/shared/x.js': 'alpha x', 'HOT/alpha/a.js': 'a' },
  });
  const beta = await buildArchive(dir, {
    id: 'PKG-BETA-001',
    replaces: ['PKG-ALPHA-001'],
    files: { 'HOT/shared/x.js': 'beta x' },
  });
  const gamma = await buildArchive(dir, {
    id: 'PKG-GAMMA-001',
    deps: { 'PKG-BETA-001': '^1.0.0' },
    files: { 'HOT/gamma/g.js': 'g' },
  });
  // Killed after the ledger record: ALPHA's receipt is rewritten, BETA's own is not written yet.
  const child = spawnSync(process.execPath, [installScript, '--root', root, '--dev', alpha, beta], {
    env: { ...process.env, CPLANE_TEST_CRASH_AT: 'after-ledger@PKG-BETA-001' },
    encoding: 'utf8',
  });
  assert.equal(child.signal, 'SIGKILL', child.stderr);
  assert.equal(readReceipt(root, 'PKG-BETA-001'), null);

  const s = await session(t, root);
  assert.equal(s.repair.rolled_forward?.package_id, 'PKG-BETA-001');
  const outcome = await installOne(s, { archivePath: gamma, mode: 'install', dev: true });
  assert.equal(outcome.action, 'installed');
  assertInStep(root, s, 'after repair');
  assert.deepEqual(
    s.receipts
      .all()
      .get('PKG-ALPHA-001')
      ?.transferred_out.map((o) => o.path),
    ['HOT/shared/x.js'],
  );
});

test('a commit removes its staging directory, whether files went into new or existing directories, or something unexpected was left in it', async (t) => {
  const dir = tempDir(t);
  const root = newRoot(dir);
  const s = await session(t, root);
  const txn = join(root, 'HOT/registries/txn');
  // New to the root: HOT/alpha moves whole.
  await installOne(s, {
    archivePath: await buildArchive(dir, {
      id: 'PKG-ALPHA-001',
      files: { 'HOT/alpha/deep/a.js': 'a', 'HOT/alpha/top.js': 't' },
    }),
    mode: 'install',
    dev: true,
  });
  assert.deepEqual(readdirSync(txn), []);
  // Into existing directories at several depths, plus a directory new under an existing one.
  await installOne(s, {
    archivePath: await buildArchive(dir, {
      id: 'PKG-BETA-001',
      files: { 'HOT/alpha/deep/b.js': 'b', 'HOT/alpha/b.js': 'b', 'HOT/alpha/deep/new/n.js': 'n' },
    }),
    mode: 'install',
    dev: true,
  });
  assert.deepEqual(readdirSync(txn), []);
  assert.equal(readFileSync(join(root, 'HOT/alpha/deep/new/n.js'), 'utf8'), 'n');
  // A stray file in the staging area when the commit ends: the directory still goes.
  const stray = (step: string): void => {
    if (step !== 'after-receipt') return;
    const [name] = readdirSync(txn);
    mkdirSync(join(txn, name!, 'HOT/alpha/deep'), { recursive: true });
    writeFileSync(join(txn, name!, 'HOT/alpha/deep/stray.tmp'), 'not part of the commit');
  };
  await installOne(
    s,
    {
      archivePath: await buildArchive(dir, { id: 'PKG-GAMMA-001', files: { 'HOT/alpha/deep/g.js': 'g' } }),
      mode: 'install',
      dev: true,
    },
    { hook: stray },
  );
  assert.deepEqual(readdirSync(txn), []);
  assert.equal(existsSync(join(root, 'HOT/alpha/deep/stray.tmp')), false);
  // Uninstall stages nothing; its commit has no staging directory to remove.
  await uninstallOne(s, 'PKG-GAMMA-001');
  assert.deepEqual(readdirSync(txn), []);
  assertInStep(root, s, 'end');
});

test('a receipt write that fails drops the cached receipts: the next read goes back to the disk', async (t) => {
  const dir = tempDir(t);
  const root = newRoot(dir);
  const s = await session(t, root);
  await installOne(s, {
    archivePath: await buildArchive(dir, { id: 'PKG-ALPHA-001', files: { 'HOT/alpha/a.js': 'a' } }),
    mode: 'install',
    dev: true,
  });
  const cache = new ReceiptCache(root);
  const alpha = cache.all().get('PKG-ALPHA-001')!;
  assert.equal(alpha.version, '1.0.0');
  // Stands for a write that changed the disk before it failed: the cache cannot know what it left.
  writeFileSync(join(root, 'HOT/installed/PKG-ALPHA-001/receipt.json'), JSON.stringify({ ...alpha, version: '1.0.1' }));
  writeFileSync(join(root, 'HOT/installed/PKG-BETA-001'), 'a file where the receipt directory goes');
  assert.throws(
    () => cache.write({ ...alpha, package_id: 'PKG-BETA-001' }),
    (e: { code?: string }) => e.code === 'EEXIST' || e.code === 'ENOTDIR',
  );
  assert.equal(cache.all().get('PKG-ALPHA-001')?.version, '1.0.1');
});
