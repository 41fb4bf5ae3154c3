// Hostile arguments to `budget status`: each is a usage error (exit 2, ERR_USAGE naming the option), never a crash,
// a silently-picked value, or an uncoded error from the store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { runCli } from '#cli/main.js';
import { Budgeter } from '../../budgeter/index.js';
import { request, tempDir } from '../budgeter/helpers.js';
import { configPath, rootPaths } from '#kernel/root/layout.js';

const SHIPPED_CONFIG = fileURLToPath(new URL('../../config/budget.json', import.meta.url));

function makeRoot(t: import('node:test').TestContext): string {
  const root = tempDir(t, 'cp-budget-args-');
  mkdirSync(rootPaths(root).config, { recursive: true });
  copyFileSync(SHIPPED_CONFIG, configPath(root, 'budget.json'));
  const b = Budgeter.open({ root });
  b.reserve(request('R1', { model: 'mock' }));
  b.close();
  return root;
}

async function cli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli({
    argv,
    stdout: (s) => {
      out += `${s}\n`;
    },
    stderr: (s) => {
      err += `${s}\n`;
    },
  });
  return { code, out, err };
}

test('budget status refuses repeated, negative, overflowing, fractional and empty options as usage errors', async (t) => {
  const root = makeRoot(t);
  for (const [args, option] of [
    [['--session', 'S1', '--session', 'S2'], 'session'],
    [['--root', '/tmp', '--session', 'S1'], 'root'],
    [['--limit', '5', '--limit', '7'], 'limit'],
    [['--limit=-1'], 'limit'],
    [['--limit', '1e400'], 'limit'],
    [['--limit', '0'], 'limit'],
    [['--limit', '2.5'], 'limit'],
    [['--limit', 'abc'], 'limit'],
    [['--limit', ''], 'limit'],
  ] as const) {
    const r = await cli(['budget', 'status', '--root', root, ...args, '--json']);
    assert.equal(r.code, 2, `${args.join(' ')} exited ${r.code}: ${r.out}${r.err}`);
    const body = `${r.out}${r.err}`;
    assert.match(body, /ERR_USAGE/, `${args.join(' ')}: ${body}`);
    assert.ok(body.includes(option), `${args.join(' ')} should name --${option}: ${body}`);
  }
  // The same root answers a well-formed call: the refusals above are about the arguments, not the root.
  const ok = await cli(['budget', 'status', '--root', root, '--session', 'S1', '--json']);
  assert.equal(ok.code, 0, ok.err);
});
