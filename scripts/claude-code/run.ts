// `npm run claude-code`: the opt-in check that Claude Code, unmodified, works through `cplane serve`. Claude Code
// (pinned by scripts/claude-code/pin/package-lock.json, installed into build/peers/claude-code: ~400 MB, so not part of
// `npm test`) runs headless (`claude -p`) with its base URL pointed at the gateway, which forwards to the tests'
// local upstream (real Anthropic wire format, streaming and tool use). The check: Claude Code exits 0 with the
// upstream's answer, every call it made is one EXCHANGE on the surface it used, its session header is the
// EXCHANGE's session, nothing was refused, no key reached the ledger, and the chain verifies.
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startUpstream } from '../../test/gateway/upstream.js';
import { entriesFromExport } from '../lib/export-entries.js';
import { BUILD, REPO } from '../lib/repo.js';
import { bootstrapServedRoot, cplaneCli, startServe, stopAll } from '../lib/served-root.js';

const SOURCE = join(REPO, 'scripts', 'claude-code', 'pin');
const DIR = join(BUILD, 'peers', 'claude-code');
const AUTH_SECRET = 'claude-code-check-auth-secret-0123456789';
const KEYS = { anthropic: 'sk-ant-upstream-CHECK-0123456789', openai: 'sk-openai-upstream-CHECK-0123456789' };

/** A child's exit status and output, without blocking this process's event loop; killed after `timeout` ms. */
function runAsync(
  command: string,
  args: string[],
  options: { cwd: string; timeout: number; env: NodeJS.ProcessEnv },
): Promise<{ status: number | null; stdout: string; stderr: string }> {
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

function fail(message: string): never {
  process.stderr.write(`claude-code check: FAIL: ${message}\n`);
  process.exit(1);
}

/** The native binary from the pinned lockfile (its postinstall, which only copies it, is not needed). */
function install(): string {
  const lock = join(SOURCE, 'package-lock.json');
  const binary = join(DIR, 'node_modules', '@anthropic-ai', `claude-code-linux-${process.arch}`, 'claude');
  const current = existsSync(join(DIR, 'package-lock.json')) && readFileSync(join(DIR, 'package-lock.json'), 'utf8');
  if (!existsSync(binary) || current !== readFileSync(lock, 'utf8')) {
    mkdirSync(DIR, { recursive: true });
    for (const file of ['package.json', 'package-lock.json']) copyFileSync(join(SOURCE, file), join(DIR, file));
    process.stderr.write('claude-code check: installing Claude Code from scripts/claude-code/pin/package-lock.json…\n');
    const npm = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: DIR, stdio: 'inherit' });
    if (npm.status !== 0) fail(`npm ci exited ${npm.status}`);
  }
  if (!existsSync(binary)) fail(`no Claude Code binary for ${process.platform}-${process.arch} at ${binary}`);
  return binary;
}

const binary = install();
const work = mkdtempSync(join(tmpdir(), 'cp-claude-code-'));
const { root, key } = bootstrapServedRoot(work, AUTH_SECRET, 'AGENT-CLAUDE-CODE');
const upstream = await startUpstream(KEYS);
const served = await startServe(root, {
  CPLANE_AUTH_SECRET: AUTH_SECRET,
  ANTHROPIC_BASE_URL: upstream.url,
  ANTHROPIC_API_KEY: KEYS.anthropic,
});
let code = 0;
try {
  const home = join(work, 'home');
  mkdirSync(home);
  // Asynchronously: the local upstream answers from this process's event loop.
  const run = await runAsync(
    binary,
    [
      '-p',
      'Say hello to cplane',
      '--output-format',
      'json',
      '--model',
      'claude-sonnet-4-5',
      '--max-turns',
      '2',
      ...(process.env.CLAUDE_CODE_DEBUG ? ['--debug'] : []),
    ],
    {
      cwd: work,
      timeout: Number(process.env.CLAUDE_CODE_TIMEOUT_MS ?? 180_000),
      env: {
        PATH: process.env.PATH,
        HOME: home,
        ANTHROPIC_BASE_URL: served.url,
        ANTHROPIC_API_KEY: key,
        ANTHROPIC_SMALL_FAST_MODEL: 'claude-haiku-4-5',
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        DISABLE_AUTOUPDATER: '1',
        DISABLE_TELEMETRY: '1',
        DISABLE_ERROR_REPORTING: '1',
      },
    },
  );
  process.stderr.write(
    `claude-code check: claude -p exited ${run.status} (${upstream.requests.length} upstream requests)\n${run.stderr.slice(-4000)}${process.env.CLAUDE_CODE_DEBUG ? run.stdout.slice(-4000) : ''}`,
  );
  const seen = upstream.requests.filter((r) => r.path === '/v1/messages');
  const entries = entriesFromExport(cplaneCli(['ledger', 'export', '--root', root]));
  const exchanges = entries.filter((e) => e.event_type === 'EXCHANGE');
  const refused = entries.filter((e) => e.event_type === 'PROMPT_REJECTED');
  const summary = (e: { event_type: string; metadata: Record<string, unknown> }): unknown => [
    e.event_type,
    e.metadata.surface ?? e.metadata.contract_id,
    e.metadata.model_id,
    e.metadata.error_code ?? e.metadata.outcome,
    e.metadata.error_message,
  ];
  if (run.status !== 0)
    fail(
      `claude -p exited ${run.status}: ${run.stdout.slice(-2000)}\nledger: ${JSON.stringify([...exchanges, ...refused].map(summary))}`,
    );
  const answer = JSON.parse(run.stdout) as { result?: string; session_id?: string; is_error?: boolean };
  if (answer.is_error === true) fail(`Claude Code reported an error: ${run.stdout.slice(-2000)}`);
  const messages = exchanges.filter((e) => e.metadata.surface === 'anthropic.messages');
  if (refused.length > 0) fail(`refusals: ${JSON.stringify(refused.map((e) => e.metadata.error_message))}`);
  if (messages.length === 0 || messages.length !== seen.length)
    fail(`${seen.length} messages calls reached the upstream, ${messages.length} EXCHANGEs recorded them`);
  if (answer.session_id && !messages.some((e) => e.metadata.session_id === answer.session_id))
    fail(`no EXCHANGE carries Claude Code's session ${answer.session_id}`);
  const exported = JSON.stringify(entries);
  if (exported.includes(key) || exported.includes(KEYS.anthropic)) fail('a key reached the ledger');
  cplaneCli(['ledger', 'verify', '--root', root]);
  process.stdout.write(
    `claude-code check: PASS: Claude Code answered ${JSON.stringify(answer.result ?? '').slice(0, 120)}; ` +
      `${exchanges.length} EXCHANGEs (${messages.length} messages, streamed: ${messages.filter((e) => e.metadata.stream === true).length}) ` +
      `in session ${answer.session_id ?? '?'}; ledger verified\n`,
  );
} catch (error) {
  code = 1;
  process.stderr.write(`claude-code check: FAIL: ${error instanceof Error ? error.message : String(error)}\n`);
} finally {
  await stopAll([served.child]);
  await upstream.close();
  rmSync(work, { recursive: true, force: true });
}
process.exit(code);
