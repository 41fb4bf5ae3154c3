// `npm run gemini-cli`: the opt-in check that Gemini CLI, unmodified, works through `cplane serve`. Gemini CLI (pinned
// by scripts/gemini-cli/pin/package-lock.json, installed into build/peers/gemini-cli, so not part of `npm test`) runs
// headless (`gemini -p`) with GOOGLE_GEMINI_BASE_URL pointed at the gateway and its cplane key as GEMINI_API_KEY; the
// gateway forwards to a local fake of the Gemini API (the tests' fixture: Google's wire format, SSE streaming, function
// calls), which answers the task with a call of the CLI's own `list_directory` tool, then with text once the CLI sends
// the tool's result. The check: the CLI exits 0 with that answer, every generation it made is one EXCHANGE on the
// surface it used, the tool round trip is among them, nothing was refused, no key reached the ledger, and the chain
// verifies.
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type GeminiAnswer,
  type GeminiSeen,
  GeminiServer,
} from '../../staging/PKG-PROVIDER-GEMINI-001/HOT/tests/providers/fixtures/gemini-server.js';
import { entriesFromExport } from '../lib/export-entries.js';
import { BUILD, REPO } from '../lib/repo.js';
import { bootstrapServedRoot, cplaneCli, startServe, stopAll } from '../lib/served-root.js';

const SOURCE = join(REPO, 'scripts', 'gemini-cli', 'pin');
const DIR = join(BUILD, 'peers', 'gemini-cli');
const AUTH_SECRET = 'gemini-cli-check-auth-secret-0123456789';
const UPSTREAM_KEY = 'AIzaSyUPSTREAM-gemini-cli-CHECK-0123456789';
const ANSWER = 'The directory holds notes.txt.';

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
  process.stderr.write(`gemini-cli check: FAIL: ${message}\n`);
  process.exit(1);
}

/** The CLI's bundle from the pinned lockfile (its optional native helpers, for terminals and keychains, not needed). */
function install(): string {
  const lock = join(SOURCE, 'package-lock.json');
  const entry = join(DIR, 'node_modules', '@google', 'gemini-cli', 'bundle', 'gemini.js');
  const current = existsSync(join(DIR, 'package-lock.json')) && readFileSync(join(DIR, 'package-lock.json'), 'utf8');
  if (!existsSync(entry) || current !== readFileSync(lock, 'utf8')) {
    mkdirSync(DIR, { recursive: true });
    for (const file of ['package.json', 'package-lock.json']) copyFileSync(join(SOURCE, file), join(DIR, file));
    process.stderr.write('gemini-cli check: installing Gemini CLI from scripts/gemini-cli/pin/package-lock.json…\n');
    const npm = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: DIR, stdio: 'inherit' });
    if (npm.status !== 0) fail(`npm ci exited ${npm.status}`);
  }
  if (!existsSync(entry)) fail(`no Gemini CLI at ${entry}`);
  return entry;
}

type Json = Record<string, unknown>;
const asJson = (v: unknown): Json | null =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : null;

/** The CLI's declaration of `name` in a request's tools, if it offers it. */
function declared(body: Json | null, name: string): Json | null {
  for (const tool of Array.isArray(body?.tools) ? body.tools : []) {
    const list = asJson(tool)?.functionDeclarations;
    for (const fn of Array.isArray(list) ? list : []) if (asJson(fn)?.name === name) return asJson(fn);
  }
  return null;
}

/**
 * The fake model: a JSON-mode request (the CLI's own checks, such as who speaks next) gets a JSON answer; a turn
 * carrying a tool's result gets the final text; a turn offering `list_directory` gets a call of it on the work
 * directory, its arguments filled from the declaration's required string parameters.
 */
function responder(workdir: string): (seen: GeminiSeen) => GeminiAnswer | undefined {
  return (seen) => {
    const body = seen.body;
    const config = asJson(body?.generationConfig);
    if (config?.responseMimeType === 'application/json' || config?.responseJsonSchema !== undefined)
      return { text: JSON.stringify({ next_speaker: 'user', reasoning: 'The task is complete.' }) };
    const contents = Array.isArray(body?.contents) ? (body.contents as Json[]) : [];
    const last = contents.at(-1);
    const parts = Array.isArray(last?.parts) ? (last.parts as Json[]) : [];
    if (parts.some((p) => p.functionResponse !== undefined)) return { text: ANSWER };
    const tool = declared(body, 'list_directory');
    if (tool === null) return { text: ANSWER };
    const schema = asJson(tool.parametersJsonSchema) ?? asJson(tool.parameters);
    const required = Array.isArray(schema?.required) ? (schema.required as string[]) : [];
    const args: Json = {};
    for (const name of required.length > 0 ? required : ['dir_path']) args[name] = workdir;
    return { functionCall: { name: 'list_directory', args } };
  };
}

const entry = install();
const work = mkdtempSync(join(tmpdir(), 'cp-gemini-cli-'));
const workdir = join(work, 'project');
mkdirSync(workdir);
writeFileSync(join(workdir, 'notes.txt'), 'cplane\n');
const { root, key } = bootstrapServedRoot(work, AUTH_SECRET, 'AGENT-GEMINI-CLI');
const upstream = await GeminiServer.start(UPSTREAM_KEY, responder(workdir));
const served = await startServe(root, {
  CPLANE_AUTH_SECRET: AUTH_SECRET,
  GOOGLE_GEMINI_BASE_URL: upstream.url,
  GEMINI_API_KEY: UPSTREAM_KEY,
});
let code = 0;
try {
  const home = join(work, 'home');
  // API-key auth chosen in the user's settings (with a base URL set, the CLI would otherwise pick its `gateway`
  // auth type, which headless mode refuses); no usage statistics or update checks leave the machine.
  mkdirSync(join(home, '.gemini'), { recursive: true });
  writeFileSync(
    join(home, '.gemini', 'settings.json'),
    JSON.stringify({
      security: { auth: { selectedType: 'gemini-api-key' } },
      privacy: { usageStatisticsEnabled: false },
      general: { disableAutoUpdate: true, disableUpdateNag: true },
    }),
  );
  // Asynchronously: the fake upstream answers from this process's event loop.
  const run = await runAsync(
    process.execPath,
    [
      entry,
      '-p',
      'List the files in this directory.',
      '--model',
      'gemini-2.5-flash',
      '--output-format',
      'json',
      '--approval-mode',
      'yolo',
      ...(process.env.GEMINI_CLI_DEBUG ? ['--debug'] : []),
    ],
    {
      cwd: workdir,
      timeout: Number(process.env.GEMINI_CLI_TIMEOUT_MS ?? 180_000),
      env: {
        PATH: process.env.PATH,
        HOME: home,
        GOOGLE_GEMINI_BASE_URL: served.url,
        GEMINI_API_KEY: key,
        // Headless, the CLI runs tools only in a trusted folder.
        GEMINI_CLI_TRUST_WORKSPACE: 'true',
        GEMINI_CLI_NO_RELAUNCH: 'true',
        NO_BROWSER: 'true',
        CI: '1',
      },
    },
  );
  process.stderr.write(
    `gemini-cli check: gemini -p exited ${run.status} (${upstream.seen.length} upstream requests: ${[...new Set(upstream.seen.map((s) => s.path.replace(/^.*:/, ':')))].join(' ')})\n${run.stderr.slice(-4000)}${process.env.GEMINI_CLI_DEBUG ? run.stdout.slice(-4000) : ''}`,
  );
  const generations = upstream.seen.filter((s) => /:(generateContent|streamGenerateContent)$/.test(s.path));
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
      `gemini -p exited ${run.status}: ${run.stdout.slice(-2000)}\nledger: ${JSON.stringify([...exchanges, ...refused].map(summary))}`,
    );
  const answer = JSON.parse(run.stdout.slice(run.stdout.indexOf('{'))) as { response?: string; error?: unknown };
  if (answer.error !== undefined && answer.error !== null)
    fail(`Gemini CLI reported an error: ${run.stdout.slice(-2000)}`);
  if (!String(answer.response ?? '').includes(ANSWER))
    fail(`the answer is not the upstream's: ${run.stdout.slice(-2000)}`);
  if (refused.length > 0) fail(`refusals: ${JSON.stringify(refused.map((e) => e.metadata.error_message))}`);
  const governed = exchanges.filter(
    (e) => e.metadata.surface === 'gemini.generate' || e.metadata.surface === 'gemini.stream',
  );
  if (governed.length === 0 || governed.length !== generations.length)
    fail(`${generations.length} generations reached the upstream, ${governed.length} EXCHANGEs recorded them`);
  const called = governed.filter((e) => e.metadata.finish_reason === 'tool_use');
  const listed = upstream.seen.some((s) => JSON.stringify(s.body?.contents ?? []).includes('"functionResponse"'));
  if (called.length === 0 || !listed) fail('no tool round trip went through the gateway');
  if (governed.some((e) => e.metadata.usage_complete !== true)) fail('an EXCHANGE has incomplete usage');
  const exported = JSON.stringify(entries);
  if (exported.includes(key) || exported.includes(UPSTREAM_KEY)) fail('a key reached the ledger');
  cplaneCli(['ledger', 'verify', '--root', root]);
  process.stdout.write(
    `gemini-cli check: PASS: Gemini CLI answered ${JSON.stringify(answer.response ?? '').slice(0, 120)}; ` +
      `${exchanges.length} EXCHANGEs (${governed.length} generations, streamed: ${governed.filter((e) => e.metadata.stream === true).length}, tool calls: ${called.length}); ledger verified\n`,
  );
} catch (error) {
  code = 1;
  process.stderr.write(`gemini-cli check: FAIL: ${error instanceof Error ? error.message : String(error)}\n`);
} finally {
  await stopAll([served.child]);
  await upstream.close();
  rmSync(work, { recursive: true, force: true });
}
process.exit(code);
