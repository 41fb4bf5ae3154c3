import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadBudgetConfig, loadBudgetConfigForRoot } from '../../budgeter/index.js';
import { tempDir, testConfig } from './helpers.js';

/** Hostile budget config files: each is ERR_BUDGET_CONFIG_INVALID naming the file, never a crash or a looser limit. */
function refusal(path: string): { code: string; message: string; hint: string } {
  try {
    loadBudgetConfig(path);
  } catch (error) {
    const e = error as { code?: string; message: string; hint?: string };
    return { code: e.code ?? `uncoded ${(error as Error).name}`, message: e.message, hint: e.hint ?? '' };
  }
  assert.fail(`${path} was accepted`);
}

function write(dir: string, name: string, text: string | Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

const valid = JSON.stringify(testConfig({ limits: { session: { default: { max_tokens: 100, max_cost: 1 } } } }));

function deepRoot(t: import('node:test').TestContext, where: 'default' | 'overrides'): string {
  const root = tempDir(t);
  mkdirSync(join(root, 'HOT', 'config'), { recursive: true });
  mkdirSync(join(root, 'HOT', 'registries'), { recursive: true });
  const depth = 300_000; // ~600 KB: under the 1 MiB config read limit, far past any stack
  const nest = `${'['.repeat(depth)}${']'.repeat(depth)}`;
  const deep = valid.replace('"rate_limits":{}', `"rate_limits":{"session":{"window_ms":${nest}}}`);
  assert.notEqual(deep, valid);
  write(join(root, 'HOT', 'config'), 'budget.json', where === 'default' ? deep : valid);
  if (where === 'overrides') {
    const file = `{"schema_version":"1","overrides":{"budget":{"pricing":{"m1":{"input_per_mtok":${nest}}}}}}`;
    write(join(root, 'HOT', 'registries'), 'operator-config.json', file);
  }
  return root;
}

for (const where of ['default', 'overrides'] as const) {
  test(`a ${where} budget config nested 300k levels deep is a coded error naming the file, not a stack overflow`, (t) => {
    const root = deepRoot(t, where);
    let caught: unknown;
    try {
      loadBudgetConfigForRoot(root);
    } catch (error) {
      caught = error;
    }
    assert.ok(caught instanceof Error, 'the deep config was accepted');
    const e = caught as { code?: string; message: string; hint?: string };
    const code = where === 'default' ? 'ERR_BUDGET_CONFIG_INVALID' : 'ERR_CONFIG_OVERRIDES_INVALID';
    assert.equal(e.code, code, `${(caught as Error).name}: ${e.message}`);
    assert.match(e.message, where === 'default' ? /budget\.json/ : /operator-config\.json/);
    assert.match(e.message, /deeper than 128/);
    assert.ok((e.hint ?? '').length > 0);
  });
}

test('limits that overflow, are strings, are negative or -0, or come as duplicate keys never loosen a limit', (t) => {
  const dir = tempDir(t);
  const at = (text: string, name: string) => write(dir, name, valid.replace('"max_tokens":100', text));
  // 1e309 parses to Infinity: refused by the schema's maximum, not taken as "no limit".
  assert.equal(refusal(at('"max_tokens":1e309', 'inf.json')).code, 'ERR_BUDGET_CONFIG_INVALID');
  assert.equal(refusal(at('"max_tokens":"100"', 'string.json')).code, 'ERR_BUDGET_CONFIG_INVALID');
  assert.equal(refusal(at('"max_tokens":-1', 'negative.json')).code, 'ERR_BUDGET_CONFIG_INVALID');
  assert.equal(refusal(at('"max_tokens":100.5', 'fraction.json')).code, 'ERR_BUDGET_CONFIG_INVALID');
  assert.equal(refusal(at('"max_tokens":null', 'null.json')).code, 'ERR_BUDGET_CONFIG_INVALID');
  // -0 is a zero limit: nothing fits.
  assert.equal(loadBudgetConfig(at('"max_tokens":-0', 'minus-zero.json')).limits.session?.default?.max_tokens, -0);
  // A key scope named __proto__ or constructor in the file is an unknown field, not a prototype.
  const proto = write(dir, 'proto.json', valid.replace('"limits":{', '"limits":{"__proto__":{"x":1},'));
  assert.equal(refusal(proto).code, 'ERR_BUDGET_CONFIG_INVALID');
});

test('a BOM, bytes that are not UTF-8, a directory and a symlink loop are each the coded error naming the file', (t) => {
  const dir = tempDir(t);
  // Bytes that are not UTF-8 are refused by the reader every file read whole goes through, as an oversized one is.
  const cases: Array<[string, string]> = [
    [write(dir, 'bom.json', `\ufeff${valid}`), 'ERR_BUDGET_CONFIG_INVALID'],
    [
      write(dir, 'latin1.json', Buffer.concat([Buffer.from(valid.slice(0, -1)), Buffer.from(',"\xff":1}', 'latin1')])),
      'ERR_INPUT_NOT_UTF8',
    ],
    [write(dir, 'empty.json', ''), 'ERR_BUDGET_CONFIG_INVALID'],
  ];
  for (const [path, code] of cases) {
    const r = refusal(path);
    assert.equal(r.code, code, `${path}: ${r.message}`);
    assert.ok(r.message.includes(path), r.message);
  }
  mkdirSync(join(dir, 'adir.json'));
  assert.equal(refusal(join(dir, 'adir.json')).code, 'ERR_BUDGET_CONFIG_INVALID');
  symlinkSync(join(dir, 'loop.json'), join(dir, 'loop.json'));
  assert.equal(refusal(join(dir, 'loop.json')).code, 'ERR_BUDGET_CONFIG_INVALID');
});

test('a FIFO with no writer or a device in place of the config is refused at once, never a process hung in open', (t) => {
  const dir = tempDir(t);
  const fifo = join(dir, 'fifo.json');
  assert.equal(spawnSync('mkfifo', [fifo]).status, 0, 'mkfifo');
  const module = new URL('../../budgeter/config.js', import.meta.url).href;
  for (const path of [fifo, '/dev/zero']) {
    // In a child: a read blocked in open(2) cannot be interrupted in-process, only killed.
    const script = `import(${JSON.stringify(module)}).then((m) => { try { m.loadBudgetConfig(${JSON.stringify(path)}); console.log('{"accepted":true}'); } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); } });`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 10_000 });
    assert.equal(r.signal, null, `${path}: the reader hung (killed by ${r.signal})`);
    const out = JSON.parse(r.stdout) as { code?: string; message?: string };
    assert.equal(out.code, 'ERR_BUDGET_CONFIG_INVALID', `${path}: ${r.stdout}${r.stderr}`);
    assert.ok(out.message?.includes(path), out.message);
  }
});
