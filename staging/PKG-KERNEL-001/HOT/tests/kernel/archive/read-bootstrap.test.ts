import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { packArchive, readBootstrapArchive, type PackFile } from '../../../kernel/archive/index.js';
import {
  makeBootstrapPlan,
  validateBootstrapPlan,
  type BootstrapGenesis,
  type BootstrapPackage,
} from '../../../kernel/manifest/index.js';
import { manifestEntry, rawTar, scratch, sha256, sri512 } from './tar-fixture.js';

function pkg(
  package_id: string,
  layer: 0 | 1 | 2 | 3,
  deps: string[],
  data: string,
): { entry: BootstrapPackage; file: PackFile } {
  const bytes = Buffer.from(data);
  const file = `packages/${package_id}-0.1.0.tar.gz`;
  return {
    entry: {
      package_id,
      version: '0.1.0',
      file,
      integrity: sri512(bytes),
      size: bytes.length,
      layer,
      dependencies: deps.map((id) => ({ package_id: id, version: '^0.1.0' })),
    },
    file: { path: file, data: bytes },
  };
}

const kernel = pkg('PKG-KERNEL-001', 0, ['PKG-RUNTIME-001'], 'kernel archive bytes');
const runtime = pkg('PKG-RUNTIME-001', 0, [], 'runtime archive bytes');
const schemas = pkg('PKG-SCHEMAS-001', 1, ['PKG-KERNEL-001'], 'schemas archive bytes');
const all = [schemas, kernel, runtime];
const entryBytes = Buffer.from("import '../a.js';");
const helperBytes = Buffer.from('export {};');
const genesis: BootstrapGenesis = {
  entry: 'HOT/kernel/installer/entry.js',
  files: [
    {
      path: 'HOT/kernel/installer/entry.js',
      package_id: 'PKG-KERNEL-001',
      sha256: sha256(entryBytes),
      size: entryBytes.length,
    },
    { path: 'HOT/kernel/a.js', package_id: 'PKG-KERNEL-001', sha256: sha256(helperBytes), size: helperBytes.length },
  ],
};
const genesisFiles: PackFile[] = [
  { path: 'genesis/HOT/kernel/installer/entry.js', data: entryBytes },
  { path: 'genesis/HOT/kernel/a.js', data: helperBytes },
];
const plan = makeBootstrapPlan(
  '0.1.0',
  all.map((p) => p.entry),
  genesis,
);
const planFile = (value: unknown): PackFile => ({ path: 'bootstrap.json', data: Buffer.from(JSON.stringify(value)) });

test('makeBootstrapPlan orders by layer then dependencies, and the plan validates', () => {
  assert.deepEqual(plan.install_order, ['PKG-RUNTIME-001', 'PKG-KERNEL-001', 'PKG-SCHEMAS-001']);
  assert.deepEqual(
    plan.packages.map((p) => p.package_id),
    plan.install_order,
  );
  assert.equal(validateBootstrapPlan(JSON.parse(JSON.stringify(plan))).bootstrap_version, '0.1.0');
});

test('reads CP_BOOTSTRAP: the plan, every archive and genesis file verified, texts and entry as extras', async (t) => {
  const s = scratch(t);
  const path = join(s.dir, 'CP_BOOTSTRAP-0.1.0.tar.gz');
  const { integrity } = await packArchive(
    [
      planFile(plan),
      ...all.map((p) => p.file),
      ...genesisFiles,
      { path: 'README.md', data: Buffer.from('# hi') },
      { path: 'install.js', data: Buffer.from('//'), mode: 0o755 },
    ],
    path,
  );
  const read = await readBootstrapArchive(path);
  assert.equal(read.integrity, integrity);
  assert.deepEqual(read.plan, plan);
  assert.equal(read.packages.get(kernel.entry.file)?.toString(), 'kernel archive bytes');
  assert.equal(read.packages.get('genesis/HOT/kernel/a.js')?.toString(), 'export {};');
  assert.deepEqual([...read.extras.keys()].sort(), ['README.md', 'install.js']);
});

test('refuses an archive that does not match bootstrap.json, an undeclared one, a missing one, a nested extra', async (t) => {
  const s = scratch(t);
  const swapped = { ...kernel.file, data: Buffer.from('kernel archive byteZ') };
  const members = [...all.map((p) => p.file), ...genesisFiles].map((f) => ({ name: f.path, data: f.data }));
  const patched = members.map((m) =>
    m.name === 'genesis/HOT/kernel/a.js' ? { ...m, data: Buffer.from('export {}!') } : m,
  );
  await assert.rejects(readBootstrapArchive(s.archive(rawTar([manifestEntry(plan, 'bootstrap.json'), ...patched]))), {
    code: 'ERR_ARCHIVE_DIGEST_MISMATCH',
  });
  await assert.rejects(
    readBootstrapArchive(
      s.archive(
        rawTar([manifestEntry(plan, 'bootstrap.json'), ...members, { name: 'genesis/HOT/kernel/b.js', data: 'x' }]),
      ),
    ),
    { code: 'ERR_ARCHIVE_UNDECLARED_MEMBER' },
  );
  await assert.rejects(
    readBootstrapArchive(
      s.archive(
        rawTar([manifestEntry(plan, 'bootstrap.json'), ...members.filter((m) => m.name !== 'genesis/HOT/kernel/a.js')]),
      ),
    ),
    { code: 'ERR_ARCHIVE_MISSING_ASSET' },
  );
  await assert.rejects(
    readBootstrapArchive(
      s.archive(
        rawTar([
          manifestEntry(plan, 'bootstrap.json'),
          ...[swapped, runtime.file, schemas.file].map((f) => ({ name: f.path, data: f.data })),
        ]),
      ),
    ),
    { code: 'ERR_INTEGRITY_MISMATCH' },
  );
  await assert.rejects(
    readBootstrapArchive(
      s.archive(
        rawTar([
          manifestEntry(plan, 'bootstrap.json'),
          ...members,
          { name: 'packages/PKG-EVIL-001-0.1.0.tar.gz', data: 'x' },
        ]),
      ),
    ),
    { code: 'ERR_ARCHIVE_UNDECLARED_MEMBER' },
  );
  await assert.rejects(
    readBootstrapArchive(
      s.archive(rawTar([manifestEntry(plan, 'bootstrap.json'), ...members, { name: 'docs/x.md', data: 'x' }])),
    ),
    { code: 'ERR_ARCHIVE_UNDECLARED_MEMBER' },
  );
  await assert.rejects(
    readBootstrapArchive(
      s.archive(rawTar([manifestEntry(plan, 'bootstrap.json'), { name: kernel.file.path, data: kernel.file.data }])),
    ),
    { code: 'ERR_ARCHIVE_MISSING_ASSET' },
  );
  await assert.rejects(readBootstrapArchive(s.archive(rawTar([{ name: 'README.md', data: 'x' }]))), {
    code: 'ERR_ARCHIVE_NO_MANIFEST',
  });
  await assert.rejects(readBootstrapArchive(s.archive(rawTar([{ name: 'bootstrap.json', data: '{' }]))), {
    code: 'ERR_BOOTSTRAP_INVALID',
  });
});

test('bootstrap.json is refused when its order is not the install order, a dependency is absent or out of range, a file name lies, or genesis is unsound', () => {
  const pointer = (value: unknown): string => {
    try {
      validateBootstrapPlan(value);
    } catch (error) {
      assert.equal((error as { code: string }).code, 'ERR_BOOTSTRAP_INVALID');
      return (error as { details: { errors: Array<{ pointer: string }> } }).details.errors[0]?.pointer ?? '';
    }
    return 'valid';
  };
  const copy = (): typeof plan => JSON.parse(JSON.stringify(plan)) as typeof plan;
  const reordered = copy();
  reordered.packages.reverse();
  reordered.install_order.reverse();
  assert.equal(pointer(reordered), '/install_order');
  const missing = copy();
  missing.packages = missing.packages.filter((p) => p.package_id !== 'PKG-RUNTIME-001');
  missing.install_order = missing.packages.map((p) => p.package_id);
  assert.equal(pointer(missing), '/packages/0/dependencies/0');
  const range = copy();
  range.packages[2]!.dependencies[0]!.version = '^2.0.0';
  assert.equal(pointer(range), '/packages/2/dependencies/0');
  const renamed = copy();
  renamed.packages[0]!.file = 'packages/PKG-RUNTIME-001-9.9.9.tar.gz';
  assert.equal(pointer(renamed), '/packages/0/file');
  const cyclic = copy();
  cyclic.packages[0]!.dependencies = [{ package_id: 'PKG-KERNEL-001', version: '*' }];
  assert.equal(pointer(cyclic), '/packages');
  assert.equal(pointer({ ...copy(), extra: 1 }), '/extra');
  const escaping = copy();
  escaping.genesis.files[1]!.path = 'HOT/../../etc/x.js';
  assert.equal(pointer(escaping), '/genesis/files/1');
  const twice = copy();
  twice.genesis.files[1]!.path = twice.genesis.files[0]!.path;
  assert.equal(pointer(twice), '/genesis/files/1');
  const upper = copy();
  upper.genesis.files[0]!.package_id = 'PKG-SCHEMAS-001';
  assert.equal(pointer(upper), '/genesis/files/0');
  const outside = copy();
  outside.genesis.files[0]!.path = 'kernel/installer/entry.js';
  assert.equal(pointer(outside), '/genesis/files/0/path');
  const noEntry = copy();
  noEntry.genesis.entry = 'HOT/kernel/installer/other.js';
  assert.equal(pointer(noEntry), '/genesis/entry');
  const { genesis: _dropped, ...withoutGenesis } = copy();
  assert.equal(pointer(withoutGenesis), '/genesis');
});

test('makeBootstrapPlan refuses a cycle, naming it', () => {
  const a = pkg('PKG-A-001', 1, ['PKG-B-001'], 'a');
  const b = pkg('PKG-B-001', 1, ['PKG-A-001'], 'b');
  assert.throws(
    () => makeBootstrapPlan('0.1.0', [a.entry, b.entry], genesis),
    (e: { code: string; details: { cycle: string[] } }) =>
      e.code === 'ERR_PACKAGE_CYCLE' && e.details.cycle.join(',') === 'PKG-A-001,PKG-B-001,PKG-A-001',
  );
});
