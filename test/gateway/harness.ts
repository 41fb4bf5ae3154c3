// A bootstrapped root, the local upstream and `cplane serve` started as a real process on it, for the SDK tests.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { entriesFromExport } from '../../scripts/lib/export-entries.js';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';
import { REPO } from '../../scripts/lib/repo.js';
import { bootstrapSignedRoot, cplane } from '../lib/signed-root.js';
import { startUpstream, type Upstream } from './upstream.js';

export const KEYS = { anthropic: 'sk-ant-upstream-SECRET-0123456789', openai: 'sk-openai-upstream-SECRET-0123456789' };
export const AUTH_SECRET = 'gateway-test-auth-secret-0123456789abcdef';

export interface Served {
  root: string;
  url: string;
  upstream: Upstream;
  process: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** Send SIGTERM and wait for the exit code. */
  stop(): Promise<number | null>;
  cleanup(): Promise<void>;
}

export function cli(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [cplane, ...args], {
    cwd: REPO,
    encoding: 'utf8',
    // An export of a long session is megabytes; the default 1 MiB would kill the child.
    maxBuffer: 1 << 30,
    env: { ...process.env, ...env },
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A token from `cplane token issue --json`, as a client would get it. */
export function issueKey(agent: string, scopes: string[] = ['route:*']): string {
  const r = cli(['token', 'issue', '--agent', agent, '--scope', ...scopes, '--json'], {
    CPLANE_AUTH_SECRET: AUTH_SECRET,
  });
  assert.equal(r.status, 0, r.stderr);
  return (JSON.parse(r.stdout) as { token: string }).token;
}

export function ledgerEntries(
  root: string,
): Array<{ id: string; event_type: string; decision: string; metadata: Record<string, unknown> }> {
  const r = cli(['ledger', 'export', '--root', root]);
  assert.equal(r.status, 0, r.stderr);
  return entriesFromExport(r.stdout);
}

const { chainBudgetRecords } =
  await fromDevRoot<typeof import('../../staging/PKG-BUDGETER-001/HOT/budgeter/records.js')>('HOT/budgeter/records.js');

/** The root's budget records in chain order: standalone, or unfolded from the DISPATCH or EXCHANGE carrying them. */
export function budgetEntries(root: string): ReturnType<typeof ledgerEntries> {
  return chainBudgetRecords(ledgerEntries(root));
}

/** The budget records among entries already read, folded ones unfolded (`budgetEntries` without a second export). */
export function budgetRecordsIn(entries: ReturnType<typeof ledgerEntries>): ReturnType<typeof ledgerEntries> {
  return chainBudgetRecords(entries);
}

/** `cplane config set` on a root, as its operator would (the gateway reads it when it starts). */
export function configSet(root: string, key: string, value: string): void {
  const r = cli(['config', 'set', key, value, '--root', root]);
  assert.equal(r.status, 0, r.stderr);
}

/**
 * A served root; `beforeStart` configures the bootstrapped root before `cplane serve` opens it; `extraEnv` is added to
 * the gateway's environment (a cloud provider's credentials).
 */
export async function startServed(
  extraArgs: string[] = [],
  beforeStart: (root: string) => void = () => {},
  extraEnv: NodeJS.ProcessEnv = {},
): Promise<Served> {
  const work = mkdtempSync(join(tmpdir(), 'cp-gateway-'));
  const root = join(work, 'root');
  bootstrapSignedRoot(join(work, 'build'), root);
  beforeStart(root);
  const upstream = await startUpstream(KEYS);
  const env = {
    ...process.env,
    CPLANE_AUTH_SECRET: AUTH_SECRET,
    ANTHROPIC_BASE_URL: upstream.url,
    ANTHROPIC_API_KEY: KEYS.anthropic,
    OPENAI_BASE_URL: upstream.url,
    OPENAI_API_KEY: KEYS.openai,
    ...extraEnv,
  };
  // The root runs on its own: its entry script, not the repository's CLI.
  const child = spawn(
    process.execPath,
    [join(root, 'HOT', 'scripts', 'cplane.js'), 'serve', '--root', root, '--port', '0', '--json-log', ...extraArgs],
    { env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString('utf8');
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString('utf8');
      const match = /"url":"([^"]+)"/.exec(err);
      if (match?.[1]) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`cplane serve exited ${code}: ${err}`)));
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    root,
    url,
    upstream,
    process: child,
    stdout: () => out,
    stderr: () => err,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
    async cleanup() {
      if (child.exitCode === null) child.kill('SIGKILL');
      await upstream.close();
      rmSync(work, { recursive: true, force: true });
    },
  };
}
