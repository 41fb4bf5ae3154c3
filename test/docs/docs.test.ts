// The docs cannot drift. Every ```sh runnable block of README.md and docs/ runs, in order, in one scratch directory
// (the README's tour bootstraps the root the later pages use): it must exit as the block says (`exit=N`, else 0)
// and print, in order, the lines of the ```text output block right after it. Every relative link and #anchor
// between the pages resolves, every repository path they quote exists, and every component has its page. The
// extending guide's example package, taken from its ```ts file=… blocks, builds, installs and serves a call.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { REPO } from '../../scripts/lib/repo.js';
import { buildPackage } from '../../scripts/build/package.js';

const CPLANE = join(REPO, 'bin', 'cplane.js');
const SCRATCH = mkdtempSync(join(tmpdir(), 'cplane-docs-'));
/** The root the README's tour bootstraps, relative to the scratch directory. */
const TOUR_ROOT = join(SCRATCH, 'build', 'tour-root');
after(() => rmSync(SCRATCH, { recursive: true, force: true }));

function markdownFiles(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true })
      .sort((a, b) => (a.name < b.name ? -1 : 1))
      .flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.md') ? [join(dir, e.name)] : []));
  return ['README.md', ...walk(join(REPO, 'docs')).map((abs) => relative(REPO, abs))];
}

interface Block {
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** 0-based index of the closing fence's line. */
  end: number;
  info: string[];
  body: string;
  /** The lines of a ```text output block following it, blank lines aside. */
  expect?: string[];
}

function blocks(file: string): Block[] {
  const lines = readFileSync(join(REPO, file), 'utf8').split('\n');
  const out: Block[] = [];
  for (let i = 0; i < lines.length; i += 1) {
    const open = /^```(\S.*)?$/.exec(lines[i] as string);
    if (open === null) continue;
    const end = lines.indexOf('```', i + 1);
    assert.ok(end > i, `${file}:${i + 1}: a code block is never closed`);
    const info = (open[1] ?? '').split(/\s+/).filter(Boolean);
    const block: Block = { file, line: i + 1, end, info, body: lines.slice(i + 1, end).join('\n') };
    const previous = out[out.length - 1];
    if (info.join(' ') === 'text output') {
      const adjacent =
        previous !== undefined &&
        lines.slice(previous.end + 1, i).every((l) => l.trim() === '') &&
        isRunnable(previous);
      assert.ok(adjacent, `${file}:${i + 1}: a text output block must follow the runnable block it describes`);
      previous.expect = block.body.split('\n').filter((l) => l.trim() !== '');
    }
    out.push(block);
    i = end;
  }
  return out;
}

const isRunnable = (b: Block): boolean => b.info[0] === 'sh' && b.info.includes('runnable');

/** `npx cplane …` in a block runs this checkout's bin/cplane.js; any other npx package is refused. */
function shimDir(): string {
  const dir = join(SCRATCH, '.doc-bin');
  mkdirSync(dir, { recursive: true });
  const npx = join(dir, 'npx');
  writeFileSync(
    npx,
    `#!/bin/sh\nif [ "$1" = cplane ]; then shift; exec ${JSON.stringify(process.execPath)} ${JSON.stringify(CPLANE)} "$@"; fi\n` +
      'echo "doc test: a runnable block may run only npx cplane" >&2; exit 127\n',
  );
  chmodSync(npx, 0o755);
  return dir;
}

/**
 * The environment a reader starts from: none of cplane's or the providers' variables set. Nor c8's: the commands
 * run the tour root's code, which no coverage report counts, and collecting it would only slow every one.
 */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!/^(CPLANE_|ANTHROPIC_|OPENAI_|MISTRAL_|PG|NODE_V8_COVERAGE$)/.test(k)) env[k] = v;
  }
  return env;
}

test('every runnable shell block in README.md and docs/ runs and prints what the docs say', () => {
  const runnable = markdownFiles().flatMap((f) => blocks(f).filter(isRunnable));
  assert.ok(runnable.length >= 6, `only ${runnable.length} runnable blocks: the marker is not being found`);
  assert.equal(runnable[0]?.file, 'README.md', "the README's tour runs first: it bootstraps the root");
  const env = { ...cleanEnv(), PATH: `${shimDir()}:${process.env.PATH ?? ''}` };
  for (const block of runnable) {
    const where = `${block.file}:${block.line}`;
    const exitSpec = block.info.find((w) => w.startsWith('exit='));
    const expected = exitSpec === undefined ? 0 : Number(exitSpec.slice(5));
    const r = spawnSync('bash', ['-c', `set -eo pipefail\n${block.body}`], {
      cwd: SCRATCH,
      env,
      encoding: 'utf8',
      // The tour's first block builds, signs and bootstraps every package: ~30 s on a quiet 2-core machine, over a
      // minute when the suite's other files share the cores. The bound only catches a block that hangs.
      timeout: 300_000,
    });
    const output = `${r.stdout}${r.stderr}`;
    assert.equal(
      r.status,
      expected,
      `${where}: exit ${r.status} (signal ${r.signal}), expected ${expected}\n${output}`,
    );
    let from = 0;
    for (const want of block.expect ?? []) {
      const at = output.indexOf(want, from);
      assert.ok(at >= 0, `${where}: the output lacks ${JSON.stringify(want)} (in order)\n${output}`);
      from = at + want.length;
    }
  }
});

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens. */
const slug = (heading: string): string =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

const withoutBlocks = (file: string): string =>
  readFileSync(join(REPO, file), 'utf8').replace(/^```[\s\S]*?^```$/gm, '');

/** The text links are taken from: no code blocks, no code spans. */
const prose = (file: string): string => withoutBlocks(file).replace(/`[^`\n]*`/g, '');

function anchors(file: string): Set<string> {
  return new Set([...withoutBlocks(file).matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1] as string)));
}

test('every relative link and #anchor between the docs resolves', () => {
  const problems: string[] = [];
  for (const file of markdownFiles()) {
    for (const match of prose(file).matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = match[1] as string;
      if (/^[a-z]+:/.test(target)) continue;
      const [path = '', anchor] = target.split('#');
      const abs = path === '' ? join(REPO, file) : resolve(REPO, dirname(file), path);
      if (!existsSync(abs)) problems.push(`${file}: ${target}: no such file`);
      else if (anchor !== undefined && !anchors(relative(REPO, abs)).has(anchor))
        problems.push(`${file}: ${target}: no heading with that anchor`);
    }
  }
  assert.deepEqual(problems, []);
});

test('every component has its architecture page, the README stays short, and quoted repository paths exist', () => {
  const pages = [
    'packages-and-roots',
    'installer',
    'loader-and-trust',
    'ledger',
    'checkpoints',
    'budgeter',
    'governed-core',
    'gateway',
    'console',
    'gates',
    'compiler',
    'dispatch',
    'storage',
  ];
  for (const page of pages) {
    const text = readFileSync(join(REPO, 'docs', 'architecture', `${page}.md`), 'utf8');
    for (const part of ['**Owns:**', '**Invariants**', '**Files:**', '**Called by:**'])
      assert.ok(text.includes(part), `docs/architecture/${page}.md lacks ${part}`);
  }
  const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
  assert.ok(readme.split('\n').length <= 201, 'README.md is over 200 lines: move the detail into docs/');
  // The two commands are a contract (`.ci/run` runs the second): they stay, word for word, under their heading.
  const commands = readme.slice(readme.indexOf('## The two commands'));
  assert.match(
    commands,
    /^```sh\nnpm ci && npm run bootstrap {3}# the main job[^\n]*\nnpm ci && npm test {12}# the tests[^\n]*\n```$/m,
  );
  const ci = readFileSync(join(REPO, '.ci', 'run'), 'utf8');
  assert.match(ci, /^npm ci --no-audit --no-fund\nnpm test\n$/m, ".ci/run runs the README's test command");
  const missing: string[] = [];
  for (const file of markdownFiles()) {
    for (const match of readFileSync(join(REPO, file), 'utf8').matchAll(
      /`((?:staging|gates|scripts|test|bin)\/[^`\s]+)`/g,
    )) {
      const path = match[1] as string;
      if (/[<>*{}…]/.test(path)) continue;
      // A compiled module is quoted by its .js name; its source is the .ts beside where it would be.
      if (!existsSync(join(REPO, path)) && !existsSync(join(REPO, path.replace(/\.js$/, '.ts'))))
        missing.push(`${file}: ${path}`);
    }
  }
  assert.deepEqual(missing, []);
});

const run = promisify(execFile);

async function cplane(args: string[], env: NodeJS.ProcessEnv = cleanEnv()): Promise<string> {
  try {
    return (await run(process.execPath, [CPLANE, ...args], { cwd: SCRATCH, env, encoding: 'utf8' })).stdout;
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; code?: number };
    assert.fail(`cplane ${args.join(' ')} exited ${e.code}\n${e.stderr ?? ''}${e.stdout ?? ''}`);
  }
}

/** Mistral's API as its documentation shows it: POST /v1/chat/completions with a Bearer key, an OpenAI-style reply. */
async function mistralServer(key: string): Promise<{ url: string; seen: IncomingMessage[]; close: () => void }> {
  const seen: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    seen.push(req);
    let text = '';
    req.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
    });
    req.on('end', () => {
      if (req.headers.authorization !== `Bearer ${key}`) {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"message":"Unauthorized"}');
        return;
      }
      const body = JSON.parse(text) as { model: string; messages: { role: string; content: string }[] };
      const reply = {
        id: 'cmpl-e5cc70bb28c444948073e77776eb30ef',
        object: 'chat.completion',
        model: body.model,
        usage: { prompt_tokens: 16, completion_tokens: 34, total_tokens: 50 },
        created: 1702256327,
        choices: [
          {
            index: 0,
            message: {
              content: `Bonjour! You said: ${body.messages.at(-1)?.content}`,
              tool_calls: null,
              role: 'assistant',
            },
            finish_reason: 'stop',
          },
        ],
      };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(reply));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, seen, close: () => server.close() };
}

test("the extending guide's example package builds, installs, routes to a Mistral-format upstream, and its command and gate run", async (t) => {
  assert.ok(existsSync(TOUR_ROOT), "the README's tour did not bootstrap its root (see the runnable-blocks test)");
  const files = blocks('docs/extending.md').flatMap((b) => {
    const spec = b.info.find((w) => w.startsWith('file='));
    return spec === undefined ? [] : [{ path: spec.slice(5), body: `${b.body}\n` }];
  });
  assert.deepEqual(files.map((f) => f.path).sort(), [
    'HOT/cli/commands/providers.ts',
    'HOT/gates/checks/x1-providers.ts',
    'HOT/providers/mistral/provider.ts',
    'manifest.template.json',
  ]);
  // As `npm run build` and `cplane build` do: the template beside HOT/, each module compiled to its .js.
  const source = join(SCRATCH, 'example', 'src');
  const laidOut = join(SCRATCH, 'example', 'pkg');
  for (const { path, body } of files) {
    const ts_ = path.endsWith('.ts');
    const to = join(ts_ ? laidOut : source, ts_ ? path.replace(/\.ts$/, '.js') : path);
    mkdirSync(dirname(to), { recursive: true });
    const js = ts.transpileModule(body, {
      compilerOptions: { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022 },
    }).outputText;
    writeFileSync(to, ts_ ? js : body);
  }
  const built = await buildPackage({
    repo: REPO,
    sourceDir: source,
    pkgDir: laidOut,
    outDir: join(SCRATCH, 'example'),
    signingKeyPem: null,
  });
  assert.equal(built.manifest.package_id, 'PKG-MISTRAL-001');
  await cplane(['install', '--root', TOUR_ROOT, '--dev', built.path]);
  await cplane([
    'config',
    'set',
    '--root',
    TOUR_ROOT,
    'budget.pricing["mistral-small-latest"]',
    '{"input_per_mtok": 0.1, "output_per_mtok": 0.3, "cache_read_per_mtok": 0.1, "cache_write_5m_per_mtok": 0.1, "cache_write_1h_per_mtok": 0.1}',
  ]);

  const key = 'mistral-TEST-KEY-must-never-leak-0123456789abcdef';
  const upstream = await mistralServer(key);
  t.after(upstream.close);
  const env = { ...cleanEnv(), MISTRAL_BASE_URL: upstream.url, MISTRAL_API_KEY: key };
  const routed = JSON.parse(
    await cplane(
      [
        'route',
        '--root',
        TOUR_ROOT,
        '--provider',
        'mistral',
        '--model',
        'mistral-small-latest',
        '--prompt',
        'Hello',
        '--dev',
        '--json',
      ],
      env,
    ),
  ) as Record<string, unknown>;
  assert.match(JSON.stringify(routed), /Bonjour! You said: Hello/);
  assert.equal(upstream.seen.length, 1);
  assert.equal(upstream.seen[0]?.method, 'POST');
  assert.equal(upstream.seen[0]?.url, '/v1/chat/completions');
  const ledger = await cplane(['ledger', 'export', '--root', TOUR_ROOT, '--text']);
  assert.match(ledger, /Dispatching to mistral\/mistral-small-latest/);
  assert.ok(!ledger.includes(key), 'the upstream key is never recorded');

  const listed = JSON.parse(await cplane(['providers', '--root', TOUR_ROOT, '--json'])) as {
    providers: { id: string; serves: string[] }[];
  };
  assert.deepEqual(
    listed.providers.find((p) => p.id === 'mistral'),
    { id: 'mistral', serves: ['openai.chat', 'openai.models'] },
  );
  const gates = await cplane(['gate-check', '--root', TOUR_ROOT, '--gate', 'G0', 'G1', 'G2', 'X1']);
  assert.match(gates, /X1 PROVIDERS: PASS — \d+ providers load: (\w+, )*mistral(, \w+)*\n/);
});
