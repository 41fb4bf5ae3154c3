// Receipts written by the installer validate against the receipt schema shipped in PKG-SCHEMAS-001.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { integrityOf } from '../../staging/PKG-KERNEL-001/HOT/kernel/archive/integrity.js';
import { packArchive } from '../../staging/PKG-KERNEL-001/HOT/kernel/archive/pack.js';
import { sha256Digest } from '../../staging/PKG-KERNEL-001/HOT/kernel/canonical.js';
import { createRoot, installOne, withRootSession } from '../../staging/PKG-KERNEL-001/HOT/kernel/installer/index.js';
import { readReceipt } from '../../staging/PKG-KERNEL-001/HOT/kernel/registry/receipt.js';
import { compileSchemaFile } from '../../staging/PKG-KERNEL-001/HOT/kernel/manifest/validator.js';
import { REPO } from '../../scripts/lib/repo.js';

const check = compileSchemaFile(pathToFileURL(join(REPO, 'staging/PKG-SCHEMAS-001/HOT/schemas/receipt.schema.json')));

test('a real receipt validates against receipt.schema.json; edited ones do not', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-receipt-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const root = join(dir, 'root');
  createRoot(root);
  const body = Buffer.from('export const a = 1;\n');
  const manifest = {
    package_id: 'PKG-ALPHA-001',
    version: '1.0.0',
    schema_version: '1.0',
    title: 'alpha',
    description: 'alpha',
    layer: 1,
    plane_id: 'hot',
    dependencies: [],
    replaces: [],
    assets: [{ path: 'HOT/alpha/a.js', sha256: sha256Digest(body), size: body.length, classification: 'kernel' }],
  };
  const archive = join(dir, 'PKG-ALPHA-001-1.0.0.tar.gz');
  await packArchive(
    [
      { path: 'manifest.json', data: Buffer.from(JSON.stringify(manifest)) },
      { path: 'HOT/alpha/a.js', data: body },
    ],
    archive,
  );
  await withRootSession(root, {}, (s) => installOne(s, { archivePath: archive, mode: 'install', dev: true }));
  const receipt = JSON.parse(readFileSync(join(root, 'HOT/installed/PKG-ALPHA-001/receipt.json'), 'utf8')) as Record<
    string,
    unknown
  >;
  assert.deepEqual(check(receipt), []);
  assert.deepEqual(
    check({ ...receipt, extra: 1 }).map((i) => i.pointer),
    ['/extra'],
  );
  assert.deepEqual(
    check({ ...receipt, ledger_anchor: { seq: 0, hash: 'x' } })
      .map((i) => i.pointer)
      .sort(),
    ['/ledger_anchor/hash', '/ledger_anchor/seq'],
  );
  assert.deepEqual(
    check({ ...receipt, signature: { status: 'forged', key_id: null, dev_waiver: false } }).map((i) => i.pointer),
    ['/signature/status'],
  );

  // The archive is recorded by its SRI; a receipt written before SRI (sha256:<hex>) still validates and reads.
  assert.equal(receipt.archive_integrity, integrityOf(readFileSync(archive)));
  const path = join(root, 'HOT/installed/PKG-ALPHA-001/receipt.json');
  const legacy = { ...receipt, archive_integrity: sha256Digest(readFileSync(archive)) };
  assert.deepEqual(check(legacy), []);
  writeFileSync(path, JSON.stringify(legacy));
  assert.equal(readReceipt(root, 'PKG-ALPHA-001')?.archive_integrity, legacy.archive_integrity);
  // Anything else in that field is refused by the schema and by the reader, naming the value.
  for (const bad of ['sha512-short', `md5-${Buffer.alloc(16).toString('base64')}`, 'sha256:abc']) {
    const edited = { ...receipt, archive_integrity: bad };
    const pointers = new Set(check(edited).map((i) => i.pointer));
    assert.deepEqual([...pointers], ['/archive_integrity'], bad);
    writeFileSync(path, JSON.stringify(edited));
    assert.throws(
      () => readReceipt(root, 'PKG-ALPHA-001'),
      (e: Error & { code?: string }) => e.code === 'ERR_RECEIPT_INVALID' && e.message.includes(JSON.stringify(bad)),
      bad,
    );
  }
});
