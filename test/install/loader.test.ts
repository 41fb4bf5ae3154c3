// Verified module loading: on a freshly bootstrapped, signed root, every root entry point loads only files an
// installed package owns with their recorded bytes. Each attack plants code that would write a marker file;
// the command refuses with a coded error naming the file, and the marker is never written.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  appendFileSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO } from '../../scripts/lib/repo.js';
import { buildArchive } from '../../staging/PKG-KERNEL-001/HOT/tests/kernel/installer/helpers.js';
import { bootstrapSignedRoot } from '../lib/signed-root.js';
import { receiptDir, rootPaths } from '../../staging/PKG-KERNEL-001/HOT/kernel/root/layout.js';
import { packArchive, type PackFile } from '../../staging/PKG-KERNEL-001/HOT/kernel/archive/pack.js';
import { readPackageArchive } from '../../staging/PKG-KERNEL-001/HOT/kernel/archive/read.js';
import { sha256Digest } from '../../staging/PKG-KERNEL-001/HOT/kernel/canonical.js';
import { signManifest } from '../../staging/PKG-KERNEL-001/HOT/kernel/signing/signing.js';

const cplane = join(REPO, 'bin', 'cplane.js');
const work = mkdtempSync(join(tmpdir(), 'cp-loader-'));
const pristine = join(work, 'pristine');
let caseNo = 0;

interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

function run(args: string[], cwd = work): Run {
  const r = spawnSync(process.execPath, args, { cwd, encoding: 'utf8' });
  return { status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
}

function _must(args: string[]): string {
  const r = run(args, REPO);
  assert.equal(r.status, 0, `${args.join(' ')}\n${r.stderr}${r.stdout}`);
  return r.stdout;
}

before(() => {
  bootstrapSignedRoot(work, pristine);
});
after(() => rmSync(work, { recursive: true, force: true }));

/** A copy of the pristine root to attack, and the marker file its planted code would write. */
function attackRoot(): { root: string; marker: string; esm: string; cjs: string } {
  caseNo += 1;
  const root = join(work, `case-${caseNo}`);
  cpSync(pristine, root, { recursive: true, verbatimSymlinks: true });
  const marker = join(work, `ran-${caseNo}`);
  return {
    root,
    marker,
    esm: `import { writeFileSync as w } from 'node:fs'; w(${JSON.stringify(marker)}, 'ran');\n`,
    cjs: `require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'ran');\n`,
  };
}

const entry = (root: string, script: string): string => join(rootPaths(root).scripts, script);

function refused(r: Run, code: string, path: string, marker: string): void {
  assert.equal(r.status, 3, `${r.stdout}\n${r.stderr}`);
  assert.match(r.stderr, new RegExp(`cplane: ${code}: .*${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`), r.stderr);
  assert.equal(existsSync(marker), false, 'the planted code ran');
}

interface GateJson {
  gates: Array<{ id: string; status: string; findings: Array<{ code: string; path?: string }> }>;
}

function gateCheck(root: string): GateJson {
  return JSON.parse(run([entry(root, 'gate_check.js'), '--root', root, '--all', '--json']).stdout) as GateJson;
}

test('an untouched root: commands, ledger.js and gate-check run with every module verified', () => {
  const list = run([entry(pristine, 'cplane.js'), 'list', '--json']);
  assert.equal(list.status, 0, list.stderr);
  assert.equal(list.stderr, '');
  assert.ok((JSON.parse(list.stdout) as { packages: unknown[] }).packages.length > 10);
  const verify = run([entry(pristine, 'ledger.js'), 'verify']);
  assert.equal(verify.status, 0, verify.stderr);
  const gates = gateCheck(pristine);
  assert.ok(
    gates.gates.length >= 8 && gates.gates.every((g) => g.status === 'PASS'),
    JSON.stringify(gates.gates.filter((g) => g.status !== 'PASS')),
  );
  const viaBin = run([cplane, 'list', '--root', pristine]);
  assert.equal(viaBin.status, 0, viaBin.stderr);
  assert.equal(viaBin.stderr, '');
});

test('an unowned command module is never imported: skipped with ERR_MODULE_UNOWNED, refused when named, G0 reports it', () => {
  const { root, marker, esm } = attackRoot();
  writeFileSync(
    join(root, 'HOT', 'cli', 'commands', 'evil.js'),
    `${esm}export default { command: 'evil', describe: 'x', builder: (y) => y, run: () => 0 };\n`,
  );
  const list = run([entry(root, 'cplane.js'), 'list']);
  assert.equal(list.status, 0, list.stderr);
  assert.match(list.stderr, /warning: ERR_MODULE_UNOWNED: module "HOT\/cli\/commands\/evil\.js" is not owned/);
  refused(run([entry(root, 'cplane.js'), 'evil']), 'ERR_MODULE_UNOWNED', 'HOT/cli/commands/evil.js', marker);
  refused(run([cplane, 'evil', '--root', root]), 'ERR_MODULE_UNOWNED', 'HOT/cli/commands/evil.js', marker);
  const g0 = gateCheck(root).gates.find((g) => g.id === 'G0');
  assert.equal(g0?.status, 'FAIL');
  assert.deepEqual(
    g0?.findings.map((f) => f.path),
    ['HOT/cli/commands/evil.js'],
  );
  assert.equal(existsSync(marker), false, 'gate-check ran the planted command');
});

test('a codes.js planted where the start-up walk does not look (state directories, HOT/tests) is never imported', () => {
  const { root, marker, esm } = attackRoot();
  // An error whose code no loaded module has registered makes the CLI load every HOT/<area>/codes.js it finds.
  for (const area of ['tests', 'registries', 'ledger', 'installed'])
    writeFileSync(join(root, 'HOT', area, 'codes.js'), `${esm}export const CODES = {};\n`);
  for (const args of [
    [cplane, 'token', 'revoke', '--key-id', 'bad', '--root', root],
    [entry(root, 'cplane.js'), 'token', 'revoke', '--key-id', 'bad', '--root', root],
  ]) {
    const r = run(args);
    assert.match(r.stderr, /cplane: ERR_TOKEN_INVALID: "bad" is not a key id/, r.stderr);
    assert.equal(existsSync(marker), false, `${args.slice(1).join(' ')} ran a planted codes.js`);
  }
  const g0 = gateCheck(root).gates.find((g) => g.id === 'G0');
  assert.equal(g0?.status, 'FAIL');
  assert.deepEqual(
    g0?.findings.map((f) => [f.code, f.path]).sort(),
    ['installed', 'ledger', 'registries', 'tests'].map((area) => ['UNOWNED_FILE', `HOT/${area}/codes.js`]),
  );
  assert.equal(existsSync(marker), false, 'gate-check ran a planted codes.js');
});

test('an unowned gate module is never imported: gate-check reports it as a failing gate and G0 names it', () => {
  const { root, marker, esm } = attackRoot();
  writeFileSync(
    join(root, 'HOT', 'gates', 'checks', 'g9-evil.js'),
    `${esm}export default { id: 'G9', name: 'X', describe: 'x', run: () => ({ id: 'G9', name: 'X', status: 'PASS', message: '', findings: [] }) };\n`,
  );
  const r = run([entry(root, 'gate_check.js'), '--root', root, '--all', '--json']);
  assert.equal(r.status, 1, r.stderr);
  const json = JSON.parse(r.stdout) as GateJson;
  const g9 = json.gates.find((g) => g.id === 'G9');
  assert.equal(g9?.status, 'FAIL');
  assert.deepEqual(
    g9?.findings.map((f) => [f.code, f.path]),
    [['MODULE_REFUSED', 'HOT/gates/checks/g9-evil.js']],
  );
  assert.deepEqual(
    json.gates.find((g) => g.id === 'G0')?.findings.map((f) => f.path),
    ['HOT/gates/checks/g9-evil.js'],
  );
  assert.equal(existsSync(marker), false, 'the planted gate ran');
});

test('an owned module whose bytes were swapped is refused with ERR_MODULE_TAMPERED, before it runs', () => {
  const { root, marker, esm } = attackRoot();
  const keys = join(root, 'HOT', 'cli', 'commands', 'keys.js');
  writeFileSync(keys, esm + readFileSync(keys, 'utf8'));
  refused(
    run([entry(root, 'cplane.js'), 'keys', 'generate', '--out', join(work, `keys-${caseNo}`)]),
    'ERR_MODULE_TAMPERED',
    'HOT/cli/commands/keys.js',
    marker,
  );
  const main = join(root, 'HOT', 'cli', 'main.js');
  writeFileSync(main, esm + readFileSync(main, 'utf8'));
  refused(run([entry(root, 'cplane.js'), 'list']), 'ERR_MODULE_TAMPERED', 'HOT/cli/main.js', marker);
  refused(run([entry(root, 'ledger.js'), 'verify']), 'ERR_MODULE_TAMPERED', 'HOT/cli/main.js', marker);
  refused(run([entry(root, 'gate_check.js'), '--all']), 'ERR_MODULE_TAMPERED', 'HOT/cli/main.js', marker);
  const json = run([entry(root, 'gate_check.js'), '--all', '--json']);
  assert.equal(json.status, 3);
  assert.deepEqual(
    (JSON.parse(json.stdout) as { error: { code: string; details: { path: string } } }).error.details.path,
    'HOT/cli/main.js',
  );
  assert.match(json.stdout, /"code": "ERR_MODULE_TAMPERED"/);
  copyFileSync(join(pristine, 'HOT', 'cli', 'main.js'), main);
  const installer = join(root, 'HOT', 'kernel', 'installer', 'entry.js');
  writeFileSync(installer, esm + readFileSync(installer, 'utf8'));
  refused(
    run([entry(root, 'install.js'), join(work, 'packages', 'none.tar.gz')]),
    'ERR_MODULE_TAMPERED',
    'HOT/kernel/installer/entry.js',
    marker,
  );
});

test('third-party runtime code swapped (ESM yargs, CommonJS better-sqlite3, its .node addon) is refused', () => {
  const { root, marker, esm, cjs } = attackRoot();
  const yargs = join(root, 'HOT', 'node_modules', 'yargs', 'build', 'lib', 'yargs-factory.js');
  appendFileSync(yargs, esm);
  refused(
    run([entry(root, 'cplane.js'), 'list']),
    'ERR_MODULE_TAMPERED',
    'HOT/node_modules/yargs/build/lib/yargs-factory.js',
    marker,
  );
  copyFileSync(join(pristine, 'HOT', 'node_modules', 'yargs', 'build', 'lib', 'yargs-factory.js'), yargs);
  const database = join(root, 'HOT', 'node_modules', 'better-sqlite3', 'lib', 'database.js');
  writeFileSync(database, cjs + readFileSync(database, 'utf8'));
  refused(
    run([entry(root, 'cplane.js'), 'verify']),
    'ERR_MODULE_TAMPERED',
    'HOT/node_modules/better-sqlite3/lib/database.js',
    marker,
  );
  copyFileSync(join(pristine, 'HOT', 'node_modules', 'better-sqlite3', 'lib', 'database.js'), database);
  appendFileSync(
    join(root, 'HOT', 'node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node'),
    Buffer.from([0]),
  );
  refused(
    run([entry(root, 'cplane.js'), 'verify']),
    'ERR_MODULE_TAMPERED',
    'HOT/node_modules/better-sqlite3/build/Release/better_sqlite3.node',
    marker,
  );
});

test('an unowned file at a path `bindings` probes before the real addon is refused, not loaded in its place', () => {
  const { root, marker, cjs } = attackRoot();
  const build = join(root, 'HOT', 'node_modules', 'better-sqlite3', 'build');
  writeFileSync(join(build, 'better_sqlite3.node.js'), `${cjs}module.exports = {};\n`);
  refused(
    run([entry(root, 'cplane.js'), 'verify']),
    'ERR_MODULE_UNOWNED',
    'HOT/node_modules/better-sqlite3/build/better_sqlite3.node.js',
    marker,
  );
  rmSync(join(build, 'better_sqlite3.node.js'));
  copyFileSync(join(build, 'Release', 'better_sqlite3.node'), join(build, 'better_sqlite3.node'));
  refused(
    run([entry(root, 'cplane.js'), 'verify']),
    'ERR_MODULE_UNOWNED',
    'HOT/node_modules/better-sqlite3/build/better_sqlite3.node',
    marker,
  );
});

test('a planted package.json is refused: unowned in a governed directory, or an owned one rewritten to redirect an import', () => {
  const { root, marker, esm } = attackRoot();
  writeFileSync(
    join(root, 'HOT', 'cli', 'commands', 'package.json'),
    '{"type":"module","imports":{"#x":"./evil.js"}}\n',
  );
  refused(run([entry(root, 'cplane.js'), 'list']), 'ERR_MODULE_UNOWNED', 'HOT/cli/commands/package.json', marker);
  rmSync(join(root, 'HOT', 'cli', 'commands', 'package.json'));
  const yargsDir = join(root, 'HOT', 'node_modules', 'yargs');
  writeFileSync(join(yargsDir, 'evil.mjs'), `${esm}export default () => ({});\n`);
  const manifest = JSON.parse(readFileSync(join(yargsDir, 'package.json'), 'utf8')) as Record<string, unknown>;
  writeFileSync(
    join(yargsDir, 'package.json'),
    JSON.stringify({ ...manifest, exports: { '.': './evil.mjs', './helpers': './evil.mjs' } }),
  );
  refused(
    run([entry(root, 'cplane.js'), 'list']),
    'ERR_MODULE_TAMPERED',
    'HOT/node_modules/yargs/package.json',
    marker,
  );
});

test('a node_modules directory planted in a governed directory cannot shadow yargs or better-sqlite3', () => {
  const { root, marker, esm, cjs } = attackRoot();
  const yargs = join(root, 'HOT', 'cli', 'node_modules', 'yargs');
  mkdirSync(yargs, { recursive: true });
  writeFileSync(join(yargs, 'package.json'), '{"name":"yargs","type":"module","exports":{".":"./index.js"}}');
  writeFileSync(join(yargs, 'index.js'), `${esm}export default () => ({});\n`);
  refused(run([entry(root, 'cplane.js'), 'list']), 'ERR_MODULE_UNOWNED', 'HOT/cli/node_modules', marker);
  rmSync(join(root, 'HOT', 'cli', 'node_modules'), { recursive: true });
  const sqlite = join(root, 'HOT', 'kernel', 'node_modules', 'better-sqlite3');
  mkdirSync(sqlite, { recursive: true });
  writeFileSync(join(sqlite, 'package.json'), '{"name":"better-sqlite3","main":"index.js"}');
  writeFileSync(join(sqlite, 'index.js'), `${cjs}module.exports = function Database() {};\n`);
  const r = run([entry(root, 'cplane.js'), 'verify']);
  refused(r, 'ERR_MODULE_UNOWNED', 'HOT/kernel/node_modules', marker);
});

test('an owned directory swapped for a symbolic link to edited code is refused before anything loads', () => {
  const { root, marker, esm } = attackRoot();
  const elsewhere = join(work, `compiler-${caseNo}`);
  renameSync(join(root, 'HOT', 'compiler'), elsewhere);
  const breakpoints = join(elsewhere, 'breakpoints.js');
  writeFileSync(breakpoints, esm + readFileSync(breakpoints, 'utf8'));
  symlinkSync(elsewhere, join(root, 'HOT', 'compiler'));
  // The root-shape check, which every entry runs before reading anything, is the first to refuse it.
  refused(
    run([entry(root, 'cplane.js'), 'list']),
    'ERR_ROOT_SYMLINK',
    'HOT/compiler" in the root is a symlink',
    marker,
  );
});

test('deleting the receipts does not turn verification off: nothing loads', () => {
  const { root, marker, esm } = attackRoot();
  writeFileSync(
    join(root, 'HOT', 'cli', 'commands', 'evil.js'),
    `${esm}export default { command: 'evil', describe: 'x', builder: (y) => y, run: () => 0 };\n`,
  );
  rmSync(rootPaths(root).installed, { recursive: true });
  refused(run([entry(root, 'cplane.js'), 'evil']), 'ERR_MODULE_UNOWNED', 'HOT/package.json', marker);
});

test("deleting one package's receipt directory does not let its modules load unverified", () => {
  const { root, marker, esm } = attackRoot();
  const rel = 'HOT/kernel/installer/entry.js';
  writeFileSync(join(root, rel), esm + readFileSync(join(root, rel), 'utf8'));
  rmSync(receiptDir(root, 'PKG-KERNEL-001'), { recursive: true });
  refused(run([entry(root, 'install.js'), join(work, 'packages', 'none.tar.gz')]), 'ERR_MODULE_UNOWNED', rel, marker);
});

test('the chain reaches the trust store: a swapped module with its receipt and manifest digests rewritten to match is refused', () => {
  const { root, marker, esm } = attackRoot();
  const rel = 'HOT/cli/commands/prompt.js';
  const path = join(root, rel);
  const body = esm + readFileSync(path, 'utf8');
  writeFileSync(path, body);
  const digest = `sha256:${createHash('sha256').update(body).digest('hex')}`;
  for (const file of ['receipt.json', 'manifest.json']) {
    const doc = join(receiptDir(root, 'PKG-COMPILER-001'), file);
    const json = JSON.parse(readFileSync(doc, 'utf8')) as {
      files?: Array<{ path: string; sha256: string; size: number }>;
      assets?: Array<{ path: string; sha256: string; size: number }>;
    };
    for (const owned of [...(json.files ?? []), ...(json.assets ?? [])])
      if (owned.path === rel) {
        owned.sha256 = digest;
        owned.size = Buffer.byteLength(body);
      }
    writeFileSync(doc, JSON.stringify(json, null, 2));
  }
  const r = run([entry(root, 'cplane.js'), 'prompt', 'compile']);
  refused(r, 'ERR_MODULE_UNOWNED', rel, marker);
  assert.match(r.stderr, /PKG-COMPILER-001's signature is not valid for its installed manifest/);
});

/** PKG-KERNEL-001 0.1.1: every module of the built 0.1.0 with one more line, signed by the root's publisher. */
async function kernelUpgrade(): Promise<string> {
  const out = join(work, 'upgrades', 'PKG-KERNEL-001-0.1.1.tar.gz');
  if (existsSync(out)) return out;
  const built = await readPackageArchive(join(work, 'packages', 'PKG-KERNEL-001-0.1.0.tar.gz'));
  const manifest = structuredClone(built.manifest);
  manifest.version = '0.1.1';
  const files: PackFile[] = [];
  for (const asset of manifest.assets) {
    let data = built.files.get(asset.path) as Buffer;
    if (asset.path.endsWith('.js')) {
      data = Buffer.concat([data, Buffer.from('\n// 0.1.1\n')]);
      asset.sha256 = sha256Digest(data);
      asset.size = data.length;
    }
    files.push({ path: asset.path, data });
  }
  const signature = signManifest(manifest, readFileSync(join(work, 'keys', 'cplane-signing.key'), 'utf8'));
  await packArchive(
    [
      { path: 'manifest.json', data: Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`) },
      { path: 'signature.json', data: Buffer.from(JSON.stringify(signature)) },
      ...files,
    ],
    out,
  );
  return out;
}

// mid-files: the first new module is in place, the receipt and manifest are still the old ones; after-files:
// every new module and the new installed manifest are in place, the receipt is still the old one.
for (const step of ['mid-files', 'after-files']) {
  test(`a kernel upgrade killed at ${step} leaves a root whose own commands start, and the first one finishes it`, async () => {
    const upgrade = await kernelUpgrade();
    const { root } = attackRoot();
    const killed = spawnSync(process.execPath, [entry(root, 'install.js'), '--root', root, '--upgrade', upgrade], {
      env: { ...process.env, CPLANE_TEST_CRASH_AT: step },
      encoding: 'utf8',
    });
    assert.equal(killed.signal, 'SIGKILL', `the upgrade should have been killed at ${step}: ${killed.stderr}`);
    assert.equal(existsSync(rootPaths(root).journal), true, 'the commit was left pending');
    const verify = run([entry(root, 'cplane.js'), 'verify', '--root', root]);
    assert.equal(verify.status, 0, verify.stderr + verify.stdout);
    assert.match(verify.stdout, /finished the interrupted upgrade of PKG-KERNEL-001/);
    assert.equal(existsSync(rootPaths(root).journal), false);
    const list = JSON.parse(run([entry(root, 'cplane.js'), 'list', '--json']).stdout) as {
      packages: Array<{ package_id: string; version: string }>;
    };
    assert.equal(list.packages.find((p) => p.package_id === 'PKG-KERNEL-001')?.version, '0.1.1');
    const gates = gateCheck(root);
    assert.ok(
      gates.gates.every((g) => g.status === 'PASS'),
      JSON.stringify(gates.gates.filter((g) => g.status !== 'PASS')),
    );
  });
}

test('an owned module whose receipt entry was rewritten or dropped (manifest and signature untouched) is refused', () => {
  const rel = 'HOT/kernel/installer/entry.js';
  for (const edit of ['rewritten', 'dropped']) {
    const { root, marker, esm } = attackRoot();
    const body = esm + readFileSync(join(root, rel), 'utf8');
    writeFileSync(join(root, rel), body);
    const doc = join(receiptDir(root, 'PKG-KERNEL-001'), 'receipt.json');
    const receipt = JSON.parse(readFileSync(doc, 'utf8')) as {
      files: Array<{ path: string; sha256: string; size: number }>;
    };
    if (edit === 'dropped') receipt.files = receipt.files.filter((f) => f.path !== rel);
    for (const owned of receipt.files)
      if (owned.path === rel) {
        owned.sha256 = `sha256:${createHash('sha256').update(body).digest('hex')}`;
        owned.size = Buffer.byteLength(body);
      }
    writeFileSync(doc, JSON.stringify(receipt, null, 2));
    const r = run([entry(root, 'install.js'), join(work, 'packages', 'none.tar.gz')]);
    refused(r, 'ERR_MODULE_UNOWNED', rel, marker);
    assert.match(r.stderr, /PKG-KERNEL-001's receipt and installed manifest disagree on it/, edit);
  }
});

interface RouteJson {
  outcome: string;
  content: string;
  provider_id: string;
}

const route = (root: string, provider: string, json = ['--json']): Run =>
  run([entry(root, 'cplane.js'), 'route', '--root', root, '--dev', '--prompt', 'hi', '--provider', provider, ...json]);

test('a provider package the router has never heard of is installed, not wired in, and routes', async () => {
  const { root } = attackRoot();
  const archive = await buildArchive(work, {
    id: 'PKG-PROVIDER-ECHO-001',
    layer: 2,
    deps: { 'PKG-KERNEL-001': '^0.1.0', 'PKG-PROVIDER-SPEC-001': '^0.1.0', 'PKG-PROVIDER-MOCK-001': '^0.1.0' },
    key: readFileSync(join(work, 'keys', 'cplane-signing.key'), 'utf8'),
    files: {
      'HOT/providers/echo/provider.js': [
        "import { MockProvider } from '#providers/mock/provider.js';",
        "export default { create: (o) => new MockProvider({ id: o.id, defaultResponse: 'echo: installed' }) };",
        '',
      ].join('\n'),
    },
  });
  const before = route(root, 'echo');
  assert.equal(before.status, 3, before.stdout);
  assert.match(before.stdout, /"code": "ERR_ROUTER_PROVIDER_UNAVAILABLE"/);
  const install = run([cplane, 'install', archive, '--root', root]);
  assert.equal(install.status, 0, install.stderr);
  const echo = route(root, 'echo');
  assert.equal(echo.status, 0, echo.stderr);
  assert.equal(echo.stderr, '');
  const answer = JSON.parse(echo.stdout) as RouteJson;
  assert.deepEqual([answer.outcome, answer.provider_id, answer.content], ['success', 'echo', 'echo: installed']);
  const mock = JSON.parse(route(root, 'mock').stdout) as RouteJson;
  assert.deepEqual([mock.provider_id, mock.content], ['mock', 'Mock response']);
});

test('an unowned provider module is never imported: skipped with ERR_MODULE_UNOWNED, refused when named', () => {
  const { root, marker, esm } = attackRoot();
  mkdirSync(join(root, 'HOT', 'providers', 'evil'));
  writeFileSync(
    join(root, 'HOT', 'providers', 'evil', 'provider.js'),
    `${esm}import { MockProvider } from '#providers/mock/provider.js';\n` +
      'export default { create: (o) => new MockProvider({ id: o.id }) };\n',
  );
  const mock = route(root, 'mock');
  assert.equal(mock.status, 0, mock.stderr);
  assert.equal((JSON.parse(mock.stdout) as RouteJson).outcome, 'success');
  assert.match(
    mock.stderr,
    /^cplane: warning: PROVIDER_SKIPPED: ERR_MODULE_UNOWNED: module "HOT\/providers\/evil\/provider\.js" is not owned.*\(provider evil skipped\)$/m,
  );
  refused(route(root, 'evil', []), 'ERR_MODULE_UNOWNED', 'HOT/providers/evil/provider.js', marker);
  assert.equal(existsSync(marker), false, 'the planted provider ran');
});

test('an owned provider module whose bytes were swapped is refused when named; the others still route', () => {
  const { root, marker, esm } = attackRoot();
  const path = join(root, 'HOT', 'providers', 'openai', 'provider.js');
  writeFileSync(path, esm + readFileSync(path, 'utf8'));
  refused(route(root, 'openai', []), 'ERR_MODULE_TAMPERED', 'HOT/providers/openai/provider.js', marker);
  const mock = route(root, 'mock');
  assert.equal(mock.status, 0, mock.stderr);
  assert.match(mock.stderr, /^cplane: warning: PROVIDER_SKIPPED: ERR_MODULE_TAMPERED: .*\(provider openai skipped\)$/m);
  assert.equal((JSON.parse(mock.stdout) as RouteJson).outcome, 'success');
  assert.equal(existsSync(marker), false, 'the swapped provider ran');
});
