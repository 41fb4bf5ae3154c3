import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { integrityOf } from '../../../kernel/archive/integrity.js';
import { installPackages } from '../../../kernel/installer/batch.js';
import { installOne } from '../../../kernel/installer/install.js';
import { verifyRoot } from '../../../kernel/installer/verify.js';
import { OwnershipRegistry } from '../../../kernel/registry/ownership.js';
import { readReceipt } from '../../../kernel/registry/receipt.js';
import { buildArchive, codeOf, keyPair, ledgerEntries, newRoot, session, snapshot, tempDir } from './helpers.js';

const FIXED = Date.parse('2026-03-04T05:06:07.000Z');

test('install places verified files, writes the receipt with its ledger anchor, registers ownership', async (t) => {
  const dir = tempDir(t);
  const keys = keyPair();
  const root = newRoot(dir, [keys.publicPem]);
  const archive = await buildArchive(dir, {
    id: 'PKG-ALPHA-001',
    version: '1.0.0',
    key: keys.privatePem,
    files: { 'HOT/alpha/a.js': 'export const a = 1;\n', 'HOT/scripts/alpha.js': '#!/usr/bin/env node\n' },
  });
  const s = await session(t, root);
  const outcome = await installOne(s, { archivePath: archive, mode: 'install' }, { clock: () => FIXED });
  assert.equal(outcome.action, 'installed');
  assert.equal(outcome.files, 2);
  assert.equal(readFileSync(join(root, 'HOT/alpha/a.js'), 'utf8'), 'export const a = 1;\n');
  assert.equal(statSync(join(root, 'HOT/scripts/alpha.js')).mode & 0o777, 0o755);
  assert.equal(statSync(join(root, 'HOT/alpha/a.js')).mode & 0o777, 0o644);

  const receipt = readReceipt(root, 'PKG-ALPHA-001');
  assert.ok(receipt);
  assert.equal(receipt.version, '1.0.0');
  assert.equal(receipt.archive_integrity, integrityOf(readFileSync(archive)));
  assert.equal(receipt.installed_at, '2026-03-04T05:06:07.000Z');
  assert.deepEqual(receipt.signature, { status: 'valid', key_id: receipt.signature.key_id, dev_waiver: false });
  assert.match(receipt.signature.key_id ?? '', /^ed25519:[0-9a-f]{16}$/);
  assert.deepEqual(
    receipt.files.map((f) => f.path),
    ['HOT/alpha/a.js', 'HOT/scripts/alpha.js'],
  );
  assert.ok(existsSync(join(root, 'HOT/installed/PKG-ALPHA-001/manifest.json')));
  assert.ok(existsSync(join(root, 'HOT/installed/PKG-ALPHA-001/signature.json')));

  const entries = ledgerEntries(root);
  const installed = entries.at(-1)!;
  assert.equal(installed.event_type, 'INSTALLED');
  assert.equal(installed.submission_id, 'PKG-ALPHA-001');
  assert.equal(installed.metadata.archive_integrity, receipt.archive_integrity);
  assert.equal(installed.metadata.txn_id, receipt.txn_id);
  assert.deepEqual(receipt.ledger_anchor, { seq: entries.length, hash: installed.entry_hash });
  assert.equal(receipt.ledger_entry_id, installed.id);

  const registry = OwnershipRegistry.open(root);
  t.after(() => registry.close());
  assert.equal(registry.ownerOf('HOT/alpha/a.js'), 'PKG-ALPHA-001');
  assert.equal(registry.filesOf('PKG-ALPHA-001').length, 2);
  assert.deepEqual(verifyRoot(root).findings, []);
  assert.deepEqual(readdirSync(join(root, 'HOT/registries/txn')), [], 'no staging area is left behind');
});

test('re-installing the same version is a no-op that says so and writes nothing', async (t) => {
  const dir = tempDir(t);
  const root = newRoot(dir);
  const archive = await buildArchive(dir, { id: 'PKG-ALPHA-001', files: { 'HOT/alpha/a.js': 'a' } });
  const s = await session(t, root);
  await installOne(s, { archivePath: archive, mode: 'install', dev: true });
  const before = snapshot(root);
  const entries = ledgerEntries(root).length;
  const again = await installOne(s, { archivePath: archive, mode: 'install', dev: true });
  assert.equal(again.action, 'unchanged');
  assert.deepEqual(snapshot(root), before);
  assert.equal(ledgerEntries(root).length, entries);
});

test('upgrade replaces files, removes what the new version no longer ships, records PACKAGE_UPGRADED', async (t) => {
  const dir = tempDir(t);
  const root = newRoot(dir);
  const v1 = await buildArchive(dir, {
    id: 'PKG-ALPHA-001',
    version: '1.0.0',
    files: { 'HOT/alpha/a.js': 'a1', 'HOT/alpha/old/gone.js': 'bye' },
  });
  const v2 = await buildArchive(dir, {
    id: 'PKG-ALPHA-001',
    version: '1.1.0',
    files: { 'HOT/alpha/a.js': 'a2', 'HOT/alpha/new.js': 'hi' },
  });
  const s = await session(t, root);
  await installOne(s, { archivePath: v1, mode: 'install', dev: true });
  await assert.rejects(installOne(s, { archivePath: v2, mode: 'install', dev: true }), {
    code: 'ERR_ALREADY_INSTALLED',
  });
  const outcome = await installOne(s, { archivePath: v2, mode: 'upgrade', dev: true });
  assert.equal(outcome.action, 'upgraded');
  assert.equal(outcome.previous_version, '1.0.0');
  assert.equal(outcome.removed, 1);
  assert.equal(readFileSync(join(root, 'HOT/alpha/a.js'), 'utf8'), 'a2');
  assert.equal(existsSync(join(root, 'HOT/alpha/old/gone.js')), false);
  assert.equal(existsSync(join(root, 'HOT/alpha/old')), false, 'directories left empty are pruned');
  const receipt = readReceipt(root, 'PKG-ALPHA-001')!;
  assert.equal(receipt.version, '1.1.0');
  assert.equal(receipt.previous_version, '1.0.0');
  const last = ledgerEntries(root).at(-1)!;
  assert.equal(last.event_type, 'PACKAGE_UPGRADED');
  assert.equal(last.metadata.from_version, '1.0.0');
  assert.equal(last.metadata.to_version, '1.1.0');
  assert.equal(receipt.ledger_entry_id, last.id);
  assert.deepEqual(verifyRoot(root).findings, []);
});

test('a downgrade is refused unless allowed', async (t) => {
  const dir = tempDir(t);
  const root = newRoot(dir);
  const v2 = await buildArchive(dir, { id: 'PKG-ALPHA-001', version: '2.0.0', files: { 'HOT/alpha/a.js': 'a2' } });
  const v1 = await buildArchive(dir, { id: 'PKG-ALPHA-001', version: '1.0.0', files: { 'HOT/alpha/a.js': 'a1' } });
  const s = await session(t, root);
  await installOne(s, { archivePath: v2, mode: 'install', dev: true });
  await assert.rejects(installOne(s, { archivePath: v1, mode: 'upgrade', dev: true }), { code: 'ERR_DOWNGRADE' });
  const outcome = await installOne(s, { archivePath: v1, mode: 'upgrade', dev: true, allowDowngrade: true });
  assert.equal(outcome.version, '1.0.0');
  assert.equal(readFileSync(join(root, 'HOT/alpha/a.js'), 'utf8'), 'a1');
});

test("replaces transfers ownership and updates the old owner's receipt", async (t) => {
  const dir = tempDir(t);
  const root = newRoot(dir);
  const a = await buildArchive(dir, {
    id: 'PKG-ALPHA-001',
    files: { 'HOT/shared/x.js': 'from alpha', 'HOT/alpha/a.js': 'a' },
  });
  const b = await buildArchive(dir, {
    id: 'PKG-BETA-001',
    replaces: ['PKG-ALPHA-001'],
    files: { 'HOT/shared/x.js': 'from beta' },
  });
  const s = await session(t, root);
  await installOne(s, { archivePath: a, mode: 'install', dev: true });
  const outcome = await installOne(s, { archivePath: b, mode: 'install', dev: true });
  assert.equal(outcome.transfers, 1);
  assert.equal(readFileSync(join(root, 'HOT/shared/x.js'), 'utf8'), 'from beta');
  const alpha = readReceipt(root, 'PKG-ALPHA-001')!;
  assert.deepEqual(
    alpha.files.map((f) => f.path),
    ['HOT/alpha/a.js'],
  );
  assert.deepEqual(
    alpha.transferred_out.map((x) => [x.path, x.to_package]),
    [['HOT/shared/x.js', 'PKG-BETA-001']],
  );
  const registry = OwnershipRegistry.open(root);
  t.after(() => registry.close());
  assert.equal(registry.ownerOf('HOT/shared/x.js'), 'PKG-BETA-001');
  assert.deepEqual(
    registry.transfers().map((x) => [x.path, x.from_package, x.to_package]),
    [['HOT/shared/x.js', 'PKG-ALPHA-001', 'PKG-BETA-001']],
  );
  assert.deepEqual(verifyRoot(root).findings, []);
});

test('a --dev waiver is recorded in the receipt and the ledger', async (t) => {
  const dir = tempDir(t);
  const root = newRoot(dir);
  const archive = await buildArchive(dir, { id: 'PKG-ALPHA-001', files: { 'HOT/alpha/a.js': 'a' } });
  const s = await session(t, root);
  await installOne(s, { archivePath: archive, mode: 'install', dev: true });
  assert.deepEqual(readReceipt(root, 'PKG-ALPHA-001')!.signature, {
    status: 'unsigned',
    key_id: null,
    dev_waiver: true,
  });
  const entry = ledgerEntries(root).at(-1)!;
  assert.equal(entry.metadata.dev_waiver, true);
  assert.equal(entry.metadata.signature_status, 'unsigned');
});

test('a batch reads the next archive ahead, yet a damaged one is refused at its turn: earlier packages stay, it leaves nothing', async (t) => {
  const dir = tempDir(t);
  const root = newRoot(dir);
  const first = await buildArchive(dir, {
    id: 'PKG-FIRST-001',
    version: '1.0.0',
    files: { 'HOT/first/a.js': 'export const a = 1;\n' },
  });
  const damaged = join(dir, 'PKG-DAMAGED-001-1.0.0.tar.gz');
  writeFileSync(damaged, 'not a package archive');
  const third = await buildArchive(dir, {
    id: 'PKG-THIRD-001',
    version: '1.0.0',
    files: { 'HOT/third/c.js': 'export const c = 3;\n' },
  });
  const installed: string[] = [];
  await assert.rejects(
    installPackages(
      root,
      [first, damaged, third].map((archivePath) => ({ archivePath, mode: 'install' as const, dev: true })),
      {},
      ({ outcome }) => {
        installed.push(outcome.package_id);
      },
    ),
    (error: unknown) => codeOf(error) === 'ERR_ARCHIVE_CORRUPT' && /package 2 of 3/.test((error as Error).message),
  );
  assert.deepEqual(installed, ['PKG-FIRST-001']);
  assert.ok(readReceipt(root, 'PKG-FIRST-001'));
  assert.equal(readReceipt(root, 'PKG-THIRD-001'), null);
  assert.equal(existsSync(join(root, 'HOT/third')), false);
  const last = ledgerEntries(root).at(-1)!;
  assert.deepEqual(
    [last.event_type, last.submission_id, last.metadata.code],
    ['INSTALL_FAILED', 'PKG-DAMAGED-001', 'ERR_ARCHIVE_CORRUPT'],
  );
  assert.deepEqual(readdirSync(join(root, 'HOT/registries/txn')), []);
});

test('an archive that is not the one pinned (bootstrap.json) is refused as it is read; the pinned one installs', async (t) => {
  const dir = tempDir(t);
  const root = newRoot(dir);
  const pinned = await buildArchive(dir, { id: 'PKG-ALPHA-001', files: { 'HOT/alpha/a.js': 'a' } });
  const swapped = await buildArchive(dir, { id: 'PKG-ALPHA-001', files: { 'HOT/alpha/a.js': 'b' } });
  const expected = integrityOf(readFileSync(pinned));
  const s = await session(t, root);
  const before = snapshot(root);
  await assert.rejects(
    installOne(s, { archivePath: swapped, mode: 'install', dev: true, integrity: expected }),
    (error: Error & { code?: string; details?: Record<string, unknown> }) =>
      error.code === 'ERR_INTEGRITY_MISMATCH' &&
      error.details?.expected === expected &&
      error.details?.actual === integrityOf(readFileSync(swapped)),
  );
  assert.deepEqual(snapshot(root), before);
  const last = ledgerEntries(root).at(-1)!;
  assert.deepEqual([last.event_type, last.metadata.code], ['INSTALL_FAILED', 'ERR_INTEGRITY_MISMATCH']);
  const outcome = await installOne(s, { archivePath: pinned, mode: 'install', dev: true, integrity: expected });
  assert.equal(outcome.receipt?.archive_integrity, expected);
});
