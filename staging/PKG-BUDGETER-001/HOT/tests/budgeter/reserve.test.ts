import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Budgeter, type Granted, type Refused, type ReserveOutcome } from '../../budgeter/index.js';
import { manualClock, request, tempDir, testConfig } from './helpers.js';

function granted(outcome: ReserveOutcome): Granted {
  assert.equal(outcome.ok, true, `expected a reservation, got ${JSON.stringify(outcome)}`);
  return outcome as Granted;
}

function refused(outcome: ReserveOutcome): Refused {
  assert.equal(outcome.ok, false, `expected a refusal, got ${JSON.stringify(outcome)}`);
  return outcome as Refused;
}

function open(
  t: import('node:test').TestContext,
  config = testConfig(),
  clock = manualClock(),
): { b: Budgeter; dbPath: string } {
  const dbPath = join(tempDir(t), 'budget.sqlite');
  const b = Budgeter.open({ dbPath, config, clock: clock.now });
  t.after(() => b.close());
  return { b, dbPath };
}

test('reserve charges estimated input + max output and its cost; settle replaces it with the real usage', (t) => {
  const { b } = open(t, testConfig({ limits: { session: { default: { max_tokens: 1000, max_cost: 1 } } } }));
  const r = granted(b.reserve(request('R1', { estimated_input_tokens: 300, max_output_tokens: 200 })));
  assert.equal(r.reservation.reserved_tokens, 500);
  // Input is priced at the highest input-side rate (1h cache writes, $4/M), plus 5 nano-units of rounding slack.
  assert.equal(r.reservation.reserved_cost, (300 * 4000 + 200 * 10_000 + 5) / 1e9);
  assert.equal(r.remaining_tokens, 500);
  const s = b.settle({ request_id: 'R1', usage: { input_tokens: 250, output_tokens: 40, cache_read_tokens: 100 } });
  assert.equal(s.usage_known, true);
  assert.equal(s.reservation.state, 'settled');
  assert.equal(s.reservation.charged_tokens, 390);
  assert.equal(s.cost, (250 * 2 + 40 * 10 + 100 * 0.2) / 1e6);
  assert.equal(s.remaining_tokens, 610);
  const [session] = b.status({ session_id: 'S1' }).scopes;
  assert.equal(session?.reserved_tokens, 0);
  assert.equal(session?.settled_tokens, 390);
});

test('reserve is idempotent per request_id and refuses the same id with different values', (t) => {
  const { b } = open(t, testConfig({ limits: { session: { default: { max_tokens: 1000 } } } }));
  const first = granted(b.reserve(request('R1')));
  const again = granted(b.reserve(request('R1')));
  assert.equal(again.replayed, true);
  assert.deepEqual(again.reservation, first.reservation);
  assert.equal(again.remaining_tokens, 850, 'charged once');
  assert.throws(() => b.reserve(request('R1', { max_output_tokens: 51 })), { code: 'ERR_BUDGET_REQUEST_CONFLICT' });
});

test('settle and release are idempotent; a settled request cannot be released and vice versa', (t) => {
  const { b } = open(t);
  granted(b.reserve(request('R1')));
  const usage = { input_tokens: 10, output_tokens: 5 };
  const s1 = b.settle({ request_id: 'R1', usage });
  const s2 = b.settle({ request_id: 'R1', usage });
  assert.equal(s2.replayed, true);
  assert.deepEqual(s2.reservation, s1.reservation);
  assert.equal(b.status({ session_id: 'S1' }).scopes[0]?.settled_tokens, 15, 'settled once');
  assert.throws(() => b.settle({ request_id: 'R1', usage: { input_tokens: 11, output_tokens: 5 } }), {
    code: 'ERR_BUDGET_REQUEST_CONFLICT',
  });
  assert.throws(() => b.release('R1'), { code: 'ERR_BUDGET_REQUEST_STATE' });
  granted(b.reserve(request('R2')));
  assert.equal(b.release('R2').replayed, false);
  assert.equal(b.release('R2').replayed, true);
  assert.throws(() => b.settle({ request_id: 'R2', usage }), { code: 'ERR_BUDGET_REQUEST_STATE' });
  assert.throws(() => b.settle({ request_id: 'nope', usage }), { code: 'ERR_BUDGET_UNKNOWN_REQUEST' });
  const [session] = b.status({ session_id: 'S1' }).scopes;
  assert.equal(session?.reserved_tokens, 0, 'the release gave the reservation back');
  assert.equal(session?.requests, 1);
});

test('enforce refuses with BUDGET_EXHAUSTED naming the scope, and writes nothing', (t) => {
  const { b, dbPath } = open(t, testConfig({ limits: { session: { default: { max_tokens: 200 } } } }));
  granted(b.reserve(request('R1')));
  const no = refused(b.reserve(request('R2')));
  assert.equal(no.code, 'BUDGET_EXHAUSTED');
  assert.deepEqual(no.violations[0], {
    code: 'BUDGET_EXHAUSTED',
    scope: 'session',
    scope_id: 'S1',
    limit: 'max_tokens',
    limit_value: 200,
    used: 150,
    requested: 150,
    retry_after_ms: null,
  });
  assert.match(no.message, /session S1 max_tokens 200: used 150, requested 150/);
  assert.equal(no.records[0]?.event_type, 'BUDGET_EXCEEDED');
  assert.equal(no.records[0]?.decision, 'REFUSED');
  const db = new Database(dbPath, { readonly: true });
  t.after(() => db.close());
  assert.equal(db.prepare("SELECT COUNT(*) FROM reservations WHERE request_id = 'R2'").pluck().get(), 0);
  // Settling for less frees room for the next call.
  b.settle({ request_id: 'R1', usage: { input_tokens: 20, output_tokens: 10 } });
  granted(b.reserve(request('R2')));
});

test('every limited scope must have room: work order and agent limits refuse inside a roomy session', (t) => {
  const { b } = open(
    t,
    testConfig({
      warn_at_fraction: 0.7,
      limits: {
        session: { default: { max_tokens: 10_000 } },
        work_order: { default: { max_tokens: 400 } },
        agent: { by_id: { greedy: { max_tokens: 150 } } },
      },
    }),
  );
  granted(b.reserve(request('R1', { work_order_id: 'WO1', agent_id: 'greedy' })));
  const agentNo = refused(b.reserve(request('R2', { work_order_id: 'WO1', agent_id: 'greedy' })));
  assert.equal(agentNo.violations[0]?.scope, 'agent');
  assert.equal(agentNo.violations[0]?.scope_id, 'greedy');
  granted(b.reserve(request('R3', { work_order_id: 'WO1', agent_id: 'other' })));
  const woNo = refused(b.reserve(request('R4', { work_order_id: 'WO1', agent_id: 'other' })));
  assert.deepEqual(
    woNo.violations.map((v) => v.scope),
    ['work_order'],
  );
  // The same agent in another work order is a different scope; unconfigured agents are unlimited but tracked.
  granted(b.reserve(request('R5', { work_order_id: 'WO2', agent_id: 'other' })));
  const scopes = b.status({ session_id: 'S1' }).scopes;
  assert.deepEqual(
    scopes.map((s) => `${s.scope}:${s.scope_id}:${s.reserved_tokens}:${s.state}`),
    [
      'session:S1:450:ok',
      'work_order:WO1:300:near_limit',
      'work_order:WO2:150:ok',
      'agent:greedy:150:exhausted',
      'agent:other:150:unlimited',
      'agent:other:150:unlimited',
    ],
  );
});

test('a cost limit refuses once the money would run out', (t) => {
  // 100 in at $4/M (the highest input-side rate) + 50 out at $10/M + 5 nano = $0.000900005 per reservation.
  const { b } = open(t, testConfig({ limits: { session: { default: { max_cost: 0.0019 } } } }));
  granted(b.reserve(request('R1')));
  granted(b.reserve(request('R2')));
  const no = refused(b.reserve(request('R3')));
  assert.equal(no.violations[0]?.limit, 'max_cost');
  assert.equal(no.violations[0]?.used, 0.00180001);
});

test('unknown usage keeps the reservation charged and reports the cost as unknown, never 0', (t) => {
  const { b } = open(t, testConfig({ limits: { session: { default: { max_tokens: 1000 } } } }));
  granted(b.reserve(request('R1')));
  const s = b.settle({ request_id: 'R1', usage: { input_tokens: 10 } });
  assert.equal(s.usage_known, false);
  assert.deepEqual(s.usage_problems, ['output_tokens missing']);
  assert.equal(s.cost, null);
  assert.equal(s.reservation.usage, null);
  assert.equal(s.reservation.charged_tokens, 150);
  assert.equal(s.reservation.charged_cost, 0.000900005);
  assert.equal(s.records[0]?.decision, 'SETTLED_USAGE_UNKNOWN');
  assert.equal(s.records[0]?.metadata?.cost, null);
  const [session] = b.status({ session_id: 'S1' }).scopes;
  assert.equal(session?.settled_tokens, 150);
  assert.equal(session?.unknown_cost_requests, 1);
});

test('usage out of range settles as unknown (kept charged, recorded), never a throw that leaves the reservation pending', (t) => {
  const { b } = open(
    t,
    testConfig({ max_usage_tokens: 1_000_000, limits: { session: { default: { max_tokens: 100_000 } } } }),
  );
  const max = Number.MAX_SAFE_INTEGER;
  const hostile: [string, unknown, string][] = [
    ['negative', { input_tokens: -5, output_tokens: 3 }, 'input_tokens not a token count (-5)'],
    ['fractional', { input_tokens: 5, output_tokens: 0.5 }, 'output_tokens not a token count (0.5)'],
    ['NaN', { input_tokens: Number.NaN, output_tokens: 3 }, 'input_tokens not a token count (NaN)'],
    ['string', { input_tokens: '5', output_tokens: 3 }, 'input_tokens not a token count (a string)'],
    [
      'beyond the configured maximum',
      { input_tokens: 5, output_tokens: 1_000_001 },
      'output_tokens 1000001 beyond the maximum 1000000',
    ],
    ['an array', [5, 3], 'usage missing'],
  ];
  for (const [name, usage, problem] of hostile) {
    granted(b.reserve(request(`R-${name.replace(/ /g, '-')}`)));
    const s = b.settle({ request_id: `R-${name.replace(/ /g, '-')}`, usage });
    assert.equal(s.reservation.state, 'settled', name);
    assert.equal(s.usage_known, false, name);
    assert.deepEqual(s.usage_problems, [problem], name);
    assert.equal(s.reservation.charged_tokens, 150, `${name}: the reservation stays charged`);
    assert.equal(s.records[0]?.decision, 'SETTLED_USAGE_UNKNOWN', name);
    assert.deepEqual(s.records[0]?.metadata?.usage_problems, [problem], `${name}: the problem is recorded`);
  }
  // Counts each within 2^53-1 whose cost in nano-units is not: unknown, where it used to overflow the store.
  const { b: wide } = open(t, testConfig());
  granted(wide.reserve(request('R-huge')));
  const s = wide.settle({ request_id: 'R-huge', usage: { input_tokens: 0, output_tokens: max } });
  assert.equal(s.usage_known, false);
  assert.match(s.usage_problems[0] ?? '', /^usage cost \d+ nano-units beyond 9007199254740991$/);
  assert.equal(s.reservation.charged_tokens, 150);
  assert.equal(wide.status({ session_id: 'S1' }).pending_reservations, 0);
});

test('a reservation too large to count (tokens or nano-units beyond 2^53-1) is a coded refusal, and nothing is reserved', (t) => {
  const { b } = open(t);
  const max = Number.MAX_SAFE_INTEGER;
  assert.throws(() => b.reserve(request('R-sum', { estimated_input_tokens: max, max_output_tokens: 1 })), {
    code: 'ERR_BUDGET_INPUT_INVALID',
  });
  assert.throws(() => b.reserve(request('R-cost', { estimated_input_tokens: 0, max_output_tokens: 2 ** 50 })), {
    code: 'ERR_BUDGET_INPUT_INVALID',
  });
  assert.equal(b.status({ session_id: 'S1' }).pending_reservations, 0);
  granted(b.reserve(request('R-fine', { max_output_tokens: 2 ** 30 })));
});

test('an unpriced model: refused where a cost limit applies (enforce), tokens charged and cost unknown elsewhere', (t) => {
  const { b } = open(t, testConfig({ limits: { session: { by_id: { capped: { max_cost: 5 } } } } }));
  const no = refused(b.reserve(request('R1', { session_id: 'capped', model: 'mystery' })));
  assert.equal(no.code, 'BUDGET_PRICE_UNKNOWN');
  const ok = granted(b.reserve(request('R2', { model: 'mystery' })));
  assert.equal(ok.reservation.reserved_cost, null);
  const s = b.settle({ request_id: 'R2', usage: { input_tokens: 7, output_tokens: 3 } });
  assert.equal(s.cost, null);
  assert.equal(s.reservation.charged_tokens, 10);
  assert.equal(b.status({ session_id: 'S1' }).scopes[0]?.unknown_cost_requests, 1);
});

test('warn mode allows over-budget calls and records the overrun; off mode never checks but still tracks', (t) => {
  const limits = { session: { default: { max_tokens: 100 } } };
  const { b: warn } = open(t, testConfig({ mode: 'warn', limits }));
  const w = granted(warn.reserve(request('R1')));
  assert.equal(w.reservation.over_budget, true);
  assert.equal(w.warnings[0]?.code, 'BUDGET_EXHAUSTED');
  assert.deepEqual(
    w.records.map((r) => `${r.event_type}/${r.decision}`),
    ['BUDGET_EXCEEDED/WARNED', 'BUDGET_ALLOCATED/RESERVED_OVER_BUDGET'],
  );
  const { b: off } = open(t, testConfig({ mode: 'off', limits }));
  const o = granted(off.reserve(request('R1')));
  assert.deepEqual(o.warnings, []);
  assert.equal(o.reservation.over_budget, false);
  assert.equal(off.status({ session_id: 'S1' }).scopes[0]?.reserved_tokens, 150);
});

test('real usage beyond the reservation is charged in full and recorded as OVERSPENT', (t) => {
  const { b } = open(t, testConfig({ limits: { session: { default: { max_tokens: 200 } } } }));
  granted(b.reserve(request('R1')));
  const s = b.settle({ request_id: 'R1', usage: { input_tokens: 180, output_tokens: 50 } });
  assert.equal(s.reservation.charged_tokens, 230);
  assert.equal(s.exceeded[0]?.scope, 'session');
  assert.equal(s.reservation.over_budget, true);
  assert.deepEqual(
    s.records.map((r) => r.decision),
    ['SETTLED', 'OVERSPENT'],
  );
  assert.equal(s.remaining_tokens, 0);
  assert.equal(
    refused(b.reserve(request('R2', { estimated_input_tokens: 0, max_output_tokens: 0 }))).code,
    'BUDGET_EXHAUSTED',
  );
});

test('state survives reopening the database', (t) => {
  const dir = tempDir(t);
  const dbPath = join(dir, 'budget.sqlite');
  const config = testConfig({ limits: { session: { default: { max_tokens: 300 } } } });
  const first = Budgeter.open({ dbPath, config });
  granted(first.reserve(request('R1')));
  first.close();
  const second = Budgeter.open({ dbPath, config });
  t.after(() => second.close());
  assert.equal(granted(second.reserve(request('R2'))).remaining_tokens, 0);
  assert.equal(refused(second.reserve(request('R3'))).code, 'BUDGET_EXHAUSTED');
  assert.equal(granted(second.reserve(request('R1'))).replayed, true);
});

test('hostile requests are refused at the edge with ERR_BUDGET_INPUT_INVALID', (t) => {
  const { b } = open(t);
  for (const bad of [
    null,
    [],
    request('R1', { estimated_input_tokens: -1 }),
    request('R1', { max_output_tokens: 1.5 }),
    request('R1', { session_id: '' }),
    request('has space'),
    request('R1', { model: 7 }),
    request('R1', { extra: true }),
    request('R1', { agent_id: 'x'.repeat(201) }),
  ]) {
    assert.throws(() => b.reserve(bad), { code: 'ERR_BUDGET_INPUT_INVALID' }, JSON.stringify(bad));
  }
  assert.throws(() => b.settle({ request_id: 42 as unknown as string, usage: {} }), {
    code: 'ERR_BUDGET_INPUT_INVALID',
  });
  assert.equal(b.status({ session_id: 'S1' }).scopes.length, 0, 'nothing was charged');
});

test('a file that is not a budget database is refused with ERR_BUDGET_DB', (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'other.sqlite');
  const db = new Database(path);
  db.exec(
    "CREATE TABLE budget_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO budget_meta VALUES ('format', 'something-else')",
  );
  db.close();
  assert.throws(() => Budgeter.open({ dbPath: path, config: testConfig() }), { code: 'ERR_BUDGET_DB' });
  assert.throws(() => Budgeter.open({ config: testConfig() }), { code: 'ERR_USAGE' });
});
