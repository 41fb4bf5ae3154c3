// An owned file replaced by hand with a directory. Uninstall and upgrade delete the receipt's files after the
// journal is written; the directory used to stop that commit half-way with Node's uncoded ERR_FS_EISDIR,
// some files already gone, and every later session's repair failed the same way. Now refused up front.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openRootSession } from '../../../kernel/installer/index.js';
import { installOne } from '../../../kernel/installer/install.js';
import { uninstallOne } from '../../../kernel/installer/uninstall.js';
import { buildArchive, newRoot, session, snapshot, tempDir } from './helpers.js';

function refusedAt(path: string) {
  return (error: { code?: string; details?: Record<string, unknown> }): boolean => {
    assert.equal(error.code, 'ERR_PATH_CONFLICT', String(error));
    assert.deepEqual(error.details, { path });
    return true;
  };
}

for (const op of ['uninstall', 'upgrade'] as const) {
  test(`${op}: an owned file turned into a directory is refused before anything is removed; the root stays usable`, async (t) => {
    const dir = tempDir(t);
    const root = newRoot(dir);
    const s = await session(t, root);
    const v1 = await buildArchive(dir, { id: 'PKG-AAA-001', files: { 'HOT/aaa/a.js': 'a', 'HOT/aaa/b.js': 'b' } });
    await installOne(s, { archivePath: v1, mode: 'install', dev: true });
    rmSync(join(root, 'HOT/aaa/b.js'));
    mkdirSync(join(root, 'HOT/aaa/b.js'));
    writeFileSync(join(root, 'HOT/aaa/b.js/keep.txt'), 'user data');
    const before = snapshot(root);
    if (op === 'uninstall') await assert.rejects(uninstallOne(s, 'PKG-AAA-001'), refusedAt('HOT/aaa/b.js'));
    else {
      const v2 = await buildArchive(dir, { id: 'PKG-AAA-001', version: '1.1.0', files: { 'HOT/aaa/a.js': 'a2' } });
      await assert.rejects(installOne(s, { archivePath: v2, mode: 'upgrade', dev: true }), refusedAt('HOT/aaa/b.js'));
    }
    const after = snapshot(root);
    for (const path of ['HOT/aaa/a.js', 'HOT/aaa/b.js/keep.txt', 'HOT/installed/PKG-AAA-001/receipt.json'])
      assert.equal(after[path], before[path], path);
    assert.equal(existsSync(join(root, 'HOT/registries/journal.json')), false, 'a journal was left behind');
    assert.equal(readFileSync(join(root, 'HOT/aaa/b.js/keep.txt'), 'utf8'), 'user data');
    s.close();
    // The next session opens (no half-done commit to repair), and once the directory is moved aside it works.
    const next = await openRootSession(root);
    t.after(() => next.close());
    rmSync(join(root, 'HOT/aaa/b.js'), { recursive: true });
    await uninstallOne(next, 'PKG-AAA-001');
    assert.equal(existsSync(join(root, 'HOT/aaa')), false);
  });
}
