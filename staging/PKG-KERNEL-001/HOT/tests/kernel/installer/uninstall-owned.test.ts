// Uninstall and upgrade remove the files a receipt lists. A receipt edited to list another package's file
// must not become a way to delete that file: the ownership registry is asked first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { installOne } from '../../../kernel/installer/install.js';
import { uninstallOne } from '../../../kernel/installer/uninstall.js';
import { openRootSession, type RootSession } from '../../../kernel/installer/index.js';
import { buildArchive, newRoot, session, snapshot, tempDir, type TestContext } from './helpers.js';

async function twoPackagesOneLying(t: TestContext): Promise<{ dir: string; root: string; s: RootSession }> {
  const dir = tempDir(t);
  const root = newRoot(dir);
  const first = await session(t, root);
  const a = await buildArchive(dir, { id: 'PKG-AAA-001', files: { 'HOT/aaa/a.js': 'a' } });
  const b = await buildArchive(dir, { id: 'PKG-BBB-001', files: { 'HOT/bbb/b.js': 'b' } });
  await installOne(first, { archivePath: a, mode: 'install', dev: true });
  await installOne(first, { archivePath: b, mode: 'install', dev: true });
  first.close();
  // B's receipt now also claims A's file, digest and size copied from A's receipt.
  const read = (id: string) => JSON.parse(readFileSync(join(root, `HOT/installed/${id}/receipt.json`), 'utf8'));
  const receipt = read('PKG-BBB-001');
  receipt.files.push(read('PKG-AAA-001').files[0]);
  writeFileSync(join(root, 'HOT/installed/PKG-BBB-001/receipt.json'), JSON.stringify(receipt, null, 2));
  const s = await openRootSession(root);
  t.after(() => s.close());
  return { dir, root, s };
}

function refusedForA(error: { code?: string; details?: Record<string, unknown> }): boolean {
  assert.equal(error.code, 'ERR_RECEIPT_INVALID');
  assert.deepEqual(error.details, { package_id: 'PKG-BBB-001', path: 'HOT/aaa/a.js', owner: 'PKG-AAA-001' });
  return true;
}

test("uninstall refuses a receipt that lists another package's file; nothing is removed", async (t) => {
  const { root, s } = await twoPackagesOneLying(t);
  const before = snapshot(root);
  assert.equal(before['HOT/aaa/a.js'] !== undefined, true, 'the fixture lost A');
  await assert.rejects(uninstallOne(s, 'PKG-BBB-001'), refusedForA);
  assert.deepEqual(snapshot(root), before);
  assert.equal(readFileSync(join(root, 'HOT/aaa/a.js'), 'utf8'), 'a');
  assert.equal(s.registry.ownerOf('HOT/aaa/a.js'), 'PKG-AAA-001');
  // A itself still uninstalls: its own receipt is honest.
  await uninstallOne(s, 'PKG-AAA-001');
});

test("an upgrade that would drop a file the old receipt falsely lists is refused; A's file stays", async (t) => {
  const { dir, root, s } = await twoPackagesOneLying(t);
  const before = snapshot(root);
  const upgrade = await buildArchive(dir, { id: 'PKG-BBB-001', version: '1.1.0', files: { 'HOT/bbb/b.js': 'b2' } });
  await assert.rejects(installOne(s, { archivePath: upgrade, mode: 'upgrade', dev: true }), refusedForA);
  const after = snapshot(root);
  assert.equal(after['HOT/aaa/a.js'], before['HOT/aaa/a.js']);
  assert.equal(after['HOT/bbb/b.js'], before['HOT/bbb/b.js']);
  assert.equal(s.registry.ownerOf('HOT/aaa/a.js'), 'PKG-AAA-001');
});
