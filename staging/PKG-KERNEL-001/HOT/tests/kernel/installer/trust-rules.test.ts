// Install-time trust rules: `replaces` needs the publisher's authority. Every refusal leaves the root
// byte-identical but for its INSTALL_FAILED record.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { installOne, type InstallRequest } from '../../../kernel/installer/install.js';
import type { RootSession } from '../../../kernel/installer/session.js';
import { trustStorePath } from '../../../kernel/signing/index.js';
import {
  buildArchive,
  keyPair,
  ledgerEntries,
  newRoot,
  session,
  snapshot,
  tempDir,
  type PkgSpec,
  type TestContext,
} from './helpers.js';

async function expectRefusal(root: string, s: RootSession, request: InstallRequest, code: string): Promise<void> {
  const before = snapshot(root);
  const entries = ledgerEntries(root).length;
  await assert.rejects(installOne(s, request), (error: { code?: string; message?: string }) => {
    assert.equal(error.code, code, error.message);
    return true;
  });
  assert.deepEqual(snapshot(root), before, `${code}: the root changed`);
  const after = ledgerEntries(root);
  assert.equal(after.length, entries + 1);
  assert.equal(after.at(-1)?.metadata.code, code);
}

const publisherA = keyPair();
const publisherB = keyPair();

async function signedRoot(
  t: TestContext,
  owner: Partial<PkgSpec> = {},
): Promise<{ dir: string; root: string; s: RootSession }> {
  const dir = tempDir(t);
  const root = newRoot(dir, [publisherA.publicPem, publisherB.publicPem]);
  const s = await session(t, root);
  const alpha = await buildArchive(dir, {
    id: 'PKG-ALPHA-001',
    layer: 1,
    key: publisherA.privatePem,
    files: { 'HOT/alpha/core.js': 'alpha core' },
    ...owner,
  });
  await installOne(s, { archivePath: alpha, mode: 'install' });
  return { dir, root, s };
}

const taker = (key: string | undefined, layer: 0 | 1 | 2 | 3 = 1): PkgSpec => ({
  id: 'PKG-TAKER-001',
  layer,
  replaces: ['PKG-ALPHA-001'],
  files: { 'HOT/alpha/core.js': 'taken over' },
  ...(key ? { key } : {}),
});

test("replaces: another trusted publisher cannot take over a package's files, with or without --dev", async (t) => {
  const { dir, root, s } = await signedRoot(t);
  const archive = await buildArchive(dir, taker(publisherB.privatePem));
  await expectRefusal(root, s, { archivePath: archive, mode: 'install' }, 'ERR_REPLACE_UNAUTHORIZED');
  await expectRefusal(root, s, { archivePath: archive, mode: 'install', dev: true }, 'ERR_REPLACE_UNAUTHORIZED');
  const unsigned = await buildArchive(dir, taker(undefined));
  await expectRefusal(root, s, { archivePath: unsigned, mode: 'install', dev: true }, 'ERR_REPLACE_UNAUTHORIZED');
  // A package signed with the right key id but a signature that does not verify is not that publisher.
  const forged = await buildArchive(dir, {
    ...taker(publisherA.privatePem),
    signThenTamper: (m) => {
      m.description = 'edited after signing';
    },
  });
  await expectRefusal(root, s, { archivePath: forged, mode: 'install', dev: true }, 'ERR_REPLACE_UNAUTHORIZED');
  assert.equal(readFileSync(join(root, 'HOT/alpha/core.js'), 'utf8'), 'alpha core');
});

test("replaces: the same publisher key may take over its own package's files", async (t) => {
  const { dir, root, s } = await signedRoot(t);
  const outcome = await installOne(s, {
    archivePath: await buildArchive(dir, taker(publisherA.privatePem)),
    mode: 'install',
  });
  assert.equal(outcome.transfers, 1);
  assert.equal(readFileSync(join(root, 'HOT/alpha/core.js'), 'utf8'), 'taken over');
});

test('replaces: a key the trust store allows to replace the package may take it over (may_replace)', async (t) => {
  const { dir, root, s } = await signedRoot(t);
  const store = JSON.parse(readFileSync(trustStorePath(root), 'utf8')) as { keys: Array<{ may_replace?: string[] }> };
  (store.keys[1] as { may_replace?: string[] }).may_replace = ['PKG-OTHER-001'];
  writeFileSync(trustStorePath(root), JSON.stringify(store));
  const archive = await buildArchive(dir, taker(publisherB.privatePem));
  await expectRefusal(root, s, { archivePath: archive, mode: 'install' }, 'ERR_REPLACE_UNAUTHORIZED');
  (store.keys[1] as { may_replace?: string[] }).may_replace = ['PKG-ALPHA-001'];
  writeFileSync(trustStorePath(root), JSON.stringify(store));
  const outcome = await installOne(s, { archivePath: archive, mode: 'install' });
  assert.equal(outcome.transfers, 1);
});

test('replaces: never files of a package in a lower layer, even for the same publisher', async (t) => {
  const { dir, root, s } = await signedRoot(t, { layer: 0 });
  const archive = await buildArchive(dir, taker(publisherA.privatePem, 1));
  await expectRefusal(root, s, { archivePath: archive, mode: 'install' }, 'ERR_REPLACE_LOWER_LAYER');
  await expectRefusal(root, s, { archivePath: archive, mode: 'install', dev: true }, 'ERR_REPLACE_LOWER_LAYER');
});

test('replaces: unsigned packages installed with --dev may still replace each other (neither has a publisher)', async (t) => {
  const dir = tempDir(t);
  const root = newRoot(dir);
  const s = await session(t, root);
  await installOne(s, {
    archivePath: await buildArchive(dir, { id: 'PKG-ALPHA-001', files: { 'HOT/alpha/core.js': 'alpha core' } }),
    mode: 'install',
    dev: true,
  });
  const outcome = await installOne(s, {
    archivePath: await buildArchive(dir, taker(undefined)),
    mode: 'install',
    dev: true,
  });
  assert.equal(outcome.transfers, 1);
});

test("upgrade: another publisher's (or an unsigned --dev) version cannot replace a signed package; its own publisher can", async (t) => {
  const { dir, root, s } = await signedRoot(t);
  const v2 = (key?: string): PkgSpec => ({
    id: 'PKG-ALPHA-001',
    version: '2.0.0',
    layer: 1,
    files: { 'HOT/alpha/core.js': 'alpha v2' },
    ...(key ? { key } : {}),
  });
  await expectRefusal(
    root,
    s,
    { archivePath: await buildArchive(dir, v2(publisherB.privatePem)), mode: 'upgrade' },
    'ERR_REPLACE_UNAUTHORIZED',
  );
  await expectRefusal(
    root,
    s,
    { archivePath: await buildArchive(dir, v2()), mode: 'upgrade', dev: true },
    'ERR_REPLACE_UNAUTHORIZED',
  );
  const outcome = await installOne(s, {
    archivePath: await buildArchive(dir, v2(publisherA.privatePem)),
    mode: 'upgrade',
  });
  assert.equal(outcome.action, 'upgraded');
});

test("refused: package.json or node_modules shipped outside the runtime's tree (and genesis's HOT/package.json)", async (t) => {
  const { dir, root, s } = await signedRoot(t);
  const cases: Array<[string, Record<string, string>]> = [
    ['PKG-EVIL-001', { 'HOT/evil/package.json': '{"type":"commonjs"}', 'HOT/evil/a.js': 'a' }],
    ['PKG-EVIL-001', { 'HOT/evil/node_modules/better-sqlite3/index.js': 'module.exports = {}' }],
    ['PKG-EVIL-001', { 'HOT/node_modules/yargs/index.js': 'export default {}' }],
    ['PKG-EVIL-001', { 'HOT/package.json': '{"imports":{}}' }],
    ['PKG-EVIL-001', { 'HOT/kernel/node_modules/x.js': 'x' }],
    // The exempt ids do not exempt each other's paths.
    ['PKG-RUNTIME-001', { 'HOT/package.json': '{}' }],
    ['PKG-GENESIS-001', { 'HOT/node_modules/x/index.js': 'x' }],
  ];
  for (const [id, files] of cases) {
    const archive = await buildArchive(dir, { id, layer: 1, key: publisherA.privatePem, files });
    await expectRefusal(root, s, { archivePath: archive, mode: 'install', dev: true }, 'ERR_ASSET_MODULE_RESOLUTION');
  }
  // A name that merely contains the words is an ordinary file.
  const fine = await buildArchive(dir, {
    id: 'PKG-FINE-001',
    layer: 1,
    key: publisherA.privatePem,
    files: { 'HOT/fine/package.json.md': 'doc', 'HOT/fine/node_modules.txt': 'doc' },
  });
  assert.equal((await installOne(s, { archivePath: fine, mode: 'install' })).action, 'installed');
});

test('refused: an upgrade that would close a dependency cycle; an acyclic one still installs', async (t) => {
  const { dir, root, s } = await signedRoot(t);
  const key = publisherA.privatePem;
  await installOne(s, {
    archivePath: await buildArchive(dir, {
      id: 'PKG-BETA-001',
      layer: 1,
      key,
      deps: { 'PKG-ALPHA-001': '^1.0.0' },
      files: { 'HOT/beta/b.js': 'b' },
    }),
    mode: 'install',
  });
  await installOne(s, {
    archivePath: await buildArchive(dir, {
      id: 'PKG-GAMMA-001',
      layer: 1,
      key,
      deps: { 'PKG-BETA-001': '^1.0.0' },
      files: { 'HOT/gamma/c.js': 'c' },
    }),
    mode: 'install',
  });
  const cyclic = await buildArchive(dir, {
    id: 'PKG-ALPHA-001',
    version: '1.1.0',
    layer: 1,
    key,
    deps: { 'PKG-GAMMA-001': '^1.0.0' },
    files: { 'HOT/alpha/core.js': 'alpha core' },
  });
  await expectRefusal(root, s, { archivePath: cyclic, mode: 'upgrade' }, 'ERR_PACKAGE_CYCLE');
  const acyclic = await buildArchive(dir, {
    id: 'PKG-GAMMA-001',
    version: '1.1.0',
    layer: 1,
    key,
    deps: { 'PKG-ALPHA-001': '^1.0.0', 'PKG-BETA-001': '^1.0.0' },
    files: { 'HOT/gamma/c.js': 'c' },
  });
  assert.equal((await installOne(s, { archivePath: acyclic, mode: 'upgrade' })).action, 'upgraded');
});
