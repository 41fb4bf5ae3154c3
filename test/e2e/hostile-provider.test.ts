// Fault suite, hostile provider: a real 127.0.0.1 server sends odd bytes after (or instead of) a real
// answer, and route() — in-process and through `cplane route` on a bootstrapped root — must end every case
// in success or a coded outcome, with the EXCHANGE committed, the ledger verifying, the provider's key in no
// record, a reply cut off after HTTP 200 kept charged as unknown, and never ERR_INTERNAL.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';
import { DEV_ROOT, REPO } from '../../scripts/lib/repo.js';
import { configPath, rootPaths } from '../../staging/PKG-KERNEL-001/HOT/kernel/root/layout.js';

const { Router } =
  await fromDevRoot<typeof import('../../staging/PKG-ROUTER-001/HOT/router/router.js')>('HOT/router/router.js');
const { budgetRecordsOf } =
  await fromDevRoot<typeof import('../../staging/PKG-BUDGETER-001/HOT/budgeter/records.js')>('HOT/budgeter/records.js');
const { loadRouterConfig } =
  await fromDevRoot<typeof import('../../staging/PKG-ROUTER-001/HOT/router/config.js')>('HOT/router/config.js');
const { OpenAiProvider } = await fromDevRoot<
  typeof import('../../staging/PKG-PROVIDER-OPENAI-001/HOT/providers/openai/provider.js')
>('HOT/providers/openai/provider.js');
const { AnthropicProvider } = await fromDevRoot<
  typeof import('../../staging/PKG-PROVIDER-ANTHROPIC-001/HOT/providers/anthropic/provider.js')
>('HOT/providers/anthropic/provider.js');
const { Ledger, verifyLedger } =
  await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/index.js')>(
    'HOT/kernel/ledger/index.js',
  );
const { Budgeter } =
  await fromDevRoot<typeof import('../../staging/PKG-BUDGETER-001/HOT/budgeter/index.js')>('HOT/budgeter/index.js');

const KEY = 'sk-hostile-test-key-0123456789';
const cplane = join(REPO, 'bin', 'cplane.js');

type Wire = 'openai' | 'anthropic';
type Handler = (req: IncomingMessage, res: ServerResponse) => void;

interface HostileCase {
  name: string;
  wire: Wire;
  handler: Handler;
  /** 'success' or the error_code the route must end in. */
  expect: string;
  /** The failure came after a 2xx: the reservation stays charged as unknown. */
  billed?: boolean;
  /** Checked against the success response's content. */
  content?: (content: string) => void;
}

function completion(
  content: unknown,
  usage: unknown = { prompt_tokens: 3, completion_tokens: 2 },
): Record<string, unknown> {
  return {
    id: 'c1',
    model: 'gpt-test',
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    usage,
  };
}

function message(text: string, usage: unknown): Record<string, unknown> {
  return { type: 'message', model: 'claude-test', content: [{ type: 'text', text }], stop_reason: 'end_turn', usage };
}

const send =
  (
    status: number,
    body: string | Buffer,
    headers: Record<string, string> = { 'content-type': 'application/json' },
  ): Handler =>
  (_req, res) => {
    res.writeHead(status, headers);
    res.end(body);
  };
const json = (value: unknown, status = 200): Handler => send(status, JSON.stringify(value));
const deepJson = (levels: number): string => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;

const CASES: HostileCase[] = [
  {
    name: 'invalid UTF-8 bytes in the content',
    wire: 'openai',
    expect: 'success',
    handler: send(
      200,
      Buffer.concat([
        Buffer.from('{"model":"gpt-test","choices":[{"message":{"content":"bad '),
        Buffer.from([0xff, 0xfe, 0xc3]),
        Buffer.from(' bytes"}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}'),
      ]),
    ),
    content: (c) => assert.match(c, /^bad \uFFFD+ bytes$/),
  },
  {
    name: 'lone surrogates in JSON escapes (content and usage)',
    wire: 'openai',
    expect: 'success',
    handler: send(
      200,
      '{"model":"gpt-\\udc00","choices":[{"message":{"content":"a\\ud800b"}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"note":"\\udfff"}}',
    ),
    content: (c) => assert.equal(c, 'a\uFFFDb'),
  },
  {
    name: 'usage nested 10,000 deep (openai)',
    wire: 'openai',
    expect: 'success',
    handler: send(
      200,
      `{"model":"gpt-test","choices":[{"message":{"content":"deep usage"}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"x":${deepJson(10_000)}}}`,
    ),
  },
  {
    name: 'usage nested 10,000 deep (anthropic)',
    wire: 'anthropic',
    expect: 'success',
    handler: send(
      200,
      `{"type":"message","model":"claude-test","content":[{"type":"text","text":"deep"}],"usage":{"input_tokens":1,"output_tokens":1,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"x":${deepJson(10_000)}}}`,
    ),
  },
  {
    name: 'a 10,000-deep value where the content should be',
    wire: 'openai',
    expect: 'MALFORMED_RESPONSE',
    billed: true,
    handler: send(200, `{"choices":[{"message":{"content":${deepJson(10_000)}}}]}`),
  },
  {
    name: 'huge numbers in usage (1e400, 2^64)',
    wire: 'openai',
    expect: 'success',
    handler: send(
      200,
      '{"model":"gpt-test","choices":[{"message":{"content":"huge"}}],"usage":{"prompt_tokens":1e400,"completion_tokens":18446744073709551616,"big":-1e999}}',
    ),
  },
  {
    name: 'negative and fractional usage',
    wire: 'anthropic',
    expect: 'success',
    handler: json(
      message('odd usage', {
        input_tokens: -5,
        output_tokens: 2.5,
        cache_read_input_tokens: 0,
        cache_creation_input_tokens: 0,
      }),
    ),
  },
  {
    name: 'a 1 MiB string and 10,000 keys in usage',
    wire: 'openai',
    expect: 'success',
    handler: json(
      completion('wide usage', {
        prompt_tokens: 1,
        completion_tokens: 1,
        blob: 'x'.repeat(1 << 20),
        ...Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`k${i}`, i])),
      }),
    ),
  },
  {
    name: '__proto__ and constructor keys in usage',
    wire: 'openai',
    expect: 'success',
    handler: send(
      200,
      '{"model":"gpt-test","choices":[{"message":{"content":"proto"}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}}}}',
    ),
  },
  {
    name: 'body truncated after HTTP 200 (content-length not met)',
    wire: 'openai',
    expect: 'NETWORK',
    billed: true,
    handler: (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '5000' });
      res.write('{"choices":[{"message":{"content":"cut');
      setTimeout(() => res.socket?.destroy(), 20);
    },
  },
  {
    name: 'slow drip after HTTP 200, then a reset',
    wire: 'anthropic',
    expect: 'NETWORK',
    billed: true,
    handler: (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      let n = 0;
      const timer = setInterval(() => {
        n += 1;
        if (n > 5) {
          clearInterval(timer);
          res.socket?.destroy();
          return;
        }
        res.write(n === 1 ? '{"type":"message","content":[' : ' ');
      }, 15);
    },
  },
  {
    name: 'a 40 MiB body',
    wire: 'openai',
    expect: 'MALFORMED_RESPONSE',
    billed: true,
    handler: (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.on('error', () => undefined);
      const chunk = Buffer.alloc(1 << 20, 0x20);
      let sent = 0;
      const pump = (): void => {
        while (sent < 40 && !res.destroyed) {
          sent += 1;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        if (!res.destroyed) res.end();
      };
      pump();
    },
  },
  {
    name: 'wrong content-type, valid JSON body',
    wire: 'openai',
    expect: 'success',
    handler: send(200, JSON.stringify(completion('typed wrong')), { 'content-type': 'text/html' }),
  },
  {
    name: 'an HTML page with HTTP 200',
    wire: 'anthropic',
    expect: 'MALFORMED_RESPONSE',
    billed: true,
    handler: send(200, '<html><body>gateway says hi</body></html>', { 'content-type': 'text/html' }),
  },
  {
    name: 'an empty HTTP 200 body',
    wire: 'openai',
    expect: 'MALFORMED_RESPONSE',
    billed: true,
    handler: send(200, ''),
  },
  {
    name: 'gzip claimed, garbage sent',
    wire: 'openai',
    expect: 'NETWORK',
    billed: true,
    handler: send(200, 'definitely not gzip', { 'content-type': 'application/json', 'content-encoding': 'gzip' }),
  },
  {
    name: 'the key echoed in content, model and usage',
    wire: 'openai',
    expect: 'success',
    handler: (req, res) => {
      const echoed = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
      json({
        ...completion(`your key is ${echoed}`, { prompt_tokens: 1, completion_tokens: 1, note: echoed }),
        model: echoed,
      })(req, res);
    },
    content: (c) => assert.equal(c, 'your key is [REDACTED]'),
  },
  {
    name: 'the key echoed in a 401 error body',
    wire: 'anthropic',
    expect: 'AUTH',
    handler: (req, res) =>
      json(
        {
          type: 'error',
          error: {
            type: String(req.headers['x-api-key']),
            message: `invalid x-api-key ${String(req.headers['x-api-key'])}`,
          },
        },
        401,
      )(req, res),
  },
  {
    name: 'the key echoed in a malformed 200 body',
    wire: 'openai',
    expect: 'MALFORMED_RESPONSE',
    billed: true,
    handler: (req, res) => send(200, `not json ${String(req.headers.authorization)}`)(req, res),
  },
  // Last: the one retryable case (the CLI's breaker must not open before the table ends).
  {
    name: 'the connection reset before any status',
    wire: 'openai',
    expect: 'NETWORK',
    handler: (req) => {
      req.socket.destroy();
    },
  },
];

let server: Server;
let baseUrl = '';
let current: Handler | null = null;
const work = mkdtempSync(join(tmpdir(), 'cp-hostile-'));
const root = join(work, 'root');

function run(args: string[]): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [cplane, ...args], { cwd: work, encoding: 'utf8' });
  return { status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
}

function must(args: string[]): string {
  const r = run(args);
  assert.equal(r.status, 0, `${args.join(' ')}\n${r.stderr}${r.stdout}`);
  return r.stdout;
}

/** Async, so this process's server keeps answering while the child waits on it. */
function cli(args: string[], env: Record<string, string>): Promise<{ status: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cplane, ...args], { cwd: work, env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString('utf8');
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString('utf8');
    });
    child.on('close', (code) => resolve({ status: code ?? 1, stdout, stderr }));
  });
}

before(async () => {
  server = createServer((req, res) => {
    req.on('error', () => undefined);
    res.on('error', () => undefined);
    let body = '';
    req.on('data', (chunk: Buffer) => {
      body += chunk.toString('utf8');
    });
    // In-process cases set `current`; CLI cases run in parallel and are told apart by their prompt.
    req.on('end', () => {
      const handler = current ?? CASES[Number(/case (\d+)/.exec(body)?.[1] ?? -1)]?.handler ?? send(599, 'unscripted');
      handler(req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  must(['keys', 'generate', '--out', join(work, 'keys')]);
  const built = JSON.parse(
    must([
      'build',
      '--out',
      join(work, 'packages'),
      '--bootstrap-out',
      join(work, 'bootstrap'),
      '--sign-key',
      join(work, 'keys', 'cplane-signing.key'),
      '--json',
    ]),
  ) as { bootstrap: { file: string } };
  must(['bootstrap', built.bootstrap.file, '--root', root, '--trust', join(work, 'keys', 'cplane-signing.pub')]);
});

after(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(work, { recursive: true, force: true });
});

test(`hostile provider, in-process: ${CASES.length} cases end in success or a coded outcome, recorded, never ERR_INTERNAL`, async (t) => {
  const dir = mkdtempSync(join(work, 'inproc-'));
  const ledger = Ledger.open(join(dir, 'ledger.sqlite'), { create: true, synchronous: 'OFF' });
  const budgetConfig = JSON.parse(readFileSync(configPath(DEV_ROOT, 'budget.json'), 'utf8')) as Record<string, unknown>;
  const budget = Budgeter.open({
    dbPath: join(dir, 'budget.sqlite'),
    config: { ...budgetConfig, limits: { session: { default: { max_tokens: 10_000_000 } } } },
  });
  t.after(() => {
    budget.close();
    ledger.close();
  });
  const providers = {
    openai: new OpenAiProvider({ config: { base_url: baseUrl, api_key: KEY }, env: {} }),
    anthropic: new AnthropicProvider({ config: { base_url: baseUrl, api_key: KEY }, env: {} }),
  };
  for (const [i, c] of CASES.entries()) {
    current = c.handler;
    // A router per case: a retryable case must not open the breaker for the next one.
    const router = new Router({
      ledger,
      budget,
      providers: [providers[c.wire]],
      devMode: true,
      sleep: async () => undefined,
      spoolDir: join(dir, 'spool'),
      config: loadRouterConfig(undefined, {
        default_provider: c.wire,
        default_model: 'hostile-model',
        timeout_ms: 20_000,
      }),
    });
    const requestId = `REQ-HOSTILE-${i}`;
    const res = await router.route({
      prompt: `case ${i}`,
      contract_id: 'PRC-HOSTILE',
      agent_id: 'AGENT-H',
      session_id: 'SES-H',
      request_id: requestId,
      max_tokens: 64,
    });
    const label = `${c.name}: ${res.outcome} ${res.error_code ?? ''} ${res.error_message ?? ''} ${JSON.stringify(res.warnings)}`;
    assert.equal(res.outcome === 'success' ? 'success' : res.error_code, c.expect, label);
    assert.match(res.exchange_entry_id, /^LED-/, `${label}: the EXCHANGE is committed`);
    assert.equal(res.unrecorded_exchange, undefined, label);
    c.content?.(res.content);
    const budgetRecords = budgetRecordsOf(ledger.query({ order: 'oldest' }), { event_type: 'BUDGET_SETTLED' })
      .concat(budgetRecordsOf(ledger.query({ order: 'oldest' }), { event_type: 'BUDGET_RELEASED' }))
      .filter((e) => e.metadata.request_id === requestId);
    const billedUnknown = budgetRecords.some((e) => e.decision === 'SETTLED_USAGE_UNKNOWN');
    if (c.billed)
      assert.equal(billedUnknown, true, `${label}: cut off after a 2xx keeps the reservation charged as unknown`);
    if (c.expect !== 'success' && !c.billed)
      assert.equal(budgetRecords[0]?.event_type, 'BUDGET_RELEASED', `${label}: released`);
  }
  assert.equal(verifyLedger(ledger).ok, true);
  const everything = JSON.stringify(ledger.query({}));
  assert.equal(everything.includes(KEY), false, 'the provider key is in no record');
  assert.equal(existsSync(join(dir, 'spool')), false, 'nothing needed the spool');
  t.diagnostic(`${CASES.length} hostile-provider cases in-process; none ended in ERR_INTERNAL`);
});

test(`hostile provider, through \`cplane route\`: ${CASES.length} cases exit 0 or 1 with a recorded outcome, never 70`, async (t) => {
  const env = { OPENAI_BASE_URL: baseUrl, OPENAI_API_KEY: KEY, ANTHROPIC_BASE_URL: baseUrl, ANTHROPIC_API_KEY: KEY };
  current = null;
  const routeCase = async (i: number): Promise<void> => {
    const c = CASES[i] as HostileCase;
    // A model the root's budget prices (an unpriced one is refused before sending).
    const r = await cli(
      [
        'route',
        '--root',
        root,
        '--provider',
        c.wire,
        '--model',
        'claude-haiku-4-5',
        '--max-tokens',
        '64',
        '--prompt',
        `case ${i}`,
        '--dev',
        '--json',
      ],
      env,
    );
    const label = `${c.name}: exit ${r.status}\n${r.stdout.slice(0, 400)}\n${r.stderr.slice(0, 400)}`;
    assert.ok(r.status === 0 || r.status === 1, label);
    const res = JSON.parse(r.stdout) as {
      outcome: string;
      error_code: string | null;
      exchange_entry_id: string;
      content: string;
    };
    assert.equal(res.outcome === 'success' ? 'success' : res.error_code, c.expect, label);
    assert.match(res.exchange_entry_id, /^LED-/, label);
    c.content?.(res.content);
    assert.equal(`${r.stdout}${r.stderr}`.includes(KEY), false, `${label}: the key is not printed`);
  };
  // Four processes at a time against one root (its ledger and budget are shared by processes). The last,
  // retryable case runs alone afterwards: its retries open the root's persisted breaker.
  const indices = CASES.map((_, i) => i).slice(0, -1);
  for (let at = 0; at < indices.length; at += 4) await Promise.all(indices.slice(at, at + 4).map(routeCase));
  await routeCase(CASES.length - 1);
  const verified = run(['ledger', 'verify', '--root', root]);
  assert.equal(verified.status, 0, verified.stdout + verified.stderr);
  const ledgerDir = rootPaths(root).ledgerDir;
  for (const entry of readdirSync(ledgerDir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const name = join(entry.parentPath, entry.name);
    assert.equal(readFileSync(name).includes(KEY), false, `the key is in no byte of ${name}`);
  }
  t.diagnostic(`${CASES.length} hostile-provider cases through the CLI; none exited 70 (ERR_INTERNAL)`);
});

test('`cplane route` when neither the ledger nor the spool takes the EXCHANGE: the answer is printed and the error carries the whole exchange', async (t) => {
  const copy = join(work, 'unrecordable');
  cpSync(root, copy, { recursive: true, verbatimSymlinks: true });
  t.after(() => rmSync(copy, { recursive: true, force: true }));
  // The ledger refuses every EXCHANGE (as a full disk would, after the DISPATCH went in): a preload makes the
  // root's own Ledger class throw SQLite's disk-full error for any batch holding one. (A refusing trigger would
  // not do: an altered schema makes the ledger refuse every append, the DISPATCH too.)
  const preload = join(copy, '..', 'refuse-exchange.mjs');
  writeFileSync(
    preload,
    [
      "import { pathToFileURL } from 'node:url';",
      `const { Ledger } = await import(pathToFileURL(${JSON.stringify(join(copy, 'HOT', 'kernel', 'ledger', 'ledger.js'))}).href);`,
      'const appendBatch = Ledger.prototype.appendBatch;',
      'Ledger.prototype.appendBatch = function (inputs) {',
      "  if (inputs.some((input) => input.event_type === 'EXCHANGE')) throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });",
      '  return appendBatch.call(this, inputs);',
      '};',
    ].join('\n'),
  );
  t.after(() => rmSync(preload, { force: true }));
  const refuse = { NODE_OPTIONS: `--import ${preload}` };
  // … and a file stands where the spool directory would be created.
  writeFileSync(rootPaths(copy).spool, 'not a directory');
  const args = ['route', '--root', copy, '--provider', 'mock', '--prompt', 'keep me', '--dev'];
  const json = await cli([...args, '--json'], refuse);
  assert.equal(json.status, 3, json.stdout + json.stderr);
  const error = (
    JSON.parse(json.stdout) as {
      error: {
        code: string;
        details: {
          response: { content: string; outcome: string };
          exchange: Array<{ event_type: string; metadata: Record<string, unknown> }>;
        };
      };
    }
  ).error;
  assert.equal(error.code, 'ERR_ROUTE_EXCHANGE_UNRECORDED');
  assert.equal(error.details.response.outcome, 'success');
  assert.equal(error.details.response.content, 'Mock response');
  assert.equal(error.details.exchange[0]?.event_type, 'EXCHANGE');
  assert.equal(error.details.exchange[0]?.metadata.response, 'Mock response');
  assert.equal(error.details.exchange[0]?.metadata.prompt, 'keep me');
  const human = await cli(args, refuse);
  assert.equal(human.status, 3);
  assert.match(human.stdout, /^Mock response$/m, 'the answer is on stdout');
  assert.match(
    human.stderr,
    /ERR_ROUTE_EXCHANGE_UNRECORDED: .*"event_type":"EXCHANGE".*"response":"Mock response"/,
    'the whole exchange is on stderr',
  );
});
