// A freshly bootstrapped, signed root attacked through its own installer: a second trusted publisher, a
// lower-layer takeover, module-resolution files, hostile paths and a dependency cycle are each refused with
// their code and leave the root as it was; the legitimate variants still install and every gate passes.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { REPO } from '../../scripts/lib/repo.js';
import {
  manifestEntry,
  manifestFor as rawManifest,
  paxEntry,
  rawTar,
} from '../../staging/PKG-KERNEL-001/HOT/tests/kernel/archive/tar-fixture.js';
import {
  buildArchive,
  keyPair,
  snapshot,
  type PkgSpec,
} from '../../staging/PKG-KERNEL-001/HOT/tests/kernel/installer/helpers.js';
import { bootstrapSignedRoot } from '../lib/signed-root.js';
import { rootPaths } from '../../staging/PKG-KERNEL-001/HOT/kernel/root/layout.js';

const cplane = join(REPO, 'bin', 'cplane.js');
const work = mkdtempSync(join(tmpdir(), 'cp-trust-'));
const pristine = join(work, 'pristine');
const other = keyPair();
let publisherKey = '';
let caseNo = 0;

function run(args: string[]): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [cplane, ...args], { cwd: REPO, encoding: 'utf8' });
  return { status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
}

function must(args: string[]): string {
  const r = run(args);
  assert.equal(r.status, 0, `${args.join(' ')}\n${r.stderr}${r.stdout}`);
  return r.stdout;
}

before(() => {
  bootstrapSignedRoot(work, pristine);
  // A second publisher the root trusts: trusted for its own packages, not for the kernel's.
  writeFileSync(join(work, 'other.pub'), other.publicPem);
  must(['keys', 'trust', '--root', pristine, join(work, 'other.pub')]);
  publisherKey = readFileSync(join(work, 'keys', 'cplane-signing.key'), 'utf8');
});
after(() => rmSync(work, { recursive: true, force: true }));

function copyRoot(): string {
  caseNo += 1;
  const root = join(work, `case-${caseNo}`);
  cpSync(pristine, root, { recursive: true, verbatimSymlinks: true });
  return root;
}

async function archive(spec: PkgSpec): Promise<string> {
  return buildArchive(work, spec);
}

/** The install is refused with `code`, and nothing in the root changed but the ledger's INSTALL_FAILED. */
/** The root's files but SQLite's WAL, which the first writer after a read-only gate run checkpoints. */
function files(root: string): Record<string, string> {
  return Object.fromEntries(Object.entries(snapshot(root)).filter(([path]) => !path.endsWith('.sqlite-wal')));
}

function refused(root: string, archivePath: string, code: string, extra: string[] = []): string {
  const before = files(root);
  const r = run(['install', archivePath, '--root', root, ...extra]);
  assert.equal(r.status, 3, `expected ${code}: ${r.stderr}${r.stdout}`);
  assert.match(r.stderr, new RegExp(`^cplane: ${code}: `, 'm'));
  assert.deepEqual(files(root), before, `${code}: the root changed`);
  return r.stderr;
}

interface GateJson {
  gates: Array<{ id: string; status: string; findings: Array<{ code: string; message: string }> }>;
}

function gates(root: string): GateJson {
  const r = spawnSync(
    process.execPath,
    [join(rootPaths(root).scripts, 'gate_check.js'), '--root', root, '--all', '--json'],
    { encoding: 'utf8' },
  );
  return JSON.parse(r.stdout) as GateJson;
}

function assertAllPass(root: string): void {
  const json = gates(root);
  assert.ok(
    json.gates.every((g) => g.status === 'PASS'),
    JSON.stringify(json.gates.filter((g) => g.status !== 'PASS')),
  );
}

const KERNEL_FILE = 'HOT/kernel/errors.js';

test('a second trusted publisher cannot take over a kernel file through replaces, with or without --dev', async () => {
  const root = copyRoot();
  const bytes = readFileSync(join(root, KERNEL_FILE), 'utf8');
  const takeover = await archive({
    id: 'PKG-TAKEOVER-001',
    layer: 0,
    replaces: ['PKG-KERNEL-001'],
    key: other.privatePem,
    files: { [KERNEL_FILE]: `${bytes}\n// owned\n` },
  });
  refused(root, takeover, 'ERR_REPLACE_UNAUTHORIZED');
  refused(root, takeover, 'ERR_REPLACE_UNAUTHORIZED', ['--dev']);
  const unsigned = await archive({
    id: 'PKG-TAKEOVER-001',
    layer: 0,
    version: '1.0.1',
    replaces: ['PKG-KERNEL-001'],
    files: { [KERNEL_FILE]: `${bytes}\n// owned\n` },
  });
  refused(root, unsigned, 'ERR_REPLACE_UNAUTHORIZED', ['--dev']);
  assertAllPass(root);
  // Authority the root's owner grants explicitly: that key, for that package, and nothing more.
  must(['keys', 'trust', '--root', root, join(work, 'other.pub'), '--may-replace', 'PKG-COMPILER-001']);
  refused(root, takeover, 'ERR_REPLACE_UNAUTHORIZED');
  must(['keys', 'trust', '--root', root, join(work, 'other.pub'), '--may-replace', 'PKG-KERNEL-001']);
  assert.match(must(['keys', 'list', '--root', root]), /may replace PKG-COMPILER-001, PKG-KERNEL-001/);
  refused(root, unsigned, 'ERR_REPLACE_UNAUTHORIZED', ['--dev']);
  const out = JSON.parse(must(['install', takeover, '--root', root, '--json'])) as {
    action: string;
    transfers: number;
  };
  assert.deepEqual([out.action, out.transfers], ['installed', 1]);
  assertAllPass(root);
  // The grant withdrawn: the takeover it allowed is no longer backed by the trust store.
  const storePath = rootPaths(root).trust;
  const store = JSON.parse(readFileSync(storePath, 'utf8')) as { keys: Array<{ may_replace?: string[] }> };
  for (const key of store.keys) delete key.may_replace;
  writeFileSync(storePath, JSON.stringify(store));
  const g1 = gates(root).gates.find((g) => g.id === 'G1');
  assert.equal(g1?.status, 'FAIL');
  assert.deepEqual(
    g1?.findings.map((f) => f.code),
    ['TRANSFER_UNAUTHORIZED'],
  );
});

test("even the kernel's own publisher cannot take over a kernel file from a higher layer", async () => {
  const root = copyRoot();
  const bytes = readFileSync(join(root, KERNEL_FILE), 'utf8');
  const takeover = await archive({
    id: 'PKG-TAKEOVER-002',
    layer: 3,
    deps: { 'PKG-KERNEL-001': '^0.1.0' },
    replaces: ['PKG-KERNEL-001'],
    key: publisherKey,
    files: { [KERNEL_FILE]: bytes },
  });
  refused(root, takeover, 'ERR_REPLACE_LOWER_LAYER');
  refused(root, takeover, 'ERR_REPLACE_LOWER_LAYER', ['--dev']);
});

test('the same publisher may take over a file of a package in its layer, and every gate still passes', async () => {
  const root = copyRoot();
  const rel = 'HOT/compiler/roles/searcher.md';
  const bytes = readFileSync(join(root, rel), 'utf8');
  const takeover = await archive({
    id: 'PKG-ROLES-001',
    layer: 2,
    deps: { 'PKG-KERNEL-001': '^0.1.0' },
    replaces: ['PKG-COMPILER-001'],
    key: publisherKey,
    files: { [rel]: bytes },
  });
  const out = JSON.parse(must(['install', takeover, '--root', root, '--json'])) as {
    action: string;
    transfers: number;
  };
  assert.deepEqual([out.action, out.transfers], ['installed', 1]);
  assertAllPass(root);
});

test('a package shipping package.json or node_modules in a governed directory is refused', async () => {
  const root = copyRoot();
  const deps = { 'PKG-KERNEL-001': '^0.1.0' };
  for (const files of [
    { 'HOT/x/package.json': '{"type":"commonjs"}' },
    { 'HOT/x/node_modules/y.js': 'module.exports = 1;' },
    { 'HOT/node_modules/better-sqlite3/lib/index.js': 'module.exports = {};' },
  ]) {
    refused(
      root,
      await archive({ id: 'PKG-RESOLVE-001', layer: 2, deps, key: publisherKey, files }),
      'ERR_ASSET_MODULE_RESOLUTION',
    );
  }
});

test('manifests with control characters or over-long segments in a path are refused, the path printed JSON-quoted', () => {
  const root = copyRoot();
  for (const path of ['HOT/x/a\nb.js', 'HOT/x/\u001b[31mred.js', `HOT/x/${'s'.repeat(300)}.js`]) {
    const files = [{ path, data: 'x' }];
    const file = join(work, `hostile-${caseNo}-${Buffer.byteLength(path)}.tar.gz`);
    writeFileSync(
      file,
      gzipSync(
        rawTar([
          manifestEntry(rawManifest(files, { package_id: 'PKG-HOSTILE-001' })),
          paxEntry({ path }),
          { name: 'HOT/x/placeholder', data: 'x' },
        ]),
      ),
    );
    const stderr = refused(root, file, 'ERR_MANIFEST_INVALID', ['--dev']);
    assert.ok(
      !/[\u0000-\u0009\u000b-\u001f]/.test(stderr) && stderr.split('\n').every((line) => !line.startsWith('b.js')),
      JSON.stringify(stderr),
    );
  }
});

test('an upgrade that would create a dependency cycle is refused; G2 never sees one', async () => {
  const root = copyRoot();
  const a1 = await archive({
    id: 'PKG-CYC-A-001',
    layer: 2,
    deps: { 'PKG-KERNEL-001': '^0.1.0' },
    key: publisherKey,
    files: { 'HOT/cyc/a.js': 'a' },
  });
  const b1 = await archive({
    id: 'PKG-CYC-B-001',
    layer: 2,
    deps: { 'PKG-CYC-A-001': '^1.0.0' },
    key: publisherKey,
    files: { 'HOT/cyc/b.js': 'b' },
  });
  must(['install', a1, '--root', root]);
  must(['install', b1, '--root', root]);
  const a2 = await archive({
    id: 'PKG-CYC-A-001',
    version: '1.1.0',
    layer: 2,
    deps: { 'PKG-KERNEL-001': '^0.1.0', 'PKG-CYC-B-001': '^1.0.0' },
    key: publisherKey,
    files: { 'HOT/cyc/a.js': 'a2' },
  });
  const before = snapshot(root);
  const r = run(['upgrade', a2, '--root', root]);
  assert.equal(r.status, 3, r.stderr);
  assert.match(r.stderr, /^cplane: ERR_PACKAGE_CYCLE: .*PKG-CYC-A-001 -> PKG-CYC-B-001 -> PKG-CYC-A-001/m);
  assert.deepEqual(snapshot(root), before);
  assertAllPass(root);
});

test("gate findings print a planted file's name JSON-quoted: a newline in it cannot forge a line of the report", () => {
  const root = copyRoot();
  writeFileSync(join(root, 'HOT', 'kernel', 'x\nG1 INTEGRITY: PASS — all good'), 'x');
  const r = spawnSync(process.execPath, [join(rootPaths(root).scripts, 'gate_check.js'), '--root', root, '--all'], {
    encoding: 'utf8',
  });
  assert.equal(r.status, 1);
  assert.ok(r.stdout.includes('"HOT/kernel/x\\nG1 INTEGRITY: PASS — all good" is not owned'), r.stdout);
  assert.ok(!r.stdout.split('\n').some((line) => line.startsWith('G1 INTEGRITY: PASS — all good')), r.stdout);
});
