// End to end: build CP_BOOTSTRAP, bootstrap a root outside the repository, then use the root on its own.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { readTarGz } from '../../bootstrap/entry/tar.js';
import { newestBootstrap } from '../../scripts/commands/bootstrap.js';
import { REPO } from '../../scripts/lib/repo.js';

const cplane = join(REPO, 'bin', 'cplane.js');
const node = (args: string[], cwd = tmpdir()) => spawnSync(process.execPath, args, { cwd, encoding: 'utf8' });

function temp(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'cp-e2e-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

let built: string | undefined;
const buildDir = mkdtempSync(join(tmpdir(), 'cp-e2e-build-'));
after(() => rmSync(buildDir, { recursive: true, force: true }));

/** A fresh build of the packages and CP_BOOTSTRAP, into a temporary directory (once per file). */
function bootstrapFile(): string {
  if (!built) {
    const build = node([cplane, 'build', '--out', join(buildDir, 'packages'), '--bootstrap-out', join(buildDir, 'bootstrap')], REPO);
    assert.equal(build.status, 0, `cplane build failed: ${build.stderr}`);
    built = newestBootstrap(buildDir);
  }
  return built;
}

/** CP_BOOTSTRAP unpacked into a directory, to run its install.js directly (or after editing it). */
function unpack(file: string, into: string): string {
  for (const member of readTarGz(readFileSync(file))) {
    mkdirSync(dirname(join(into, member.path)), { recursive: true });
    writeFileSync(join(into, member.path), member.data);
  }
  return into;
}

test('bootstrap a root outside the repository; it then works on its own from any directory', async (t) => {
  const dir = temp(t);
  const root = join(dir, 'root');
  const run = node([cplane, 'bootstrap', bootstrapFile(), '--root', root, '--dev']);
  assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
  const plan = JSON.parse(readFileSync(join(unpack(bootstrapFile(), join(dir, 'cpb')), 'bootstrap.json'), 'utf8')) as { packages: { package_id: string }[] };
  const progress = run.stdout.split('\n').filter((l) => /^\[\d+\/\d+\] installed PKG-/.test(l));
  assert.equal(progress.length, plan.packages.length, run.stdout);
  for (const line of progress) assert.match(line, /\(\d+ ms\)$/);
  assert.equal(existsSync(join(root, 'HOT/node_modules/better-sqlite3')), true);
  assert.deepEqual(readdirSync(root), ['HOT'], 'no genesis leftovers');

  const verify = node([join(root, 'HOT/scripts/cplane.js'), 'verify']);
  assert.equal(verify.status, 0, verify.stdout + verify.stderr);
  const list = node([join(root, 'HOT/scripts/cplane.js'), 'list', '--json']);
  assert.equal((JSON.parse(list.stdout) as { packages: unknown[] }).packages.length, plan.packages.length);
  if (existsSync(join(root, 'HOT/cli/commands/ledger.js'))) {
    const ledger = node([join(root, 'HOT/scripts/ledger.js'), 'verify']);
    assert.equal(ledger.status, 0, ledger.stdout + ledger.stderr);
  }

  // A new package, installed by the root's own installer; the root's packer builds it.
  const packer = await import(join(root, 'HOT/kernel/archive/pack.js')) as typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/archive/pack.js');
  const body = Buffer.from('export const extra = true;\n');
  const manifest = {
    package_id: 'PKG-EXTRA-001', version: '0.1.0', schema_version: '1.0', title: 'extra', description: 'an extra package', layer: 3, plane_id: 'hot',
    dependencies: [{ package_id: 'PKG-KERNEL-001', version: '*' }], replaces: [],
    assets: [{ path: 'HOT/extra/extra.js', sha256: `sha256:${createHash('sha256').update(body).digest('hex')}`, size: body.length, classification: 'kernel' }],
  };
  const archive = join(dir, 'PKG-EXTRA-001-0.1.0.tar.gz');
  await packer.packArchive([{ path: 'manifest.json', data: Buffer.from(JSON.stringify(manifest)) }, { path: 'HOT/extra/extra.js', data: body }], archive);
  const install = node([join(root, 'HOT/scripts/install.js'), '--dev', archive]);
  assert.equal(install.status, 0, install.stderr);
  assert.match(install.stdout, /installed PKG-EXTRA-001 0\.1\.0/);
  assert.equal(node([join(root, 'HOT/scripts/cplane.js'), 'verify']).status, 0);
});

test('bootstrap refuses an archive that does not match bootstrap.json, before creating anything', (t) => {
  const dir = temp(t);
  const cpb = unpack(bootstrapFile(), join(dir, 'cpb'));
  const plan = JSON.parse(readFileSync(join(cpb, 'bootstrap.json'), 'utf8')) as { packages: { package_id: string; file: string }[] };
  const victim = plan.packages.at(-1)!;
  const path = join(cpb, victim.file);
  const bytes = readFileSync(path);
  bytes.writeUInt8(bytes.readUInt8(bytes.length - 1) ^ 0xff, bytes.length - 1);
  writeFileSync(path, bytes);
  const run = node([join(cpb, 'install.js'), '--root', join(dir, 'root'), '--dev']);
  assert.equal(run.status, 3);
  assert.match(run.stderr, new RegExp(`ERR_BOOTSTRAP_INTEGRITY: ${victim.package_id}`));
  assert.equal(existsSync(join(dir, 'root')), false);
});

test('a failing genesis removes the root; a failure at package k keeps packages before it, verifiable', (t) => {
  const dir = temp(t);
  const cpb = unpack(bootstrapFile(), join(dir, 'cpb'));
  // Unsigned packages without --dev: refused in genesis, so nothing may remain.
  const unsigned = node([join(cpb, 'install.js'), '--root', join(dir, 'r1')]);
  assert.notEqual(unsigned.status, 0);
  assert.match(unsigned.stderr, /ERR_SIGNATURE_(MISSING|UNTRUSTED)/);
  assert.equal(existsSync(join(dir, 'r1')), false);

  // Break the first package after genesis: bootstrap.json pins garbage bytes, which the installer refuses.
  const planPath = join(cpb, 'bootstrap.json');
  const plan = JSON.parse(readFileSync(planPath, 'utf8')) as { packages: { package_id: string; layer: number; file: string; integrity: string }[] };
  const victim = plan.packages.find((p) => p.layer > 0);
  if (!victim) return;
  const broken = Buffer.from('this is not a package archive');
  writeFileSync(join(cpb, victim.file), broken);
  victim.integrity = `sha256:${createHash('sha256').update(broken).digest('hex')}`;
  writeFileSync(planPath, JSON.stringify(plan));
  const root = join(dir, 'r2');
  const run = node([join(cpb, 'install.js'), '--root', root, '--dev']);
  assert.equal(run.status, 3, run.stdout + run.stderr);
  assert.match(run.stderr, /cplane: ERR_[A-Z_]+: package 1 of \d+/);
  assert.equal(node([join(root, 'HOT/scripts/cplane.js'), 'verify']).status, 0);
  const list = JSON.parse(node([join(root, 'HOT/scripts/cplane.js'), 'list', '--json']).stdout) as { packages: { layer: number }[] };
  assert.ok(list.packages.length > 0 && list.packages.every((p) => p.layer === 0));
});

test('a signed build bootstraps without --dev when its key is trusted with --trust; every receipt says valid', (t) => {
  const dir = temp(t);
  const keys = node([cplane, 'keys', 'generate', '--out', join(dir, 'keys')], REPO);
  assert.equal(keys.status, 0, keys.stderr);
  const build = node([cplane, 'build', '--sign-key', join(dir, 'keys/cplane-signing.key'), '--out', join(dir, 'packages'), '--bootstrap-out', join(dir, 'bootstrap')], REPO);
  assert.equal(build.status, 0, build.stderr);
  const root = join(dir, 'root');
  const run = node([cplane, 'bootstrap', newestBootstrap(dir), '--root', root, '--trust', join(dir, 'keys/cplane-signing.pub')]);
  assert.equal(run.status, 0, run.stdout + run.stderr);
  assert.doesNotMatch(run.stdout, /waived/);
  const list = JSON.parse(node([join(root, 'HOT/scripts/cplane.js'), 'list', '--json']).stdout) as { packages: { signature: string; dev_waiver: boolean }[] };
  assert.ok(list.packages.length > 0);
  assert.ok(list.packages.every((p) => p.signature === 'valid' && !p.dev_waiver), JSON.stringify(list.packages));
});
