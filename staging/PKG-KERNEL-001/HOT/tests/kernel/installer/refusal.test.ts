// Every refusal leaves the root byte-identical; the one write it makes is the INSTALL_FAILED ledger record.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { installOne, type InstallEnv, type InstallRequest } from '../../../kernel/installer/install.js';
import type { RootSession } from '../../../kernel/installer/session.js';
import { uninstallOne } from '../../../kernel/installer/uninstall.js';
import { rawTar } from '../archive/tar-fixture.js';
import {
  buildArchive,
  keyPair,
  ledgerEntries,
  manifestFor,
  newRoot,
  session,
  snapshot,
  tempDir,
  type TestContext,
} from './helpers.js';

async function expectRefusal(
  root: string,
  s: RootSession,
  request: InstallRequest,
  code: string,
  env: InstallEnv = {},
): Promise<void> {
  const before = snapshot(root);
  const entries = ledgerEntries(root);
  await assert.rejects(installOne(s, request, env), (error: { code?: string; message?: string }) => {
    assert.equal(error.code, code, error.message);
    return true;
  });
  assert.deepEqual(snapshot(root), before, `${code}: the root changed`);
  const after = ledgerEntries(root);
  assert.deepEqual(after.slice(0, entries.length), entries, `${code}: earlier ledger entries changed`);
  assert.equal(after.length, entries.length + 1, `${code}: expected exactly one INSTALL_FAILED`);
  const failed = after.at(-1)!;
  assert.equal(failed.event_type, 'INSTALL_FAILED');
  assert.equal(failed.metadata.code, code);
}

async function rootWith(
  t: TestContext,
  installs: Parameters<typeof buildArchive>[1][],
  trust: string[] = [],
): Promise<{ dir: string; root: string; s: RootSession }> {
  const dir = tempDir(t);
  const root = newRoot(dir, trust);
  const s = await session(t, root);
  for (const spec of installs)
    await installOne(s, { archivePath: await buildArchive(dir, spec), mode: 'install', dev: true });
  return { dir, root, s };
}

const BASE = { id: 'PKG-BASE-001', version: '1.2.0', layer: 1 as const, files: { 'HOT/base/b.js': 'base' } };

test('refused: --id does not match the archive', async (t) => {
  const { dir, root, s } = await rootWith(t, []);
  const archive = await buildArchive(dir, { id: 'PKG-ALPHA-001', files: { 'HOT/alpha/a.js': 'a' } });
  await expectRefusal(
    root,
    s,
    { archivePath: archive, mode: 'install', dev: true, expectId: 'PKG-OTHER-001' },
    'ERR_PACKAGE_ID_MISMATCH',
  );
});

test('refused: a dependency that is not installed, or installed out of range', async (t) => {
  const { dir, root, s } = await rootWith(t, [BASE]);
  const missing = await buildArchive(dir, {
    id: 'PKG-ALPHA-001',
    deps: { 'PKG-NOPE-001': '^1.0.0' },
    files: { 'HOT/alpha/a.js': 'a' },
  });
  await expectRefusal(root, s, { archivePath: missing, mode: 'install', dev: true }, 'ERR_DEPENDENCY_MISSING');
  const range = await buildArchive(dir, {
    id: 'PKG-ALPHA-001',
    deps: { 'PKG-BASE-001': '^2.0.0' },
    files: { 'HOT/alpha/a.js': 'a' },
  });
  await expectRefusal(root, s, { archivePath: range, mode: 'install', dev: true }, 'ERR_DEPENDENCY_VERSION');
});

test('refused: depending on a higher layer', async (t) => {
  const { dir, root, s } = await rootWith(t, [{ ...BASE, layer: 2 }]);
  const archive = await buildArchive(dir, {
    id: 'PKG-ALPHA-001',
    layer: 1,
    deps: { 'PKG-BASE-001': '^1.0.0' },
    files: { 'HOT/alpha/a.js': 'a' },
  });
  await expectRefusal(root, s, { archivePath: archive, mode: 'install', dev: true }, 'ERR_LAYER_VIOLATION');
});

test('refused: a platform-tagged package built for another machine', async (t) => {
  const { dir, root, s } = await rootWith(t, []);
  const archive = await buildArchive(dir, {
    id: 'PKG-ALPHA-001',
    platform: { os: 'plan9', cpu: 'x64' },
    files: { 'HOT/alpha/a.js': 'a' },
  });
  await expectRefusal(root, s, { archivePath: archive, mode: 'install', dev: true }, 'ERR_PLATFORM_MISMATCH');
});

test('refused: a dependency is not permission to overwrite the files of the package it depends on', async (t) => {
  const { dir, root, s } = await rootWith(t, [BASE]);
  const archive = await buildArchive(dir, {
    id: 'PKG-ALPHA-001',
    deps: { 'PKG-BASE-001': '^1.0.0' },
    files: { 'HOT/base/b.js': 'hijacked', 'HOT/alpha/a.js': 'a' },
  });
  await expectRefusal(root, s, { archivePath: archive, mode: 'install', dev: true }, 'ERR_OWNERSHIP_CONFLICT');
});

test('refused: an unowned file already in the way', async (t) => {
  const { dir, root, s } = await rootWith(t, []);
  mkdirSync(join(root, 'HOT/alpha'), { recursive: true });
  writeFileSync(join(root, 'HOT/alpha/a.js'), 'planted');
  const archive = await buildArchive(dir, { id: 'PKG-ALPHA-001', files: { 'HOT/alpha/a.js': 'a' } });
  await expectRefusal(root, s, { archivePath: archive, mode: 'install', dev: true }, 'ERR_PATH_CONFLICT');
});

test('refused: writing through a symlinked directory already in the root; nothing lands outside', async (t) => {
  const { dir, root, s } = await rootWith(t, []);
  const outside = join(dir, 'outside');
  mkdirSync(outside);
  symlinkSync(outside, join(root, 'HOT', 'alpha'));
  const archive = await buildArchive(dir, { id: 'PKG-ALPHA-001', files: { 'HOT/alpha/a.js': 'a' } });
  await expectRefusal(root, s, { archivePath: archive, mode: 'install', dev: true }, 'ERR_ROOT_SYMLINK');
  assert.deepEqual(readdirSync(outside), []);
});

test('refused: a root whose staging directory was replaced by a symlink', async (t) => {
  const { dir, root, s } = await rootWith(t, []);
  const outside = join(dir, 'outside');
  mkdirSync(outside);
  rmSync(join(root, 'HOT/registries/txn'), { recursive: true });
  symlinkSync(outside, join(root, 'HOT/registries/txn'));
  const archive = await buildArchive(dir, { id: 'PKG-ALPHA-001', files: { 'HOT/alpha/a.js': 'a' } });
  await expectRefusal(root, s, { archivePath: archive, mode: 'install', dev: true }, 'ERR_ROOT_SYMLINK');
  assert.deepEqual(readdirSync(outside), []);
});

test('refused: files aimed at the root state (receipts, ledger, registries)', async (t) => {
  const { dir, root, s } = await rootWith(t, []);
  const registry = await buildArchive(dir, {
    id: 'PKG-ALPHA-001',
    files: { 'HOT/registries/ownership.sqlite': 'forged' },
  });
  await expectRefusal(root, s, { archivePath: registry, mode: 'install', dev: true }, 'ERR_ASSET_PATH_NOT_GOVERNED');
  const outside = await buildArchive(dir, { id: 'PKG-ALPHA-001', files: { 'bin/run.js': 'outside HOT' } });
  // The manifest validator already refuses paths outside HOT/, receipts, the ledger and the trust store.
  await expectRefusal(root, s, { archivePath: outside, mode: 'install', dev: true }, 'ERR_MANIFEST_INVALID');
  const receipt = await buildArchive(dir, {
    id: 'PKG-ALPHA-001',
    files: { 'HOT/installed/PKG-ALPHA-001/receipt.json': '{}' },
  });
  await expectRefusal(root, s, { archivePath: receipt, mode: 'install', dev: true }, 'ERR_MANIFEST_INVALID');
});

test('refused without --dev: unsigned, signed by an untrusted key, or with a signature that does not match', async (t) => {
  const trusted = keyPair();
  const stranger = keyPair();
  const { dir, root, s } = await rootWith(t, [], [trusted.publicPem]);
  const files = { 'HOT/alpha/a.js': 'a' };
  const unsigned = await buildArchive(dir, { id: 'PKG-ALPHA-001', files });
  await expectRefusal(root, s, { archivePath: unsigned, mode: 'install' }, 'ERR_SIGNATURE_MISSING');
  const untrusted = await buildArchive(dir, { id: 'PKG-ALPHA-001', files, key: stranger.privatePem });
  await expectRefusal(root, s, { archivePath: untrusted, mode: 'install' }, 'ERR_SIGNATURE_UNTRUSTED');
  // Signed, then the manifest's title edited: the signature no longer covers what is shipped.
  const forged = await buildArchive(dir, {
    id: 'PKG-ALPHA-001',
    files,
    key: trusted.privatePem,
    signThenTamper: (m) => {
      m.title = 'edited';
    },
  });
  await expectRefusal(root, s, { archivePath: forged, mode: 'install' }, 'ERR_SIGNATURE_INVALID');
});

test("refused: upgrading outside an installed dependent's range", async (t) => {
  const { dir, root, s } = await rootWith(t, [
    BASE,
    { id: 'PKG-ALPHA-001', deps: { 'PKG-BASE-001': '^1.0.0' }, files: { 'HOT/alpha/a.js': 'a' } },
  ]);
  const base2 = await buildArchive(dir, { ...BASE, version: '2.0.0' });
  await expectRefusal(root, s, { archivePath: base2, mode: 'upgrade', dev: true }, 'ERR_REVERSE_DEPENDENCY');
});

test('refused: uninstall while a dependent is installed (nothing changes, not even the ledger)', async (t) => {
  const { root, s } = await rootWith(t, [
    BASE,
    { id: 'PKG-ALPHA-001', deps: { 'PKG-BASE-001': '^1.0.0' }, files: { 'HOT/alpha/a.js': 'a' } },
  ]);
  const before = snapshot(root);
  const entries = ledgerEntries(root).length;
  await assert.rejects(uninstallOne(s, 'PKG-BASE-001'), { code: 'ERR_HAS_DEPENDENTS' });
  assert.deepEqual(snapshot(root), before);
  assert.equal(ledgerEntries(root).length, entries);
});

/** A hand-built archive: a valid manifest plus raw tar entries the packer would never write. */
function hostile(dir: string, name: string, entries: Parameters<typeof rawTar>[0]): string {
  const manifest = manifestFor({ id: 'PKG-EVIL-001', files: { 'HOT/evil/ok.js': 'ok' } });
  const path = join(dir, `PKG-EVIL-001-1.0.0-${name}.tar.gz`);
  writeFileSync(
    path,
    gzipSync(
      rawTar([
        { name: 'manifest.json', data: JSON.stringify(manifest) },
        { name: 'HOT/evil/ok.js', data: 'ok' },
        ...entries,
      ]),
    ),
  );
  return path;
}

test('refused: hostile archives (..,  absolute path, symlink, hard link, FIFO, undeclared member), nothing written anywhere', async (t) => {
  const { dir, root, s } = await rootWith(t, []);
  const cases: [string, Parameters<typeof rawTar>[0]][] = [
    ['dotdot', [{ name: 'HOT/../../escape.js', data: 'x' }]],
    ['absolute', [{ name: '/tmp/escape.js', data: 'x' }]],
    ['symlink', [{ name: 'HOT/evil/link', type: '2', linkname: '/etc/passwd' }]],
    ['hardlink', [{ name: 'HOT/evil/hard', type: '1', linkname: 'HOT/evil/ok.js' }]],
    ['fifo', [{ name: 'HOT/evil/fifo', type: '6' }]],
    ['undeclared', [{ name: 'HOT/evil/extra.js', data: 'x' }]],
  ];
  for (const [name, entries] of cases) {
    const archive = hostile(dir, name, entries);
    const before = snapshot(root);
    const entriesBefore = ledgerEntries(root).length;
    await assert.rejects(
      installOne(s, { archivePath: archive, mode: 'install', dev: true }),
      (e: { code?: string }) => typeof e.code === 'string' && e.code.startsWith('ERR_ARCHIVE'),
      name,
    );
    assert.deepEqual(snapshot(root), before, name);
    const last = ledgerEntries(root).at(-1)!;
    assert.equal(ledgerEntries(root).length, entriesBefore + 1, name);
    assert.equal(last.event_type, 'INSTALL_FAILED');
    assert.equal(last.submission_id, 'PKG-EVIL-001');
    assert.match(String(last.metadata.code), /^ERR_ARCHIVE/);
  }
  assert.deepEqual(
    readdirSync(dir).filter((n) => n.includes('escape')),
    [],
  );
});

test('a refusal whose INSTALL_FAILED record cannot be written still reports the refusal, naming both', async (t) => {
  const { dir, root, s } = await rootWith(t, []);
  const archive = await buildArchive(dir, {
    id: 'PKG-ALPHA-001',
    deps: { 'PKG-NOPE-001': '*' },
    files: { 'HOT/alpha/a.js': 'a' },
  });
  const before = snapshot(root);
  s.ledger.close();
  await assert.rejects(
    installOne(s, { archivePath: archive, mode: 'install', dev: true }),
    (e: { code?: string; message?: string; details?: Record<string, unknown> }) =>
      e.code === 'ERR_DEPENDENCY_MISSING' &&
      /INSTALL_FAILED could not be recorded/.test(e.message ?? '') &&
      typeof e.details?.ledger_error === 'string',
  );
  assert.deepEqual(snapshot(root), before);
});
