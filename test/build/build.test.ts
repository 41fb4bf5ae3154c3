import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import * as tar from 'tar';
import { buildPackages, type BuildPackagesResult } from '../../scripts/build/packages.js';
import { REPO } from '../../scripts/lib/repo.js';
import { readBootstrapArchive, readPackageArchive } from '../../staging/PKG-KERNEL-001/HOT/kernel/archive/index.js';
import { integrityOf } from '../../staging/PKG-KERNEL-001/HOT/kernel/archive/integrity.js';
import { sha256Digest } from '../../staging/PKG-KERNEL-001/HOT/kernel/canonical.js';
import {
  compileSchema,
  validateBootstrapPlan,
  type BootstrapPlan,
} from '../../staging/PKG-KERNEL-001/HOT/kernel/manifest/index.js';

const work = mkdtempSync(join(tmpdir(), 'cp-build-test-'));
process.on('exit', () => rmSync(work, { recursive: true, force: true }));
let first: BuildPackagesResult;
let second: BuildPackagesResult;

before(async () => {
  first = await buildPackages({
    repo: REPO,
    outDir: join(work, 'a', 'packages'),
    bootstrapDir: join(work, 'a', 'bootstrap'),
    signingKeyPem: null,
  });
  second = await buildPackages({
    repo: REPO,
    outDir: join(work, 'b', 'packages'),
    bootstrapDir: join(work, 'b', 'bootstrap'),
    signingKeyPem: null,
  });
});

test('building twice gives byte-identical archives, index and CP_BOOTSTRAP', () => {
  const names = readdirSync(join(work, 'a', 'packages')).sort();
  assert.deepEqual(names, readdirSync(join(work, 'b', 'packages')).sort());
  assert.ok(
    names.includes('PKG-KERNEL-001-0.1.0.tar.gz') &&
      names.includes('PKG-RUNTIME-001-0.1.0.tar.gz') &&
      names.includes('index.json'),
  );
  for (const name of names)
    assert.deepEqual(
      readFileSync(join(work, 'a', 'packages', name)),
      readFileSync(join(work, 'b', 'packages', name)),
      name,
    );
  assert.deepEqual(readFileSync(first.bootstrap.path), readFileSync(second.bootstrap.path));
  assert.equal(first.bootstrap.integrity, integrityOf(readFileSync(first.bootstrap.path)));
});

test('each archive reads back: every laid-out file is a verified asset with its classification', async () => {
  const kernel = first.packages.find((p) => p.manifest.package_id === 'PKG-KERNEL-001');
  assert.ok(kernel);
  const archive = await readPackageArchive(kernel.path);
  assert.equal(archive.integrity, kernel.integrity);
  const laidOut = readdirSync(join(REPO, 'build', 'pkg', 'PKG-KERNEL-001', 'HOT'), {
    recursive: true,
    withFileTypes: true,
  })
    .filter((d) => d.isFile())
    .map((d) => join(d.parentPath, d.name).slice(join(REPO, 'build', 'pkg', 'PKG-KERNEL-001').length + 1))
    .sort();
  assert.deepEqual([...archive.files.keys()].sort(), laidOut);
  const cls = new Map(archive.manifest.assets.map((a) => [a.path, a.classification]));
  assert.equal(cls.get('HOT/kernel/ledger/ledger.js'), 'kernel');
  assert.equal(cls.get('HOT/cli/main.js'), 'kernel');
  assert.equal(cls.get('HOT/scripts/cplane.js'), 'script');
  assert.equal(cls.get('HOT/tests/kernel/archive/read.test.js'), 'test');
  assert.deepEqual(
    archive.manifest.dependencies.map((d) => d.package_id),
    ['PKG-RUNTIME-001', 'PKG-GENESIS-001'],
  );
  const genesis = await readPackageArchive(
    first.packages.find((p) => p.manifest.package_id === 'PKG-GENESIS-001')!.path,
  );
  assert.equal(genesis.manifest.assets.find((a) => a.path === 'HOT/package.json')?.classification, 'config');
});

test('the runtime package is platform-tagged, holds the production dependencies, not their sources or build inputs', async () => {
  const runtime = first.packages.find((p) => p.manifest.package_id === 'PKG-RUNTIME-001');
  assert.ok(runtime);
  assert.deepEqual(runtime.manifest.platform, {
    os: process.platform,
    cpu: process.arch,
    node_abi: process.versions.modules,
  });
  const paths = runtime.manifest.assets.map((a) => a.path);
  assert.ok(runtime.manifest.assets.every((a) => a.classification === 'runtime'));
  assert.ok(paths.includes('HOT/node_modules/better-sqlite3/build/Release/better_sqlite3.node'));
  for (const name of ['ajv', 'tar', 'yargs', 'semver', 'canonicalize', 'better-sqlite3'])
    assert.ok(paths.includes(`HOT/node_modules/${name}/package.json`), name);
  assert.ok(
    !paths.some(
      (p) =>
        p.startsWith('HOT/node_modules/better-sqlite3/deps/') || p.startsWith('HOT/node_modules/better-sqlite3/src/'),
    ),
  );
  assert.ok(!paths.some((p) => p.endsWith('.d.ts') || p.endsWith('.map') || /\/\.[^/]+$/.test(p)));
  assert.ok(
    !paths.some((p) => p.startsWith('HOT/node_modules/c8/') || p.startsWith('HOT/node_modules/typescript/')),
    'no dev dependencies',
  );
  // gpt-tokenizer is imported as ESM: its CommonJS build, raw rank files and sources stay out.
  assert.ok(paths.includes('HOT/node_modules/gpt-tokenizer/esm/encoding/o200k_base.js'));
  assert.ok(!paths.some((p) => /^HOT\/node_modules\/gpt-tokenizer\/(cjs|data|src)\//.test(p)));
});

test('a root holding the runtime package imports every runtime dependency without the repository', async () => {
  const root = join(work, 'root');
  const runtime = await readPackageArchive(
    first.packages.find((p) => p.manifest.package_id === 'PKG-RUNTIME-001')!.path,
  );
  for (const [path, data] of runtime.files) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), data);
  }
  writeFileSync(join(root, 'HOT', 'package.json'), '{"type":"module"}');
  mkdirSync(join(root, 'HOT', 'kernel'), { recursive: true });
  writeFileSync(
    join(root, 'HOT', 'kernel', 'probe.js'),
    [
      "import Database from 'better-sqlite3'; import { Ajv } from 'ajv'; import addFormats from 'ajv-formats'; import * as tar from 'tar';",
      "import yargs from 'yargs'; import semver from 'semver'; import canonicalize from 'canonicalize';",
      "import ssri from 'ssri';",
      "import { countTokens } from 'gpt-tokenizer/encoding/o200k_base'; import { O200K_TOKEN_SPLIT_REGEX } from 'gpt-tokenizer/encodingParams/constants';",
      "if (countTokens('hello world') !== 2 || !(O200K_TOKEN_SPLIT_REGEX instanceof RegExp)) throw new Error('gpt-tokenizer does not count');",
      "const db = new Database(':memory:'); const row = db.prepare('select 41 + 1 as n').get();",
      "const ok = new Ajv().compile({ type: 'integer' })(row.n) && semver.satisfies('1.2.3', '^1') && canonicalize({ b: 1, a: 2 }) === '{\"a\":2,\"b\":1}';",
      "if (ssri.checkData('x', ssri.fromData('x')) === false) throw new Error('ssri does not check');",
      "console.log(JSON.stringify({ ok, n: row.n, tar: typeof tar.Parser, yargs: typeof yargs, formats: typeof addFormats, from: import.meta.resolve('better-sqlite3') }));",
    ].join('\n'),
  );
  const run = spawnSync(process.execPath, [join(root, 'HOT', 'kernel', 'probe.js')], {
    cwd: tmpdir(),
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '' },
  });
  assert.equal(run.status, 0, run.stderr);
  const out = JSON.parse(run.stdout) as { ok: boolean; n: number; tar: string; from: string };
  assert.deepEqual([out.ok, out.n, out.tar], [true, 42, 'function']);
  assert.ok(out.from.startsWith(`file://${root}/HOT/node_modules/`), out.from);
});

/** Every genesis file is byte-for-byte the layer-0 asset it names, and genesis/ holds nothing else. */
async function assertGenesisIsLayerZero(plan: BootstrapPlan, dir: string): Promise<void> {
  const layerZero = new Map<string, Map<string, Buffer>>();
  for (const p of plan.packages.filter((q) => q.layer === 0))
    layerZero.set(p.package_id, (await readPackageArchive(join(dir, p.file))).files);
  assert.equal(plan.genesis.entry, 'HOT/kernel/installer/entry.js');
  for (const file of plan.genesis.files) {
    const shipped = readFileSync(join(dir, 'genesis', file.path));
    assert.deepEqual(shipped, layerZero.get(file.package_id)?.get(file.path), file.path);
    assert.equal(file.sha256, sha256Digest(shipped), file.path);
  }
  const onDisk = (sub: string): string[] =>
    readdirSync(join(dir, sub), { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? onDisk(`${sub}/${e.name}`) : [`${sub}/${e.name}`.slice('genesis/'.length)],
    );
  assert.deepEqual(onDisk('genesis').sort(), plan.genesis.files.map((f) => f.path).sort());
  const paths = new Set(plan.genesis.files.map((f) => f.path));
  for (const needed of [
    'HOT/kernel/installer/batch.js',
    'HOT/node_modules/better-sqlite3/build/Release/better_sqlite3.node',
    'HOT/node_modules/tar/dist/esm/parse.js',
  ])
    assert.ok(paths.has(needed), needed);
  assert.ok(
    ![...paths].some((p) => p.startsWith('HOT/node_modules/yargs/') || p.startsWith('HOT/tests/')),
    'only what the installer loads',
  );
}

test('CP_BOOTSTRAP holds the texts, bootstrap.json pinning each archive and genesis file, every archive and the genesis installer; the order is layer then dependencies', async () => {
  const dir = join(work, 'cp');
  mkdirSync(dir);
  await tar.x({ file: first.bootstrap.path, cwd: dir });
  const members = readdirSync(dir).sort();
  assert.deepEqual(
    members.filter((m) => !m.endsWith('.js')),
    ['INSTALL.md', 'README.md', 'bootstrap.json', 'genesis', 'packages'],
  );
  assert.deepEqual(
    members.filter((m) => m.endsWith('.js')),
    first.bootstrap.entries,
  );
  assert.deepEqual(
    first.bootstrap.entries,
    ['errors.js', 'install.js', 'plan.js', 'root.js', 'sri.js', 'verify-genesis.js'],
    'the entry and what it imports, nothing else',
  );
  const plan = validateBootstrapPlan(JSON.parse(readFileSync(join(dir, 'bootstrap.json'), 'utf8')));
  assert.equal(
    plan.bootstrap_version,
    (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string }).version,
  );
  const order = plan.install_order;
  assert.deepEqual(order.slice(0, 4), ['PKG-GENESIS-001', 'PKG-RUNTIME-001', 'PKG-KERNEL-001', 'PKG-SCHEMAS-001']);
  for (const p of plan.packages) assert.equal(p.integrity, integrityOf(readFileSync(join(dir, p.file))), p.file);
  assert.deepEqual(
    readdirSync(join(dir, 'packages')).sort(),
    plan.packages.map((p) => p.file.slice('packages/'.length)).sort(),
  );
  await assertGenesisIsLayerZero(plan, dir);
  const read = await readBootstrapArchive(first.bootstrap.path);
  assert.deepEqual(read.plan, plan);
  assert.deepEqual(
    [...read.extras.keys()].sort(),
    members.filter((m) => m.endsWith('.js') || m.endsWith('.md')).sort(),
  );
  const index = JSON.parse(readFileSync(first.index, 'utf8')) as {
    packages: Array<{ package_id: string; integrity: string; file: string }>;
  };
  assert.deepEqual(index.packages.map((p) => p.integrity).sort(), plan.packages.map((p) => p.integrity).sort());
  const indexSchema = JSON.parse(
    readFileSync(join(REPO, 'staging', 'PKG-SCHEMAS-001', 'HOT', 'schemas', 'index.schema.json'), 'utf8'),
  ) as object;
  assert.deepEqual(compileSchema(indexSchema)(index), []);
});
