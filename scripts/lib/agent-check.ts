// The one runner of the opt-in agent checks (`npm run claude-code|gemini-cli|codex-cli`): install the agent from its
// pinned lockfile into build/peers/<name>, bootstrap a signed root and issue a route key, start the agent's local
// upstream and `cplane serve` in front of it, run the agent headless against the gateway, then check the ledger:
// the agent exited 0, nothing was refused, no key reached the ledger, the agent's own checks hold, and the chain
// verifies. Each script is a config of this runner: its upstream, its command line, its checks.
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { entriesFromExport, type ExportedEntry } from './export-entries.js';
import { BUILD, REPO } from './repo.js';
import { bootstrapServedRoot, cplaneCli, startServe, stopAll } from './served-root.js';

/** A failed check: the runner reports it and exits 1 after stopping what it started. */
export class CheckFailed extends Error {}

/** Fail the check with `message`. */
export function fail(message: string): never {
  throw new CheckFailed(message);
}

/** The agent's local upstream, as the runner drives it. */
export interface AgentUpstream {
  /** The environment `cplane serve` gets (the upstream's base URL and key). */
  serveEnv: NodeJS.ProcessEnv;
  /** Upstream keys that must never reach the ledger. */
  secrets: string[];
  /** What the exit line says of the upstream's traffic ("3 upstream requests"). */
  describe(): string;
  close(): Promise<void>;
}

export interface AgentRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** The ledger after the run: every entry, the EXCHANGEs, the refusals. */
export interface AgentLedger {
  entries: ExportedEntry[];
  exchanges: ExportedEntry[];
  refused: ExportedEntry[];
}

/** Where the run happens: a fresh temporary directory and, inside it, the agent's project directory. */
export interface AgentWork {
  work: string;
  project: string;
}

export interface AgentCheck {
  /** The script's name: scripts/<name>/pin holds the lockfile, build/peers/<name> the install, messages say it. */
  name: string;
  /** Who the PASS line says answered ("Claude Code"). */
  product: string;
  /** The agent's command as the exit line names it ("claude -p"). */
  command: string;
  /** The installed entry, under build/peers/<name>; or a path to an agent already on disk (no install). */
  entry: string[] | { path: string };
  /** A JS entry run with this Node, else a native binary. */
  viaNode: boolean;
  /** `npm ci` arguments beyond `--no-audit --no-fund` (`--ignore-scripts` when the postinstall is not needed). */
  npmArgs: string[];
  /** The agent id the route key is issued to. */
  agent: string;
  /** The variable that overrides the run's timeout (ms; default 180 s), and the one that asks for debug output. */
  timeoutEnv: string;
  debugEnv: string;
  /** The local upstream the gateway forwards to. */
  upstream(work: AgentWork): Promise<AgentUpstream>;
  /** Configure the root before `cplane serve` opens it, once the upstream runs (a routing section naming it). */
  configure?(root: string): void;
  /** The agent's arguments, environment and working directory, against the gateway at `url` with `key`. */
  invocation(
    work: AgentWork,
    gateway: { url: string; key: string },
  ): { args: string[]; env: NodeJS.ProcessEnv; cwd: string };
  /** The agent's own checks once it exited 0 (fail() on a broken one); the PASS line's summary. */
  check(run: AgentRun, ledger: AgentLedger): string;
}

/** A child's exit status and output, without blocking this process's event loop; killed after `timeout` ms. */
export function runAsync(
  command: string,
  args: string[],
  options: { cwd: string; timeout: number; env: NodeJS.ProcessEnv },
): Promise<AgentRun> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString('utf8');
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString('utf8');
    });
    const timer = setTimeout(() => child.kill('SIGTERM'), options.timeout);
    child.once('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

/** The agent from its pinned lockfile, installed again only when the lockfile changed or the entry is missing. */
function install(check: AgentCheck): string {
  if (!Array.isArray(check.entry)) return check.entry.path;
  const source = join(REPO, 'scripts', check.name, 'pin');
  const dir = join(BUILD, 'peers', check.name);
  const lock = join(source, 'package-lock.json');
  const entry = join(dir, ...check.entry);
  const current = existsSync(join(dir, 'package-lock.json')) && readFileSync(join(dir, 'package-lock.json'), 'utf8');
  if (!existsSync(entry) || current !== readFileSync(lock, 'utf8')) {
    mkdirSync(dir, { recursive: true });
    for (const file of ['package.json', 'package-lock.json']) copyFileSync(join(source, file), join(dir, file));
    process.stderr.write(
      `${check.name} check: installing ${check.product} from scripts/${check.name}/pin/package-lock.json…\n`,
    );
    const npm = spawnSync('npm', ['ci', '--no-audit', '--no-fund', ...check.npmArgs], { cwd: dir, stdio: 'inherit' });
    if (npm.status !== 0) fail(`npm ci exited ${npm.status}`);
  }
  if (!existsSync(entry)) fail(`no ${check.product} for ${process.platform}-${process.arch} at ${entry}`);
  return entry;
}

/** One ledger entry as a failure message shows it. */
const summary = (e: ExportedEntry): unknown => [
  e.event_type,
  e.metadata.surface ?? e.metadata.contract_id,
  e.metadata.model_id,
  e.metadata.error_code ?? e.metadata.outcome,
  e.metadata.error_message,
];

/** The checks every agent shares, then the agent's own; the PASS line's summary. */
function verify(check: AgentCheck, run: AgentRun, root: string, secrets: string[]): string {
  const entries = entriesFromExport(cplaneCli(['ledger', 'export', '--root', root]));
  const ledger: AgentLedger = {
    entries,
    exchanges: entries.filter((e) => e.event_type === 'EXCHANGE'),
    refused: entries.filter((e) => e.event_type === 'PROMPT_REJECTED'),
  };
  if (run.status !== 0)
    fail(
      `${check.command} exited ${run.status}: ${run.stdout.slice(-2000)}\nledger: ${JSON.stringify([...ledger.exchanges, ...ledger.refused].map(summary))}`,
    );
  if (ledger.refused.length > 0)
    fail(`refusals: ${JSON.stringify(ledger.refused.map((e) => e.metadata.error_message))}`);
  const said = check.check(run, ledger);
  const exported = JSON.stringify(entries);
  if (secrets.some((s) => exported.includes(s))) fail('a key reached the ledger');
  cplaneCli(['ledger', 'verify', '--root', root]);
  return said;
}

/** Run one agent check end to end; resolves with the process exit code (0: PASS). Never exits the process itself. */
export async function runAgentCheck(check: AgentCheck): Promise<number> {
  const say = (line: string): void => {
    process.stderr.write(`${check.name} check: ${line}\n`);
  };
  let work: AgentWork | null = null;
  let upstream: AgentUpstream | null = null;
  let served: Awaited<ReturnType<typeof startServe>> | null = null;
  try {
    const entry = install(check);
    const dir = mkdtempSync(join(tmpdir(), `cp-${check.name}-`));
    work = { work: dir, project: join(dir, 'project') };
    mkdirSync(work.project);
    const { root, key } = bootstrapServedRoot(work.work, `${check.name}-check-auth-secret-0123456789`, check.agent);
    upstream = await check.upstream(work);
    check.configure?.(root);
    served = await startServe(root, {
      CPLANE_AUTH_SECRET: `${check.name}-check-auth-secret-0123456789`,
      ...upstream.serveEnv,
    });
    const { args, env, cwd } = check.invocation(work, { url: served.url, key });
    const debug = Boolean(process.env[check.debugEnv]);
    // Asynchronously: the local upstream answers from this process's event loop.
    const run = await runAsync(check.viaNode ? process.execPath : entry, check.viaNode ? [entry, ...args] : args, {
      cwd,
      timeout: Number(process.env[check.timeoutEnv] ?? 180_000),
      env,
    });
    say(
      `${check.command} exited ${run.status} (${upstream.describe()})\n${run.stderr.slice(-4000)}${debug ? run.stdout.slice(-4000) : ''}`,
    );
    const said = verify(check, run, root, [key, ...upstream.secrets]);
    process.stdout.write(`${check.name} check: PASS: ${check.product} answered ${said}; ledger verified\n`);
    return 0;
  } catch (error) {
    say(`FAIL: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  } finally {
    if (served !== null) await stopAll([served.child]);
    await upstream?.close();
    if (work !== null) rmSync(work.work, { recursive: true, force: true });
  }
}
