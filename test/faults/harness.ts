// Shared pieces of the fault-injection suite: one build of the packages and CP_BOOTSTRAP, a template root
// bootstrapped once and copied per scenario, and a classifier that turns a command's exit into its outcome.
import assert from 'node:assert/strict';
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newestBootstrap } from '../../scripts/commands/bootstrap.js';
import { REPO } from '../../scripts/lib/repo.js';

export const CPLANE = join(REPO, 'bin', 'cplane.js');

export interface Built {
  dir: string;
  packages: string;
  bootstrap: string;
  template: string;
}

let built: Built | undefined;

/** Build once per test file; the template root is bootstrapped from that build (--dev: no signing key). */
export function buildOnce(): Built {
  if (built) return built;
  const dir = mkdtempSync(join(tmpdir(), 'cp-faults-build-'));
  const build = run(['build', '--out', join(dir, 'packages'), '--bootstrap-out', join(dir, 'bootstrap')], REPO);
  assert.equal(build.status, 0, `cplane build failed: ${build.stderr}`);
  const bootstrap = newestBootstrap(dir);
  const template = join(dir, 'template');
  const boot = run(['bootstrap', bootstrap, '--root', template, '--dev']);
  assert.equal(boot.status, 0, `bootstrap failed: ${boot.stdout}${boot.stderr}`);
  built = { dir, packages: join(dir, 'packages'), bootstrap, template };
  return built;
}

export function cleanupBuild(): void {
  if (built) rmSync(built.dir, { recursive: true, force: true });
  built = undefined;
}

export function run(args: readonly string[], cwd = tmpdir(), env: NodeJS.ProcessEnv = {}): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [CPLANE, ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, ...env },
    maxBuffer: 64 * 1024 * 1024,
  });
}

/** A fresh copy of the template root at `dest` (SQLite files are closed between commands, so a copy is consistent). */
export function copyRoot(dest: string): string {
  cpSync(buildOnce().template, dest, { recursive: true });
  return dest;
}

export function archive(packageId: string): string {
  return join(buildOnce().packages, `${packageId}-0.1.0.tar.gz`);
}

export function tasksFile(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'tasks.md');
  writeFileSync(path, '# Tasks\n\n- [ ] 1. First task\n- [ ] 2. Second task\n');
  return path;
}

/** How a command ended: OK, CHECK_FAILED (exit 1, a reported problem), a coded ERR_…, or INTERNAL (a bug). */
export function outcomeOf(result: SpawnSyncReturns<string>): string {
  const text = `${result.stdout ?? ''}\n${result.stderr ?? ''}`;
  if (result.status === 0) return 'OK';
  if (/\bERR_INTERNAL\b/.test(text) || result.status === 70 || result.status === null) return 'INTERNAL';
  const code = /\b(ERR_[A-Z0-9_]+)\b/.exec(text)?.[1];
  if (result.status === 1) return code ?? 'CHECK_FAILED';
  return code ?? 'INTERNAL';
}

/** A tally of every case the suite drove, printed at the end of each file and asserted free of INTERNAL. */
export class Tally {
  readonly cases: Array<{ name: string; outcome: string }> = [];

  record(name: string, result: SpawnSyncReturns<string>): string {
    const outcome = outcomeOf(result);
    this.cases.push({ name, outcome });
    assert.notEqual(outcome, 'INTERNAL', `${name} ended in an internal error:\n${result.stdout}\n${result.stderr}`);
    return outcome;
  }

  summary(): string {
    const counts = new Map<string, number>();
    for (const c of this.cases) counts.set(c.outcome, (counts.get(c.outcome) ?? 0) + 1);
    return `${this.cases.length} fault cases, none ERR_INTERNAL: ${[...counts].map(([k, v]) => `${k}×${v}`).join(', ')}`;
  }
}

/** The root is whole: every owned file matches its receipt (after any repair) and the ledger chain verifies. */
export function assertRootWhole(root: string, label: string): SpawnSyncReturns<string> {
  const verify = run(['verify', '--root', root]);
  assert.equal(verify.status, 0, `${label}: verify\n${verify.stdout}${verify.stderr}`);
  const ledger = run(['ledger', 'verify', '--root', root]);
  assert.equal(ledger.status, 0, `${label}: ledger verify\n${ledger.stdout}${ledger.stderr}`);
  return verify;
}

export function assertGatesPass(root: string, label: string): void {
  const gates = run(['gate-check', '--root', root]);
  assert.equal(gates.status, 0, `${label}: gate-check\n${gates.stdout}${gates.stderr}`);
}

export { seeded } from '../../scripts/lib/seeded.js';
