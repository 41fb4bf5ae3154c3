// The operator layer on a real signed root, through the root's own CLI in real processes: overrides round-trip,
// invalid and secret values are refused with nothing written, every change is a CONFIG_CHANGED with the file's
// digests and no values, the gates judge the effective config (G1 never flags the file, G3 fails a hand-edited
// one), a router upgrade leaves the overrides in force, and a link in place of the file is refused.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildArchive } from '../../staging/PKG-KERNEL-001/HOT/tests/kernel/installer/helpers.js';
import { bootstrapSignedRoot } from '../lib/signed-root.js';

const work = mkdtempSync(join(tmpdir(), 'cp-opconfig-'));
const pristine = join(work, 'pristine');
let caseNo = 0;
let publisherKey = '';

before(() => {
  bootstrapSignedRoot(work, pristine);
  publisherKey = readFileSync(join(work, 'keys', 'cplane-signing.key'), 'utf8');
});
after(() => rmSync(work, { recursive: true, force: true }));

function copyRoot(): string {
  caseNo += 1;
  const root = join(work, `case-${caseNo}`);
  cpSync(pristine, root, { recursive: true, verbatimSymlinks: true });
  return root;
}

interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

/** The root's own entry point, as an operator runs it. */
function cp(root: string, args: string[], env: NodeJS.ProcessEnv = {}): Run {
  const r = spawnSync(process.execPath, [join(root, 'HOT', 'scripts', 'cplane.js'), ...args], {
    cwd: tmpdir(),
    encoding: 'utf8',
    env: { ...process.env, CPLANE_AUTH_SECRET: '', ...env },
  });
  return { status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
}

function ok(root: string, args: string[]): string {
  const r = cp(root, args);
  assert.equal(r.status, 0, `${args.join(' ')}\n${r.stderr}${r.stdout}`);
  return r.stdout;
}

function json<T>(root: string, args: string[]): T {
  return JSON.parse(ok(root, [...args, '--root', root, '--json'])) as T;
}

const overridesFile = (root: string): string => join(root, 'HOT', 'registries', 'operator-config.json');
const digest = (bytes: Buffer): string => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

interface Entry {
  event_type: string;
  metadata: Record<string, unknown>;
}
function configChanges(root: string): Entry[] {
  return json<Entry[]>(root, ['ledger', 'query', '--event-type', 'CONFIG_CHANGED', '--oldest']);
}

function gates(root: string): { status: number; by: Record<string, { status: string; codes: string[] }> } {
  const r = spawnSync(
    process.execPath,
    [join(root, 'HOT', 'scripts', 'gate_check.js'), '--root', root, '--all', '--json'],
    { encoding: 'utf8' },
  );
  const parsed = JSON.parse(r.stdout) as {
    gates: Array<{ id: string; status: string; findings: Array<{ code: string }> }>;
  };
  return {
    status: r.status ?? 1,
    by: Object.fromEntries(parsed.gates.map((g) => [g.id, { status: g.status, codes: g.findings.map((f) => f.code) }])),
  };
}

test('set, get, show, diff and unset round-trip; each change is one CONFIG_CHANGED with the file digests and the keys, no values', () => {
  const root = copyRoot();
  assert.deepEqual(json(root, ['config', 'get', 'router.timeout_ms']), {
    key: 'router.timeout_ms',
    value: 60000,
    source: 'default',
  });
  const set = json<{ changed: boolean; before_digest: null; after_digest: string; changed_keys: string[] }>(root, [
    'config',
    'set',
    'router.timeout_ms',
    '5000',
  ]);
  assert.equal(set.changed, true);
  assert.equal(set.before_digest, null);
  assert.equal(set.after_digest, digest(readFileSync(overridesFile(root))));
  assert.deepEqual(set.changed_keys, ['router.timeout_ms']);
  assert.deepEqual(json(root, ['config', 'get', 'router.timeout_ms']), {
    key: 'router.timeout_ms',
    value: 5000,
    source: 'override',
  });
  const price = {
    input_per_mtok: 2,
    output_per_mtok: 8,
    cache_read_per_mtok: 0.5,
    cache_write_5m_per_mtok: 2.5,
    cache_write_1h_per_mtok: 4,
  };
  ok(root, ['config', 'set', 'budget.pricing["acme-4.1"]', JSON.stringify(price), '--root', root]);
  ok(root, ['config', 'set', 'gateway.host', '0.0.0.0', '--root', root]);
  assert.equal(json<{ value: number }>(root, ['config', 'get', 'budget.pricing["acme-4.1"].output_per_mtok']).value, 8);
  assert.equal(json<{ value: string }>(root, ['config', 'get', 'gateway.host']).value, '0.0.0.0');
  const shown = json<{ overrides: Record<string, unknown>; digest: string }>(root, ['config', 'show']);
  assert.deepEqual(shown.overrides, {
    budget: { pricing: { 'acme-4.1': price } },
    gateway: { host: '0.0.0.0' },
    router: { timeout_ms: 5000 },
  });
  const diff = json<{ changes: Array<{ key: string; default: unknown; effective: unknown }> }>(root, [
    'config',
    'diff',
    'router',
  ]);
  assert.deepEqual(diff.changes, [{ key: 'router.timeout_ms', default: 60000, effective: 5000 }]);
  assert.match(ok(root, ['config', 'diff', '--root', root]), /gateway\.host: "127\.0\.0\.1" -> "0\.0\.0\.0"/);
  // The same value again changes nothing and records nothing.
  assert.equal(json<{ changed: boolean }>(root, ['config', 'set', 'router.timeout_ms', '5000']).changed, false);
  ok(root, ['config', 'unset', 'router.timeout_ms', '--root', root]);
  ok(root, ['config', 'unset', 'budget', '--root', root]);
  ok(root, ['config', 'unset', 'gateway.host', '--root', root]);
  assert.deepEqual(json(root, ['config', 'get', 'router.timeout_ms']), {
    key: 'router.timeout_ms',
    value: 60000,
    source: 'default',
  });
  assert.deepEqual(json<{ overrides: unknown }>(root, ['config', 'show']).overrides, {});
  assert.deepEqual(json<{ changes: unknown[] }>(root, ['config', 'diff']).changes, []);

  const changes = configChanges(root);
  assert.equal(changes.length, 6);
  for (let i = 0; i < changes.length; i += 1) {
    const m = (changes[i] as Entry).metadata;
    assert.deepEqual(Object.keys(m).sort(), ['after_digest', 'before_digest', 'changed_keys', 'key', 'op']);
    if (i > 0)
      assert.equal(
        m.before_digest,
        (changes[i - 1] as Entry).metadata.after_digest,
        'each change starts where the last ended',
      );
  }
  assert.equal((changes.at(-1) as Entry).metadata.after_digest, digest(readFileSync(overridesFile(root))));
  assert.deepEqual(
    (changes[1] as Entry).metadata.changed_keys,
    Object.keys(price)
      .sort()
      .map((k) => `budget.pricing["acme-4.1"].${k}`),
  );
  assert.equal(JSON.stringify(changes).includes('0.0.0.0'), false, 'a CONFIG_CHANGED never carries a value');
});

test('invalid values are refused naming the value with a hint, and nothing is written or recorded', () => {
  const root = copyRoot();
  const cases: Array<[string[], string, RegExp]> = [
    [['router.timeout_ms', '"soon"'], 'ERR_CONFIG_VALUE_INVALID', /"soon".*\/timeout_ms: must be integer/],
    [['router.timeout_ms', '-5'], 'ERR_CONFIG_VALUE_INVALID', /-5.*must be >= 1/],
    [['router.timeout_ms', '2147483648'], 'ERR_CONFIG_VALUE_INVALID', /2147483648.*must be <= 2147483647/],
    [['router.retry', '[1]'], 'ERR_CONFIG_VALUE_INVALID', /\[1\].*\/retry: must be object/],
    [['router.tiemout_ms', '5'], 'ERR_CONFIG_VALUE_INVALID', /additional properties \(tiemout_ms\)/],
    [['router.default_model', 'null'], 'ERR_CONFIG_VALUE_INVALID', /null.*must have required property 'default_model'/],
    [['gateway.port', '70000'], 'ERR_CONFIG_VALUE_INVALID', /70000.*\/port/],
    [['providers.anthropic.base_url', 'ftp://example.com'], 'ERR_CONFIG_VALUE_INVALID', /ftp:\/\/example\.com/],
    [['routr.timeout_ms', '5'], 'ERR_CONFIG_KEY_INVALID', /no config section "routr"/],
    [['router..timeout_ms', '5'], 'ERR_CONFIG_KEY_INVALID', /router\.\.timeout_ms/],
    [['router.__proto__.polluted', '1'], 'ERR_CONFIG_KEY_INVALID', /__proto__/],
    [['router', '5'], 'ERR_CONFIG_VALUE_INVALID', /must be set to an object, got 5/],
  ];
  for (const [args, code, message] of cases) {
    const r = cp(root, ['config', 'set', ...args, '--root', root]);
    assert.equal(r.status, 3, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, new RegExp(`${code}: `), args.join(' '));
    assert.match(r.stderr, message, args.join(' '));
    assert.match(r.stderr, /\n {2}hint: \S/, args.join(' '));
  }
  assert.equal(existsSync(overridesFile(root)), false);
  assert.equal(configChanges(root).length, 0);
  // Once a file exists, a refused change leaves its bytes exactly as they were.
  ok(root, ['config', 'set', 'router.timeout_ms', '5000', '--root', root]);
  const bytes = readFileSync(overridesFile(root));
  assert.equal(cp(root, ['config', 'set', 'router.timeout_ms', '0', '--root', root]).status, 3);
  assert.deepEqual(readFileSync(overridesFile(root)), bytes);
  assert.equal(configChanges(root).length, 1);
  assert.equal(
    cp(root, ['config', 'get', 'router.nothing_here', '--root', root]).stderr.includes('ERR_CONFIG_KEY_NOT_SET'),
    true,
  );
});

test('secrets are never config values: a secret key or a key-shaped value is ERR_CONFIG_SECRET and appears nowhere', () => {
  const root = copyRoot();
  const secret = 'sk-ant-api03-NEVER-STORE-THIS-VALUE';
  const cases: string[][] = [
    ['providers.anthropic.api_key', secret],
    ['providers.openai', JSON.stringify({ base_url: 'http://127.0.0.1:9', apiKey: secret })],
    ['router.auth', JSON.stringify({ secret })],
    ['router.auth.password', secret],
    ['gateway.host', secret],
  ];
  for (const args of cases) {
    const r = cp(root, ['config', 'set', ...args, '--root', root]);
    assert.equal(r.status, 3, args.join(' '));
    assert.match(r.stderr, /ERR_CONFIG_SECRET: /);
    assert.equal(`${r.stdout}${r.stderr}`.includes(secret), false, 'the refusal never echoes the secret');
  }
  assert.equal(existsSync(overridesFile(root)), false);
  // Naming where a secret lives is what config is for.
  ok(root, ['config', 'set', 'providers.anthropic.api_key_env', 'MY_ANTHROPIC_KEY', '--root', root]);
  ok(root, ['config', 'set', 'router.auth.secret_file', 'HOT/registries/auth-secret', '--root', root]);
  const exported = ok(root, ['ledger', 'export', '--root', root]);
  assert.equal(exported.includes(secret), false);
  assert.equal(configChanges(root).length, 2);
});

test('the root reads the effective config: a budget limit override refuses a route, G1 and every gate still PASS', () => {
  const root = copyRoot();
  ok(root, ['config', 'set', 'budget.limits.agent.by_id.A-TIGHT', '{"max_tokens": 10}', '--root', root]);
  const tight = cp(root, ['route', '--root', root, '--dev', '--prompt', 'hello', '--agent', 'A-TIGHT', '--json']);
  assert.equal(JSON.parse(tight.stdout).error_code, 'BUDGET_EXHAUSTED');
  const other = cp(root, ['route', '--root', root, '--dev', '--prompt', 'hello', '--agent', 'A-FREE', '--json']);
  assert.equal(JSON.parse(other.stdout).outcome, 'success', other.stderr);
  const g = gates(root);
  assert.equal(g.status, 0, JSON.stringify(g.by));
  for (const id of ['G0', 'G1', 'G3']) assert.equal(g.by[id]?.status, 'PASS', id);
});

test('G3 judges the effective config: an override hand-edited to an invalid value FAILs G3 (not G1), and the router refuses it', () => {
  const root = copyRoot();
  ok(root, ['config', 'set', 'router.timeout_ms', '5000', '--root', root]);
  writeFileSync(
    overridesFile(root),
    JSON.stringify({ schema_version: '1', overrides: { router: { timeout_ms: -1 } } }),
  );
  let g = gates(root);
  assert.equal(g.by.G3?.status, 'FAIL');
  assert.deepEqual(g.by.G3?.codes, ['CONFIG_INVALID']);
  assert.equal(g.by.G1?.status, 'PASS');
  const route = cp(root, ['route', '--root', root, '--dev', '--prompt', 'hello']);
  assert.equal(route.status, 3, route.stdout);
  assert.match(route.stderr, /ERR_ROUTER_CONFIG_INVALID.*operator overrides/);
  writeFileSync(overridesFile(root), '{"schema_version": "1", "overrides": ');
  g = gates(root);
  assert.equal(g.by.G3?.status, 'FAIL');
  assert.deepEqual(g.by.G3?.codes, ['OPERATOR_CONFIG_INVALID']);
  assert.match(cp(root, ['config', 'get', 'router.timeout_ms', '--root', root]).stderr, /ERR_CONFIG_OVERRIDES_INVALID/);
  writeFileSync(overridesFile(root), JSON.stringify({ schema_version: '1', overrides: { nosuch: { x: 1 } } }));
  g = gates(root);
  assert.equal(g.by.G3?.status, 'WARN');
  assert.deepEqual(g.by.G3?.codes, ['OPERATOR_CONFIG_UNUSED']);
});

test('an override file that is not UTF-8 is refused, not read with its stray bytes replaced: G3 FAILs it', () => {
  const root = copyRoot();
  writeFileSync(
    overridesFile(root),
    Buffer.concat([
      Buffer.from('{"schema_version":"1","overrides":{"gateway":{"host":"127.0.0.'),
      Buffer.from([0xff]),
      Buffer.from('1"}}}'),
    ]),
  );
  const get = cp(root, ['config', 'get', 'gateway.host', '--root', root]);
  assert.equal(get.status, 3, get.stdout);
  assert.match(get.stderr, /ERR_CONFIG_OVERRIDES_INVALID: .*not UTF-8/);
  const g = gates(root);
  assert.equal(g.by.G3?.status, 'FAIL');
  assert.deepEqual(g.by.G3?.codes, ['OPERATOR_CONFIG_INVALID']);
});

test('a symlink in place of the override file is refused by every command, and its target is never written', () => {
  const root = copyRoot();
  const outside = join(work, `outside-${caseNo}.json`);
  const content = JSON.stringify({ schema_version: '1', overrides: { router: { timeout_ms: 7 } } });
  writeFileSync(outside, content);
  symlinkSync(outside, overridesFile(root));
  for (const args of [
    ['config', 'get', 'router.timeout_ms'],
    ['config', 'set', 'router.timeout_ms', '9'],
    ['route', '--dev', '--prompt', 'x'],
  ]) {
    const r = cp(root, [...args, '--root', root]);
    assert.equal(r.status, 3, args.join(' '));
    assert.match(r.stderr, /ERR_ROOT_SYMLINK: "HOT\/registries\/operator-config\.json"/, args.join(' '));
  }
  assert.equal(readFileSync(outside, 'utf8'), content);
});

test('upgrading the router package leaves the overrides untouched and in force', async () => {
  const root = copyRoot();
  ok(root, ['config', 'set', 'router.default_model', 'mock', '--root', root]);
  ok(root, ['config', 'set', 'router.retry.max_attempts', '2', '--root', root]);
  const bytes = readFileSync(overridesFile(root));
  const model = (): string =>
    JSON.parse(cp(root, ['route', '--root', root, '--dev', '--prompt', 'hi', '--json']).stdout).model_id as string;
  assert.equal(model(), 'mock');
  const manifest = JSON.parse(
    readFileSync(join(root, 'HOT', 'installed', 'PKG-ROUTER-001', 'manifest.json'), 'utf8'),
  ) as {
    layer: 2;
    dependencies: Array<{ package_id: string; version: string }>;
    assets: Array<{ path: string }>;
  };
  const files = Object.fromEntries(manifest.assets.map((a) => [a.path, readFileSync(join(root, a.path), 'utf8')]));
  const archive = await buildArchive(work, {
    id: 'PKG-ROUTER-001',
    version: '0.1.1',
    layer: manifest.layer,
    key: publisherKey,
    files,
    deps: Object.fromEntries(manifest.dependencies.map((d) => [d.package_id, d.version])),
  });
  ok(root, ['upgrade', archive, '--root', root]);
  assert.match(ok(root, ['list', '--root', root]), /PKG-ROUTER-001\s+0\.1\.1/);
  assert.deepEqual(readFileSync(overridesFile(root)), bytes);
  assert.equal(model(), 'mock');
  assert.equal(json<{ value: number }>(root, ['config', 'get', 'router.retry.max_attempts']).value, 2);
  const g = gates(root);
  for (const id of ['G0', 'G1', 'G3']) assert.equal(g.by[id]?.status, 'PASS', `${id}: ${JSON.stringify(g.by[id])}`);
});

/** The root's CLI without blocking this process, so a server in it can answer the root's provider. */
function cpAsync(root: string, args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(root, 'HOT', 'scripts', 'cplane.js'), ...args], {
      cwd: tmpdir(),
      env: { ...process.env, ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('close', (code) => resolve({ status: code ?? 1, stdout, stderr }));
  });
}

test('provider settings come from the effective config: its base_url and the key from the variable it names reach the provider', async (t) => {
  const root = copyRoot();
  const seen: Array<{ url: string; headers: IncomingHttpHeaders }> = [];
  const server = createServer((req, res) => {
    seen.push({ url: req.url ?? '', headers: req.headers });
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'msg_1',
          type: 'message',
          role: 'assistant',
          model: 'claude-haiku-4-5',
          content: [{ type: 'text', text: 'from the configured upstream' }],
          stop_reason: 'end_turn',
          usage: { input_tokens: 5, output_tokens: 4 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const { port } = server.address() as AddressInfo;
  const key = 'configured-upstream-key-0123456789';
  ok(root, ['config', 'set', 'providers.anthropic.base_url', `http://127.0.0.1:${port}/upstream`, '--root', root]);
  ok(root, ['config', 'set', 'providers.anthropic.api_key_env', 'MY_UPSTREAM_KEY', '--root', root]);
  // The provider's own variables point elsewhere: the operator's settings win.
  const env = { MY_UPSTREAM_KEY: key, ANTHROPIC_API_KEY: 'not-this-one', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9' };
  const r = await cpAsync(
    root,
    [
      'route',
      '--root',
      root,
      '--dev',
      '--provider',
      'anthropic',
      '--model',
      'claude-haiku-4-5',
      '--prompt',
      'hi',
      '--json',
    ],
    env,
  );
  const res = JSON.parse(r.stdout) as { outcome: string; content: string };
  assert.equal(res.outcome, 'success', r.stdout + r.stderr);
  assert.equal(res.content, 'from the configured upstream');
  assert.equal(seen.length, 1);
  assert.equal(seen[0]?.url, '/upstream/v1/messages');
  assert.equal(seen[0]?.headers['x-api-key'], key);
  assert.equal(
    ok(root, ['ledger', 'export', '--root', root]).includes(key),
    false,
    'the upstream key never reaches the ledger',
  );
  // The variable it names unset: a coded refusal naming the variable, never another key.
  const missing = await cpAsync(
    root,
    ['route', '--root', root, '--dev', '--provider', 'anthropic', '--model', 'claude-haiku-4-5', '--prompt', 'hi'],
    { MY_UPSTREAM_KEY: '' },
  );
  assert.equal(missing.status, 3);
  assert.match(missing.stderr, /ERR_PROVIDER_CONFIG: .*MY_UPSTREAM_KEY/);
  assert.equal(seen.length, 1);
});
