// Root state and module-resolution files named in another case. On a case-insensitive filesystem (ext4
// casefold, vfat, CIFS, macOS) HOT/Installed/ is HOT/installed/ and Node finds Package.json as
// package.json: the checks compare case-folded, as the duplicate-member check already does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { installOne } from '../../../kernel/installer/install.js';
import { isReservedPath, validateManifest } from '../../../kernel/manifest/index.js';
import { buildArchive, ledgerEntries, manifestFor, newRoot, session, snapshot, tempDir } from './helpers.js';

test('the manifest refuses reserved root state in any case', () => {
  for (const path of [
    'HOT/Installed/PKG-AAA-001/receipt.json',
    'HOT/LEDGER/ledger.sqlite',
    'HOT/registries/Trust.json',
  ]) {
    assert.equal(isReservedPath(path), true, path);
    assert.throws(
      () => validateManifest(manifestFor({ id: 'PKG-CASE-001', files: { [path]: 'x' } })),
      (error: { code?: string; details?: { errors: { pointer: string; message: string }[] } }) => {
        assert.equal(error.code, 'ERR_MANIFEST_INVALID', path);
        assert.deepEqual(
          error.details?.errors.map((e) => e.pointer),
          ['/assets/0/path'],
          path,
        );
        assert.match(error.details?.errors[0]?.message ?? '', /root state/, path);
        return true;
      },
    );
  }
  assert.equal(isReservedPath('HOT/installedx/a.js'), false);
  assert.equal(isReservedPath('HOT/kernel/installed/a.js'), false);
});

test('the installer refuses state directories and resolution files in another case; the root is unchanged', async (t) => {
  const dir = tempDir(t);
  const root = newRoot(dir);
  const s = await session(t, root);
  const cases: [string, string][] = [
    ['HOT/Registries/ownership.json', 'ERR_ASSET_PATH_NOT_GOVERNED'],
    ['HOT/kernel/Package.json', 'ERR_ASSET_MODULE_RESOLUTION'],
    ['HOT/kernel/NODE_MODULES/yargs/index.js', 'ERR_ASSET_MODULE_RESOLUTION'],
  ];
  for (const [path, code] of cases) {
    const before = snapshot(root);
    const count = ledgerEntries(root).length;
    const archive = await buildArchive(dir, { id: 'PKG-CASE-001', files: { 'HOT/case/ok.js': 'ok', [path]: 'x' } });
    await assert.rejects(
      installOne(s, { archivePath: archive, mode: 'install', dev: true }),
      (error: { code?: string; details?: { paths?: string[] } }) => {
        assert.equal(error.code, code, path);
        assert.deepEqual(error.details?.paths, [path], path);
        return true;
      },
    );
    assert.deepEqual(snapshot(root), before, `${path}: the root changed`);
    assert.equal(ledgerEntries(root).length, count + 1, path);
  }
  // The same names in their ordinary places, spelled differently, still install.
  const fine = await buildArchive(dir, { id: 'PKG-CASE-001', files: { 'HOT/case/Installed.js': 'ok' } });
  await installOne(s, { archivePath: fine, mode: 'install', dev: true });
});
