// Diagnosis runs on damage: a root where one owned non-code file was replaced by a symbolic link still runs the
// commands meant to diagnose it (gate-check, verify, status, list), each naming the link, and nothing reads through
// the link (it leads to a FIFO, which would hang whoever opened it). A link where code belongs still refuses all.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, symlinkSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rootPaths } from '../../staging/PKG-KERNEL-001/HOT/kernel/root/layout.js';
import { bootstrapSignedRoot } from '../lib/signed-root.js';

const work = mkdtempSync(join(tmpdir(), 'cp-damaged-'));
const pristine = join(work, 'pristine');
const LINKED = 'HOT/compiler/examples/spec.example.json';

before(() => {
  bootstrapSignedRoot(work, pristine);
});
after(() => rmSync(work, { recursive: true, force: true }));

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** The root's own entry script, as an operator runs it; a read through the FIFO would hang it past the timeout. */
function cplane(root: string, args: string[]): Run {
  const r = spawnSync(process.execPath, [join(rootPaths(root).scripts, 'cplane.js'), ...args, '--root', root], {
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A copy of the pristine root with `rel` replaced by a link to a FIFO outside the root. */
function linkedRoot(name: string, rel: string): string {
  const root = join(work, name);
  cpSync(pristine, root, { recursive: true, verbatimSymlinks: true });
  const fifo = join(work, `${name}.fifo`);
  const made = spawnSync('mkfifo', [fifo]);
  assert.equal(made.status, 0, String(made.stderr));
  unlinkSync(join(root, rel));
  symlinkSync(fifo, join(root, rel));
  return root;
}

test('a symlinked owned non-code file: gate-check, verify, status and list run and name it', () => {
  const root = linkedRoot('json-link', LINKED);
  const gates = cplane(root, ['gate-check', '--all', '--json']);
  assert.equal(gates.status, 1, `${gates.stdout}\n${gates.stderr}`);
  const report = JSON.parse(gates.stdout) as {
    gates: Array<{ id: string; status: string; findings: Array<{ code: string; path?: string }> }>;
  };
  for (const id of ['G0', 'G1']) {
    const gate = report.gates.find((g) => g.id === id);
    assert.equal(gate?.status, 'FAIL', id);
    assert.ok(
      gate?.findings.some((f) => f.path === LINKED),
      `${id}: ${JSON.stringify(gate?.findings)}`,
    );
  }
  // The other gates still ran: the damage is one file's, not the root's.
  const others = report.gates.filter((g) => g.id !== 'G0' && g.id !== 'G1');
  assert.ok(others.length >= 6 && others.every((g) => g.status === 'PASS'), gates.stdout);
  const verify = cplane(root, ['verify']);
  assert.equal(verify.status, 1, `${verify.stdout}\n${verify.stderr}`);
  assert.ok(verify.stdout.includes(LINKED), verify.stdout);
  for (const command of [['status'], ['list'], ['list', '--json']]) {
    const r = cplane(root, command);
    assert.equal(r.status, 0, `${command.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, /warning: ERR_MODULE_UNOWNED: .*spec\.example\.json" is a symbolic link/, r.stderr);
  }
  assert.ok(
    (JSON.parse(cplane(root, ['list', '--json']).stdout) as { packages: unknown[] }).packages.length > 10,
    'list --json still lists the packages',
  );
});

test('a symlink where an owned module belongs still refuses every command (it could be loaded as code)', () => {
  const root = linkedRoot('js-link', 'HOT/compiler/index.js');
  const list = cplane(root, ['list']);
  assert.equal(list.status, 3, `${list.stdout}\n${list.stderr}`);
  assert.match(list.stderr, /ERR_MODULE_UNOWNED: "HOT\/compiler\/index\.js" is a symbolic link/);
});
