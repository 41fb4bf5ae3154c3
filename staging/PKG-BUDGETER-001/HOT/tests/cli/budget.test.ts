import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli } from '#cli/main.js';
import { Budgeter, budgetDbPathForRoot, type BudgetStatus } from '../../budgeter/index.js';
import { request, tempDir } from '../budgeter/helpers.js';
import { configPath, rootPaths } from '#kernel/root/layout.js';

const SHIPPED_CONFIG = fileURLToPath(new URL('../../config/budget.json', import.meta.url));

function makeRoot(t: import('node:test').TestContext): string {
  const root = tempDir(t, 'cp-budget-root-');
  mkdirSync(rootPaths(root).config, { recursive: true });
  copyFileSync(SHIPPED_CONFIG, configPath(root, 'budget.json'));
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

test('budget status on a root nobody has spent in reports no usage and creates no state', async (t) => {
  const root = makeRoot(t);
  const r = await cli(['budget', 'status', '--root', root, '--json']);
  assert.equal(r.code, 0, r.err);
  const status = JSON.parse(r.out) as BudgetStatus;
  assert.deepEqual([status.mode, status.scopes.length], ['enforce', 0]);
  assert.equal(existsSync(budgetDbPathForRoot(root)), false);
});

test('budget status shows a session with its work orders and agents, as JSON and as text', async (t) => {
  const root = makeRoot(t);
  const b = Budgeter.open({ root });
  b.reserve(request('R1', { model: 'mock', work_order_id: 'WO1', agent_id: 'A1' }));
  b.reserve(request('R2', { model: 'mock', session_id: 'S2' }));
  b.settle({ request_id: 'R2', usage: { input_tokens: 1000, output_tokens: 200 } });
  b.close();

  const json = await cli(['budget', 'status', '--root', root, '--session', 'S1', '--json']);
  assert.equal(json.code, 0, json.err);
  const status = JSON.parse(json.out) as BudgetStatus;
  assert.equal(status.pending_reservations, 1);
  assert.deepEqual(
    status.scopes.map((s) => [s.scope, s.scope_id, s.reserved_tokens]),
    [
      ['session', 'S1', 150],
      ['work_order', 'WO1', 150],
      ['agent', 'A1', 150],
    ],
  );

  const [session] = status.scopes;
  // 100 in at the highest input-side rate ($2/M for mock) + 50 out at $5/M + 5 nano-units.
  assert.deepEqual(
    [session?.settled_tokens, session?.reserved_tokens, session?.settled_cost, session?.reserved_cost],
    [0, 150, 0, 0.000450005],
  );

  const all = await cli(['budget', 'status', '--root', root]);
  assert.equal(all.code, 0, all.err);
  assert.match(all.out, / pending=1$/m);
  assert.match(
    all.out,
    /session S1: 1 req, tokens 0 settled \+ 150 reserved = 150 \/ 2000000, cost USD 0\.000000 settled \+ 0\.000450 reserved = 0\.000450 \/ 20 \[ok /,
  );
  assert.match(
    all.out,
    /session S2: 1 req, tokens 1200 settled \+ 0 reserved = 1200 \/ 2000000, cost USD 0\.002000 settled \+ 0\.000000 reserved = 0\.002000 \/ 20 \[ok /,
  );
  const allJson = JSON.parse((await cli(['budget', 'status', '--root', root, '--json'])).out) as BudgetStatus;
  assert.equal(allJson.pending_reservations, 1);
  assert.deepEqual(
    allJson.scopes.map((s) => [s.scope_id, s.settled_tokens, s.reserved_tokens, s.settled_cost, s.reserved_cost]),
    [
      ['S1', 0, 150, 0, 0.000450005],
      ['S2', 1200, 0, 0.002, 0],
    ],
  );
});

test('budget status exits 1 when a scope is exhausted, and 3 with a coded error for a bad root', async (t) => {
  const root = makeRoot(t);
  const b = Budgeter.open({ root });
  b.reserve(
    request('R1', { model: 'mock', agent_id: 'A1', estimated_input_tokens: 400_000, max_output_tokens: 100_000 }),
  );
  b.close();
  const r = await cli(['budget', 'status', '--root', root, '--session', 'S1']);
  assert.equal(r.code, 1);
  assert.match(r.out, /agent A1: .*\[exhausted 100\.0%\]/);
  const bad = await cli(['budget', 'status', '--root', join(root, 'nowhere')]);
  assert.equal(bad.code, 3);
  assert.match(bad.err, /ERR_BUDGET_CONFIG_INVALID/);
  const usage = await cli(['budget', 'spend', '--root', root]);
  assert.equal(usage.code, 2);
});

// Hostile arguments: each is a usage error (exit 2, ERR_USAGE naming the option), never a crash, a silently
// picked value, or an uncoded error from the store.
test('budget status refuses repeated, negative, overflowing, fractional and empty options as usage errors', async (t) => {
  const root = makeRoot(t);
  const b = Budgeter.open({ root });
  b.reserve(request('R1', { model: 'mock' }));
  b.close();
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
