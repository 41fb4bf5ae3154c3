// A path that is a file in one place and a directory on the way to another file. Within one manifest it
// is refused when the manifest is read (coded, with the offending paths), not by a raw EEXIST half-way
// through staging; across packages the target check refuses it. Either way the root is left untouched.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { installOne } from '../../../kernel/installer/install.js';
import { validateManifest } from '../../../kernel/manifest/index.js';
import { buildArchive, ledgerEntries, manifestFor, newRoot, session, snapshot, tempDir } from './helpers.js';

const CLASHES: [string, Record<string, string>, string][] = [
  ['file first', { 'HOT/clash/a.js': 'a', 'HOT/clash/a.js/b.js': 'b' }, 'HOT/clash/a.js/b.js'],
  ['file last', { 'HOT/clash/a.js/b.js': 'b', 'HOT/clash/a.js': 'a' }, 'HOT/clash/a.js/b.js'],
  ['deeper, case variant', { 'HOT/clash/A.js': 'a', 'HOT/clash/a.js/x/b.js': 'b' }, 'HOT/clash/a.js/x/b.js'],
];

test('the manifest validator refuses an asset beneath another asset, naming both, pointer on the deeper one', () => {
  for (const [label, files, deeper] of CLASHES) {
    const m = manifestFor({ id: 'PKG-CLASH-001', files });
    assert.throws(
      () => validateManifest(m),
      (error: { code?: string; details?: { errors: { pointer: string; message: string }[] } }) => {
        assert.equal(error.code, 'ERR_MANIFEST_INVALID', label);
        const errors = error.details?.errors ?? [];
        assert.equal(errors.length, 1, `${label}: ${JSON.stringify(errors)}`);
        const index = m.assets.findIndex((a) => a.path === deeper);
        assert.equal(errors[0]?.pointer, `/assets/${index}/path`, label);
        assert.match(errors[0]?.message ?? '', /beneath/, label);
        assert.ok(errors[0]?.message.includes(JSON.stringify(deeper)), label);
        return true;
      },
      label,
    );
  }
  // Siblings sharing a name prefix are not nested.
  validateManifest(manifestFor({ id: 'PKG-CLASH-001', files: { 'HOT/clash/a.js': 'a', 'HOT/clash/a.jsx/b.js': 'b' } }));
});

test('installing such an archive is refused with ERR_MANIFEST_INVALID; nothing staged, root unchanged', async (t) => {
  const dir = tempDir(t);
  const root = newRoot(dir);
  const s = await session(t, root);
  for (const [label, files] of CLASHES) {
    const before = snapshot(root);
    const count = ledgerEntries(root).length;
    const archive = await buildArchive(dir, { id: 'PKG-CLASH-001', files });
    await assert.rejects(
      installOne(s, { archivePath: archive, mode: 'install', dev: true }),
      (error: { code?: string }) => {
        assert.equal(error.code, 'ERR_MANIFEST_INVALID', label);
        return true;
      },
      label,
    );
    assert.deepEqual(snapshot(root), before, `${label}: the root changed`);
    const after = ledgerEntries(root);
    assert.equal(after.length, count + 1, label);
    assert.equal(after.at(-1)?.event_type, 'INSTALL_FAILED', label);
  }
});

test("a package shipping a file beneath another package's file, or a file where its directory is, is refused", async (t) => {
  const dir = tempDir(t);
  const root = newRoot(dir);
  const s = await session(t, root);
  const owner = await buildArchive(dir, {
    id: 'PKG-AAA-001',
    files: { 'HOT/clash/a.js': 'a', 'HOT/clash/d/f.js': 'f' },
  });
  await installOne(s, { archivePath: owner, mode: 'install', dev: true });
  for (const [label, path] of [
    ['beneath a file', 'HOT/clash/a.js/b.js'],
    ['over a directory', 'HOT/clash/d'],
  ]) {
    const before = snapshot(root);
    const archive = await buildArchive(dir, { id: 'PKG-BBB-001', files: { [path as string]: 'b' } });
    await assert.rejects(
      installOne(s, { archivePath: archive, mode: 'install', dev: true }),
      (error: { code?: string; details?: { path?: string } }) => {
        assert.equal(error.code, 'ERR_PATH_CONFLICT', label);
        assert.equal(error.details?.path, path, label);
        return true;
      },
      label,
    );
    assert.deepEqual(snapshot(root), before, `${label}: the root changed`);
  }
});
