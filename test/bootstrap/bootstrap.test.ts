// End to end: build CP_BOOTSTRAP, bootstrap a root outside the repository, then use the root on its own.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { newestBootstrap } from '../../scripts/commands/bootstrap.js';
import { REPO } from '../../scripts/lib/repo.js';
import { unpackBootstrap } from '../../scripts/lib/unpack-bootstrap.js';
import { rootPaths } from '../../staging/PKG-KERNEL-001/HOT/kernel/root/layout.js';

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
    const build = node(
      [cplane, 'build', '--out', join(buildDir, 'packages'), '--bootstrap-out', join(buildDir, 'bootstrap')],
      REPO,
    );
    assert.equal(build.status, 0, `cplane build failed: ${build.stderr}`);
    built = newestBootstrap(buildDir);
  }
  return built;
}

/** CP_BOOTSTRAP unpacked into a directory, to run its install.js directly (or after editing it). */
const unpack = unpackBootstrap;

test('bootstrap a root outside the repository; it then works on its own from any directory', async (t) => {
  const dir = temp(t);
  const root = join(dir, 'root');
  const run = node([cplane, 'bootstrap', bootstrapFile(), '--root', root, '--dev']);
  assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
  const plan = JSON.parse(
    readFileSync(join(await unpack(bootstrapFile(), join(dir, 'cpb')), 'bootstrap.json'), 'utf8'),
  ) as { packages: { package_id: string }[] };
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
  const packer = (await import(
    join(root, 'HOT/kernel/archive/pack.js')
  )) as typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/archive/pack.js');
  const body = Buffer.from('export const extra = true;\n');
  const manifest = {
    package_id: 'PKG-EXTRA-001',
    version: '0.1.0',
    schema_version: '1.0',
    title: 'extra',
    description: 'an extra package',
    layer: 3,
    plane_id: 'hot',
    dependencies: [{ package_id: 'PKG-KERNEL-001', version: '*' }],
    replaces: [],
    assets: [
      {
        path: 'HOT/extra/extra.js',
        sha256: `sha256:${createHash('sha256').update(body).digest('hex')}`,
        size: body.length,
        classification: 'kernel',
      },
    ],
  };
  const archive = join(dir, 'PKG-EXTRA-001-0.1.0.tar.gz');
  await packer.packArchive(
    [
      { path: 'manifest.json', data: Buffer.from(JSON.stringify(manifest)) },
      { path: 'HOT/extra/extra.js', data: body },
    ],
    archive,
  );
  const install = node([join(root, 'HOT/scripts/install.js'), '--dev', archive]);
  assert.equal(install.status, 0, install.stderr);
  assert.match(install.stdout, /installed PKG-EXTRA-001 0\.1\.0/);
  assert.equal(node([join(root, 'HOT/scripts/cplane.js'), 'verify']).status, 0);
});

test('bootstrap refuses an archive that does not match bootstrap.json, before creating anything', async (t) => {
  const dir = temp(t);
  const cpb = await unpack(bootstrapFile(), join(dir, 'cpb'));
  const plan = JSON.parse(readFileSync(join(cpb, 'bootstrap.json'), 'utf8')) as {
    packages: { package_id: string; file: string }[];
  };
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

test('a failing genesis removes the root; a failure at package k keeps packages before it, verifiable', async (t) => {
  const dir = temp(t);
  const cpb = await unpack(bootstrapFile(), join(dir, 'cpb'));
  // Unsigned packages without --dev: refused in genesis, so nothing may remain.
  const unsigned = node([join(cpb, 'install.js'), '--root', join(dir, 'r1')]);
  assert.notEqual(unsigned.status, 0);
  assert.match(unsigned.stderr, /ERR_SIGNATURE_(MISSING|UNTRUSTED)/);
  assert.equal(existsSync(join(dir, 'r1')), false);

  // Break the first package after genesis: bootstrap.json pins garbage bytes, which the installer refuses.
  const planPath = join(cpb, 'bootstrap.json');
  const plan = JSON.parse(readFileSync(planPath, 'utf8')) as {
    packages: { package_id: string; layer: number; file: string; integrity: string }[];
  };
  const victim = plan.packages.find((p) => p.layer > 0);
  if (!victim) return;
  const broken = Buffer.from('this is not a package archive');
  writeFileSync(join(cpb, victim.file), broken);
  victim.integrity = `sha512-${createHash('sha512').update(broken).digest('base64')}`;
  writeFileSync(planPath, JSON.stringify(plan));
  const root = join(dir, 'r2');
  const run = node([join(cpb, 'install.js'), '--root', root, '--dev']);
  assert.equal(run.status, 3, run.stdout + run.stderr);
  assert.match(run.stderr, /cplane: ERR_[A-Z_]+: package 1 of \d+/);
  // Every installed file verifies; the one finding is the unfinished bootstrap.
  const verify = node([join(root, 'HOT/scripts/cplane.js'), 'verify', '--json']);
  assert.equal(verify.status, 1, verify.stdout + verify.stderr);
  const findings = (JSON.parse(verify.stdout) as { findings: { problem: string; package_id: string }[] }).findings;
  assert.ok(findings.length > 0 && findings.every((f) => f.problem === 'bootstrap_incomplete'), verify.stdout);
  assert.equal(findings[0]?.package_id, victim.package_id);
  const list = JSON.parse(node([join(root, 'HOT/scripts/cplane.js'), 'list', '--json']).stdout) as {
    packages: { layer: number }[];
  };
  assert.ok(list.packages.length > 0 && list.packages.every((p) => p.layer === 0));
});

test('a bootstrap killed during genesis leaves a marked root; the next one clears it and finishes; nothing else is cleared', async (t) => {
  const dir = temp(t);
  const cpb = await unpack(bootstrapFile(), join(dir, 'cpb'));
  const root = join(dir, 'root');
  const killed = spawnSync(process.execPath, [join(cpb, 'install.js'), '--root', root, '--dev'], {
    encoding: 'utf8',
    env: { ...process.env, CPLANE_TEST_CRASH_AT: 'after-files@PKG-RUNTIME-001' },
  });
  assert.equal(killed.signal, 'SIGKILL', killed.stdout + killed.stderr);
  assert.deepEqual(readdirSync(root).sort(), ['.cplane-bootstrap-incomplete', 'HOT']);
  const unfinished = node([cplane, 'verify', '--root', root, '--json']);
  assert.equal(unfinished.status, 1, unfinished.stdout + unfinished.stderr);
  assert.ok(
    (JSON.parse(unfinished.stdout) as { findings: { problem: string; path: string }[] }).findings.some(
      (f) => f.problem === 'bootstrap_incomplete' && f.path === '.cplane-bootstrap-incomplete',
    ),
    unfinished.stdout,
  );
  const again = node([join(cpb, 'install.js'), '--root', root, '--dev']);
  assert.equal(again.status, 0, again.stdout + again.stderr);
  assert.match(again.stdout, /removed an interrupted genesis/);
  assert.deepEqual(readdirSync(root), ['HOT']);
  const verify = node([join(root, 'HOT/scripts/cplane.js'), 'verify']);
  assert.equal(verify.status, 0, verify.stdout + verify.stderr);

  const other = join(dir, 'other');
  mkdirSync(rootPaths(other).hot, { recursive: true });
  writeFileSync(join(other, 'notes.txt'), 'mine');
  const refused = node([join(cpb, 'install.js'), '--root', other, '--dev']);
  assert.equal(refused.status, 3);
  assert.match(refused.stderr, /ERR_ROOT_NOT_EMPTY/);
  assert.deepEqual(readdirSync(other).sort(), ['HOT', 'notes.txt']);
  const file = join(other, 'notes.txt');
  const notADirectory = node([join(cpb, 'install.js'), '--root', file, '--dev']);
  assert.equal(notADirectory.status, 3);
  assert.match(notADirectory.stderr, /ERR_ROOT_NOT_EMPTY: .* exists and is not a directory/);
  assert.equal(readFileSync(file, 'utf8'), 'mine');
});

test('a bootstrap killed at package k leaves a root that says it is unfinished; bootstrapping again or --resume finishes it', async (t) => {
  const dir = temp(t);
  const cpb = await unpack(bootstrapFile(), join(dir, 'cpb'));
  const plan = JSON.parse(readFileSync(join(cpb, 'bootstrap.json'), 'utf8')) as {
    packages: { package_id: string; version: string; layer: number }[];
  };
  const rest = plan.packages.filter((p) => p.layer > 0);
  assert.ok(rest.length >= 3, 'the plan has packages after genesis');
  const root = join(dir, 'root');
  const cli = join(root, 'HOT/scripts/cplane.js');
  const pending = join(root, 'HOT/registries/bootstrap-pending.json');
  const k = rest[2]!;
  // Killed while committing package k (its journal written, files moved): the next command rolls it forward.
  const killed = spawnSync(process.execPath, [join(cpb, 'install.js'), '--root', root, '--dev'], {
    encoding: 'utf8',
    env: { ...process.env, CPLANE_TEST_CRASH_AT: `after-files@${k.package_id}` },
  });
  assert.equal(killed.signal, 'SIGKILL', killed.stdout + killed.stderr);
  assert.deepEqual(readdirSync(root), ['HOT'], 'genesis finished: no genesis mark');
  assert.equal(existsSync(pending), true);

  const verify = node([cli, 'verify', '--json']);
  assert.equal(verify.status, 1, verify.stdout + verify.stderr);
  const findings = (JSON.parse(verify.stdout) as { findings: { problem: string; package_id: string }[] }).findings;
  assert.deepEqual(
    findings.map((f) => [f.problem, f.package_id]),
    rest.slice(3).map((p) => ['bootstrap_incomplete', p.package_id]),
    'package k was rolled forward by the repair; the packages after it are reported missing',
  );
  // The gates package comes last, so the root has none yet: this build's gates check it.
  const { runGates } = (await import(
    pathToFileURL(join(REPO, 'build/root/HOT/gates/run.js')).href
  )) as typeof import('../../gates/PKG-GATES-001/HOT/gates/run.js');
  const g2 = (await runGates(root, { only: ['G2'] })).gates[0]!;
  assert.equal(g2.status, 'FAIL', JSON.stringify(g2));
  assert.deepEqual(
    g2.findings.map((f) => f.code),
    ['BOOTSTRAP_INCOMPLETE'],
  );
  assert.match(g2.findings[0]!.message, new RegExp(rest.at(-1)!.package_id));

  // Bootstrapping into the root again resumes it (and may itself be killed: the record stays until the end).
  const last = rest.at(-1)!;
  const again = spawnSync(process.execPath, [join(cpb, 'install.js'), '--root', root, '--dev'], {
    encoding: 'utf8',
    env: { ...process.env, CPLANE_TEST_CRASH_AT: `after-ledger@${last.package_id}` },
  });
  assert.equal(again.signal, 'SIGKILL', again.stdout + again.stderr);
  assert.match(
    again.stdout,
    new RegExp(`resuming the unfinished bootstrap .*: ${rest.length - 3} of ${rest.length} package`),
  );
  assert.equal(existsSync(pending), true);
  assert.equal(node([cli, 'verify']).status, 1);

  const resumed = node([cplane, 'bootstrap', bootstrapFile(), '--root', root, '--dev', '--resume']);
  assert.equal(resumed.status, 0, resumed.stdout + resumed.stderr);
  assert.match(resumed.stdout, /resuming the unfinished bootstrap .*: 0 of \d+ package/);
  assert.equal(existsSync(pending), false);
  const done = node([cli, 'verify']);
  assert.equal(done.status, 0, done.stdout + done.stderr);
  const list = JSON.parse(node([cli, 'list', '--json']).stdout) as { packages: { package_id: string }[] };
  assert.deepEqual(list.packages.map((p) => p.package_id).sort(), plan.packages.map((p) => p.package_id).sort());
  const allGates = node([join(root, 'HOT/scripts/gate_check.js'), '--all', '--json']);
  assert.equal(allGates.status, 0, allGates.stdout + allGates.stderr);
  const installs = node([cli, 'ledger', 'query', '--event-type', 'INSTALLED', '--limit', '1000', '--json']);
  const installed = (JSON.parse(installs.stdout) as { submission_id: string }[]).map((e) => e.submission_id);
  assert.equal(installed.length, plan.packages.length, `each package installed exactly once: ${installed.join(', ')}`);

  // Nothing left to resume: refused, the root untouched.
  const nothing = node([cplane, 'bootstrap', bootstrapFile(), '--root', root, '--dev', '--resume']);
  assert.equal(nothing.status, 3, nothing.stdout + nothing.stderr);
  assert.match(nothing.stdout + nothing.stderr, /ERR_BOOTSTRAP_NOT_RESUMABLE/);
  const fresh = node([cplane, 'bootstrap', bootstrapFile(), '--root', join(dir, 'new'), '--dev', '--resume']);
  assert.match(fresh.stdout + fresh.stderr, /ERR_BOOTSTRAP_NOT_RESUMABLE/);
  assert.equal(existsSync(join(dir, 'new')), false);
});

test('genesis files are checked before any kernel code runs: a changed, extra, linked or missing one is refused, nothing created', async (t) => {
  const dir = temp(t);
  const cpb = await unpack(bootstrapFile(), join(dir, 'cpb'));
  const root = join(dir, 'root');
  const entry = join(cpb, 'genesis/HOT/kernel/installer/entry.js');
  const original = readFileSync(entry);
  const stray = join(cpb, 'genesis/HOT/node_modules/better-sqlite3/build/better_sqlite3.node');
  const link = join(cpb, 'genesis/HOT/kernel/link.js');
  const cases: Array<[string, () => void, () => void, RegExp]> = [
    // Were it run, this entry would exit 0 at once: the refusal shows the check came first.
    [
      'changed',
      () => writeFileSync(entry, Buffer.concat([Buffer.from('process.exit(0);\n'), original])),
      () => writeFileSync(entry, original),
      /ERR_BOOTSTRAP_INTEGRITY: genesis\/HOT\/kernel\/installer\/entry\.js has \d+ bytes/,
    ],
    [
      'extra',
      () => writeFileSync(stray, 'ELF'),
      () => rmSync(stray),
      /ERR_BOOTSTRAP_INTEGRITY: genesis\/HOT\/node_modules\/better-sqlite3\/build\/better_sqlite3\.node is not listed/,
    ],
    [
      'linked',
      () => symlinkSync(entry, link),
      () => rmSync(link),
      /ERR_BOOTSTRAP_INTEGRITY: genesis\/HOT\/kernel\/link\.js is not a regular file/,
    ],
    [
      'missing',
      () => rmSync(entry),
      () => writeFileSync(entry, original),
      /ERR_BOOTSTRAP_GENESIS_MISSING: .*HOT\/kernel\/installer\/entry\.js/,
    ],
  ];
  for (const [name, breakIt, repair, expected] of cases) {
    breakIt();
    const run = node([join(cpb, 'install.js'), '--root', root, '--dev']);
    assert.equal(run.status, 3, `${name}: ${run.stdout}${run.stderr}`);
    assert.match(run.stderr, expected, name);
    assert.equal(existsSync(root), false, name);
    repair();
  }
  const repaired = node([join(cpb, 'install.js'), '--root', root, '--dev']);
  assert.equal(repaired.status, 0, repaired.stdout + repaired.stderr);
});

test('a signed build bootstraps without --dev when its key is trusted with --trust; every receipt says valid', (t) => {
  const dir = temp(t);
  const keys = node([cplane, 'keys', 'generate', '--out', join(dir, 'keys')], REPO);
  assert.equal(keys.status, 0, keys.stderr);
  const build = node(
    [
      cplane,
      'build',
      '--sign-key',
      join(dir, 'keys/cplane-signing.key'),
      '--out',
      join(dir, 'packages'),
      '--bootstrap-out',
      join(dir, 'bootstrap'),
    ],
    REPO,
  );
  assert.equal(build.status, 0, build.stderr);
  const root = join(dir, 'root');
  const run = node([
    cplane,
    'bootstrap',
    newestBootstrap(dir),
    '--root',
    root,
    '--trust',
    join(dir, 'keys/cplane-signing.pub'),
  ]);
  assert.equal(run.status, 0, run.stdout + run.stderr);
  assert.doesNotMatch(run.stdout, /waived/);
  const list = JSON.parse(node([join(root, 'HOT/scripts/cplane.js'), 'list', '--json']).stdout) as {
    packages: { signature: string; dev_waiver: boolean }[];
  };
  assert.ok(list.packages.length > 0);
  assert.ok(
    list.packages.every((p) => p.signature === 'valid' && !p.dev_waiver),
    JSON.stringify(list.packages),
  );
});
