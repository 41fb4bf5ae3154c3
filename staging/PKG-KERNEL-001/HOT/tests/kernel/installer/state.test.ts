import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readPackageArchive } from '../../../kernel/archive/read.js';
import { planInstall } from '../../../kernel/installer/plan.js';
import { syncFilesystem } from '../../../kernel/installer/durable.js';
import { stageFiles } from '../../../kernel/installer/stage.js';
import { currentPlatform } from '../../../kernel/installer/checks.js';
import { readJournal } from '../../../kernel/installer/journal.js';
import { OwnershipRegistry } from '../../../kernel/registry/ownership.js';
import { readReceipt } from '../../../kernel/registry/receipt.js';
import { buildArchive, newRoot, tempDir } from './helpers.js';

test('staging verifies each digest while writing and leaves nothing behind on a mismatch', async (t) => {
  const dir = tempDir(t);
  const root = newRoot(dir);
  const path = await buildArchive(dir, {
    id: 'PKG-ALPHA-001',
    files: { 'HOT/alpha/a.js': 'aaaa', 'HOT/alpha/b.js': 'bbbb' },
  });
  const archive = await readPackageArchive(path);
  const registry = OwnershipRegistry.open(root);
  t.after(() => registry.close());
  const plan = planInstall(
    archive,
    { root, receipts: new Map(), registry, trusted: [] },
    {
      mode: 'install',
      dev: true,
      platform: currentPlatform(),
      archivePath: path,
      txnId: 'TXN-0123456789ab',
      now: new Date(0).toISOString(),
    },
  );
  assert.equal(plan.kind, 'install');
  if (plan.kind !== 'install') return;
  // The bytes change between the reader's check and the write (same size, other content).
  archive.files.set('HOT/alpha/b.js', Buffer.from('BBBB'));
  await assert.rejects(stageFiles(root, plan.journal, archive), { code: 'ERR_DIGEST_MISMATCH' });
  assert.equal(existsSync(join(root, plan.journal.staging_dir)), false);
  archive.files.delete('HOT/alpha/b.js');
  await assert.rejects(stageFiles(root, plan.journal, archive), { code: 'ERR_ASSET_MISSING' });
  assert.equal(existsSync(join(root, 'HOT/alpha')), false);
});

test('a large stage is flushed by one syncfs, a small one (or a failed syncfs) file by file; the staged files are the same', async (t) => {
  const dir = tempDir(t);
  const root = newRoot(dir);
  const files: Record<string, string> = { 'HOT/scripts/run.js': '#!/usr/bin/env node\n' };
  for (let i = 0; i < 70; i += 1) files[`HOT/beta/m${String(i).padStart(2, '0')}/f.js`] = `export const n = ${i};\n`;
  const path = await buildArchive(dir, { id: 'PKG-BETA-001', files });
  const archive = await readPackageArchive(path);
  const registry = OwnershipRegistry.open(root);
  t.after(() => registry.close());
  const plan = planInstall(
    archive,
    { root, receipts: new Map(), registry, trusted: [] },
    {
      mode: 'install',
      dev: true,
      platform: currentPlatform(),
      archivePath: path,
      txnId: 'TXN-00000000beef',
      now: new Date(0).toISOString(),
    },
  );
  if (plan.kind !== 'install') throw new Error(plan.kind);
  const staged = join(root, plan.journal.staging_dir);
  const snapshot = (): string[] =>
    Object.keys(files).map(
      (p) => `${p} ${statSync(join(staged, p)).mode & 0o777} ${readFileSync(join(staged, p), 'utf8')}`,
    );
  const calls: string[] = [];
  const spy =
    (answer: boolean) =>
    (p: string): boolean => {
      calls.push(p);
      return answer;
    };

  await stageFiles(root, plan.journal, archive, { syncfs: spy(true) });
  assert.deepEqual(calls, [staged], 'one syncfs for the whole stage');
  const viaSyncfs = snapshot();
  assert.ok(
    viaSyncfs.includes('HOT/scripts/run.js 493 #!/usr/bin/env node\n') &&
      viaSyncfs.includes('HOT/beta/m07/f.js 420 export const n = 7;\n'),
  );
  for (const [options, expectedCalls] of [
    [{ syncfs: spy(false) }, 2],
    [{ syncfs: spy(true), syncfsFrom: null }, 2],
    [{ syncfs: spy(true), syncfsFrom: 100 }, 2],
    [{}, 2],
  ] as const) {
    rmSync(staged, { recursive: true });
    await stageFiles(root, plan.journal, archive, options);
    assert.deepEqual(snapshot(), viaSyncfs);
    assert.equal(calls.length, expectedCalls, JSON.stringify(options));
  }
  const coreutils = ['/usr/bin/sync', '/bin/sync'].some((tool) => existsSync(tool));
  assert.equal(
    syncFilesystem(staged),
    process.platform === 'linux' && coreutils,
    'the real syncfs works where coreutils is',
  );
  assert.equal(syncFilesystem(join(dir, 'no', 'such', 'dir')), false);

  rmSync(staged, { recursive: true });
  archive.files.set('HOT/beta/m40/f.js', Buffer.from('export const n = 99;\n'));
  await assert.rejects(stageFiles(root, plan.journal, archive, { syncfs: spy(true) }), { code: 'ERR_DIGEST_MISMATCH' });
  assert.equal(existsSync(staged), false, 'a mismatch half-way leaves no stage');
  assert.equal(calls.length, 2, 'and never flushes');
});

test('hand-edited state is refused with a coded error, not trusted', (t) => {
  const dir = tempDir(t);
  const root = newRoot(dir);
  writeFileSync(join(root, 'HOT/registries/journal.json'), '{not json');
  assert.throws(() => readJournal(root), { code: 'ERR_JOURNAL_INVALID' });
  const receiptDir = join(root, 'HOT/installed/PKG-ALPHA-001');
  mkdirSync(receiptDir, { recursive: true });
  for (const [content, why] of [
    ['nope', /is not JSON/],
    ['[]', /is not an object/],
    ['{"receipt_version":1}', /has no string package_id/],
  ] as const) {
    writeFileSync(join(receiptDir, 'receipt.json'), content);
    assert.throws(
      () => readReceipt(root, 'PKG-ALPHA-001'),
      (e: { code?: string; message?: string }) => e.code === 'ERR_RECEIPT_INVALID' && why.test(e.message ?? ''),
    );
  }
  assert.throws(() => OwnershipRegistry.open(join(dir, 'elsewhere')), { code: 'ERR_ROOT_NOT_A_ROOT' });
});
