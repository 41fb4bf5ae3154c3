// A genuine interrupted commit, with a link or FIFO planted where its repair writes: the root is refused before
// the repair starts, nothing is written through (or opens) what was planted, and once it is gone the repair finishes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { lstatSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { withRootSession } from '../../../kernel/installer/session.js';
import { verifyRoot } from '../../../kernel/installer/verify.js';
import { buildArchive, newRoot, tempDir } from './helpers.js';

const installScript = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'scripts', 'install.js');

for (const planted of ['symlink', 'fifo'] as const) {
  test(`a ${planted} planted where the repair of a real interrupted install writes is refused; removed, the repair finishes`, async (t) => {
    const dir = tempDir(t);
    const root = newRoot(dir);
    const archive = await buildArchive(dir, { id: 'PKG-ALPHA-001', files: { 'HOT/alpha/a.js': 'a' } });
    const child = spawnSync(process.execPath, [installScript, '--root', root, '--dev', archive], {
      env: { ...process.env, CPLANE_TEST_CRASH_AT: 'after-journal' },
      encoding: 'utf8',
    });
    assert.equal(child.signal, 'SIGKILL', child.stderr);
    const { txn_id: txnId } = JSON.parse(readFileSync(join(root, 'HOT/registries/journal.json'), 'utf8')) as {
      txn_id: string;
    };
    const outside = join(dir, 'outside.txt');
    writeFileSync(outside, "someone else's file\n");
    // The receipt directory does not exist yet: repair creates it; plant in it first.
    const tmp = join(root, 'HOT/installed/PKG-ALPHA-001', `manifest.json.${txnId}.tmp`);
    spawnSync('mkdir', ['-p', dirname(tmp)]);
    if (planted === 'symlink') symlinkSync(outside, tmp);
    else assert.equal(spawnSync('mkfifo', [tmp]).status, 0);

    await assert.rejects(
      withRootSession(root, {}, (s) => s.repair),
      { code: planted === 'symlink' ? 'ERR_ROOT_SYMLINK' : 'ERR_ROOT_SHAPE' },
    );
    assert.equal(readFileSync(outside, 'utf8'), "someone else's file\n");
    rmSync(tmp);
    const repair = await withRootSession(root, {}, (s) => s.repair);
    assert.equal(repair.rolled_forward?.package_id, 'PKG-ALPHA-001');
    assert.equal(readFileSync(outside, 'utf8'), "someone else's file\n");
    assert.ok(lstatSync(join(root, 'HOT/installed/PKG-ALPHA-001/manifest.json')).isFile());
    assert.deepEqual(verifyRoot(root).findings, []);
  });
}
