import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Budgeter } from '#budgeter/index.js';
import { budgetRecordsOf } from '#budgeter/records.js';
import { MESSAGE_OVERHEAD_TOKENS, bodyInputBound } from '#budgeter/bound.js';
import type { RouterConfig } from '../../router/config.js';
import { harness, request, type Step } from './harness.js';
import { warningText } from '#kernel/catalogue/define.js';
import { CpError, toCpError } from '#kernel/errors.js';

const shipped = JSON.parse(
  readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'config', 'budget.json'), 'utf8'),
) as object;

function withBudget(t: Parameters<typeof harness>[0], script: Step[] = [], config: Partial<RouterConfig> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'cp-router-budget-'));
  const budget = Budgeter.open({
    dbPath: join(dir, 'budget.sqlite'),
    config: { ...shipped, limits: { agent: { default: { max_tokens: 100_000 } } } },
  });
  t.after(() => {
    budget.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { ...harness(t, { script, config, router: { budget } }), budget };
}

test('a CJK prompt reserves its UTF-8 bytes plus the template overhead and max_tokens, not a quarter of its length', async (t) => {
  const { router, ledger } = withBudget(t);
  const prompt = '予算は決して超えてはならない'.repeat(10); // 140 characters, 420 bytes
  const res = await router.route(request({ prompt, max_tokens: 100 }));
  assert.equal(res.outcome, 'success', JSON.stringify(res));
  const [allocated] = budgetRecordsOf(ledger.query({ order: 'oldest' }), { event_type: 'BUDGET_ALLOCATED' });
  assert.equal(allocated?.metadata.reserved_tokens, 420 + 2 * MESSAGE_OVERHEAD_TOKENS + 100);
});

test('a compiled body reserves the bound of its canonical JSON and the max_tokens the body asks for', async (t) => {
  const { router, ledger } = withBudget(t);
  const body = {
    model: 'mock-model-1',
    max_tokens: 700,
    system: '系统提示🚀',
    messages: [{ role: 'user', content: '質問です' }],
  };
  const res = await router.route(
    request({ prompt: '質問です', max_tokens: 10, compiled: { stable_prefix_hash: 'b'.repeat(64), body } }),
  );
  assert.equal(res.outcome, 'success', JSON.stringify(res));
  const [allocated] = budgetRecordsOf(ledger.query({ order: 'oldest' }), { event_type: 'BUDGET_ALLOCATED' });
  assert.equal(
    allocated?.metadata.reserved_tokens,
    bodyInputBound(body) + 700,
    'the body, not the request, says how much output is asked for',
  );
});

test('usage counts that are strings are malformed (unknown, kept charged), never coerced to numbers', async (t) => {
  const { router, budget } = withBudget(t, [{ usage: { input_tokens: '80' as unknown as number, output_tokens: 5 } }]);
  const res = await router.route(request({ request_id: 'REQ-STRING-USAGE', max_tokens: 100 }));
  assert.equal(res.outcome, 'success');
  assert.ok(
    res.warnings.some((w) => warningText(w).startsWith('BUDGET_USAGE_UNKNOWN: input_tokens')),
    JSON.stringify(res.warnings),
  );
  const agent = budget.status({ session_id: 'SES-1' }).scopes.find((s) => s.scope === 'agent');
  assert.equal(agent?.reserved_tokens, 0);
  assert.equal(
    agent?.settled_tokens,
    Buffer.byteLength(request().prompt) + 2 * MESSAGE_OVERHEAD_TOKENS + 100,
    'the reservation stays charged',
  );
});

test('output beyond the max_tokens the provider was given is a lie: usage unknown, the reservation charged, not the claim', async (t) => {
  const { router, budget, ledger } = withBudget(t, [
    { usage: { input_tokens: 10, output_tokens: 100 } },
    { usage: { input_tokens: 10, output_tokens: 101 } },
  ]);
  const honest = await router.route(request({ request_id: 'REQ-AT-LIMIT', max_tokens: 100 }));
  assert.equal(honest.outcome, 'success');
  assert.ok(!honest.warnings.some((w) => warningText(w).startsWith('BUDGET_USAGE_UNKNOWN')), 'at the limit is honest');
  const lied = await router.route(request({ request_id: 'REQ-PAST-LIMIT', max_tokens: 100 }));
  assert.equal(lied.outcome, 'success', 'the caller still gets the answer');
  assert.ok(
    lied.warnings.some((w) => /101 output tokens, more than the 100/.test(warningText(w))),
    JSON.stringify(lied.warnings),
  );
  const settled = budgetRecordsOf(ledger.query({ order: 'oldest' }), { event_type: 'BUDGET_SETTLED', order: 'oldest' });
  assert.equal(settled[0]?.metadata.charged_tokens, 10 + 100, 'an honest count is charged as reported');
  const reserved = Buffer.byteLength(request().prompt) + 2 * MESSAGE_OVERHEAD_TOKENS + 100;
  assert.equal(settled[1]?.metadata.charged_tokens, reserved, 'the lie is charged at its reservation');
  const agent = budget.status({ session_id: 'SES-1' }).scopes.find((s) => s.scope === 'agent');
  assert.equal(agent?.settled_tokens, 110 + reserved);
});

test('prompt tokens beyond what the request could hold are a lie: usage unknown, the reservation charged, not the claim', async (t) => {
  const bound = Buffer.byteLength(request().prompt) + 2 * MESSAGE_OVERHEAD_TOKENS;
  const { router, budget, ledger } = withBudget(t, [
    { usage: { input_tokens: bound, output_tokens: 5 } },
    { usage: { input_tokens: 9_000_000_000_000, output_tokens: 5 } },
    { usage: { input_tokens: bound, cache_read_tokens: bound + 1, output_tokens: 5 } },
  ]);
  const honest = await router.route(request({ request_id: 'REQ-INPUT-AT-BOUND', max_tokens: 100 }));
  assert.equal(honest.outcome, 'success');
  assert.ok(!honest.warnings.some((w) => warningText(w).startsWith('BUDGET_USAGE_UNKNOWN')), 'at the bound is honest');
  for (const id of ['REQ-INPUT-LIE', 'REQ-CACHE-LIE']) {
    const lied = await router.route(request({ request_id: id, max_tokens: 100 }));
    assert.equal(lied.outcome, 'success', 'the caller still gets the answer');
    assert.ok(
      lied.warnings.some((w) => new RegExp(`input tokens, more than the ${bound}`).test(warningText(w))),
      JSON.stringify(lied.warnings),
    );
  }
  const settled = budgetRecordsOf(ledger.query({ order: 'oldest' }), { event_type: 'BUDGET_SETTLED', order: 'oldest' });
  assert.equal(settled[0]?.metadata.charged_tokens, bound + 5, 'an honest count is charged as reported');
  assert.equal(settled[1]?.metadata.charged_tokens, bound + 100, 'the lie is charged at its reservation');
  assert.equal(settled[2]?.metadata.charged_tokens, bound + 100, 'a cache bucket past the bound is a lie too');
  const agent = budget.status({ session_id: 'SES-1' }).scopes.find((s) => s.scope === 'agent');
  assert.equal(agent?.settled_tokens, bound + 5 + 2 * (bound + 100));
  assert.equal(agent?.state, 'ok', 'a claim does not exhaust the agent budget of 100,000 tokens');
});

test('a settlement that fails is retried as unknown usage, so the reservation is charged, never left pending', async (t) => {
  const { router, budget, ledger } = withBudget(t, [{ usage: { input_tokens: 20 } }]);
  budget.settle = () => {
    throw new Error('settlement store hiccup');
  };
  const res = await router.route(request({ request_id: 'REQ-SETTLE-FAILS', max_tokens: 100 }));
  assert.equal(res.outcome, 'success', 'the answer is still delivered');
  assert.deepEqual(
    res.warnings.map((w) => w.code),
    ['BUDGET_SETTLE_FAILED', 'BUDGET_USAGE_UNKNOWN'],
  );
  assert.equal(budget.status({ session_id: 'SES-1' }).pending_reservations, 0);
  const [settled] = budgetRecordsOf(ledger.query({ order: 'oldest' }), { event_type: 'BUDGET_SETTLED' });
  assert.equal(settled?.decision, 'SETTLED_USAGE_UNKNOWN');
  assert.deepEqual(settled?.metadata.usage_problems, ['settlement failed (settlement store hiccup); usage unknown']);
  assert.equal(
    settled?.metadata.charged_tokens,
    Buffer.byteLength(request().prompt) + 2 * MESSAGE_OVERHEAD_TOKENS + 100,
  );
});

test("the budgeter's coded refusal is a BUDGET_ERROR rejection, recorded; nothing is sent", async (t) => {
  const { router, budget, ledger, provider } = withBudget(t);
  budget.reserve = () => {
    throw new CpError('ERR_BUDGET_DB', 'budget database is locked', { hint: 'retry' });
  };
  const res = await router.route(request({ request_id: 'REQ-BUDGET-DB' }));
  assert.equal(res.outcome, 'rejected');
  assert.equal(res.error_code, 'BUDGET_ERROR');
  assert.equal(res.error_message, 'budget database is locked');
  assert.equal(ledger.query({ event_type: 'PROMPT_REJECTED' }).length, 1);
  assert.equal(provider.calls.length, 0);
});

test('a full disk under the budgeter is BUDGET_UNAVAILABLE (a fault of the machine, not a bug), naming the fault and its fix', async (t) => {
  const { router, budget, provider } = withBudget(t);
  for (const thrown of [
    Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' }),
    new CpError('ERR_FS_READONLY', 'the filesystem is read-only at /r/HOT/budget.sqlite (EROFS)'),
  ]) {
    budget.reserve = () => {
      throw thrown;
    };
    const res = await router.route(request({ request_id: `REQ-BUDGET-${provider.calls.length}` }));
    assert.equal(res.outcome, 'rejected');
    assert.equal(res.error_code, 'BUDGET_UNAVAILABLE');
    assert.match(res.error_message ?? '', /^ERR_(DISK_FULL: no space left|FS_READONLY: the filesystem is read-only)/);
    assert.match(res.error_message ?? '', /; (free space|remount)/);
  }
  assert.equal(provider.calls.length, 0);
});

test('a bug in the budgeter stays a bug: it is thrown (ERR_INTERNAL at the CLI), never renamed BUDGET_ERROR', async (t) => {
  const { router, budget, ledger, provider } = withBudget(t);
  budget.reserve = () => {
    throw new TypeError("Cannot read properties of undefined (reading 'scope')");
  };
  await assert.rejects(router.route(request({ request_id: 'REQ-BUDGET-BUG' })), TypeError);
  assert.equal(toCpError(new TypeError('x')).code, 'ERR_INTERNAL');
  assert.equal(ledger.query({ event_type: 'PROMPT_REJECTED' }).length, 0, 'no outcome is invented for a bug');
  assert.equal(provider.calls.length, 0);
});

test('a call whose attempts ran out of the deadline upstream stays charged: a slow provider cannot bill calls the budget gives back', async (t) => {
  const timeout: Step = { error: { kind: 'timeout', message: 'no reply in 60000 ms' } };
  const { router, budget, ledger } = withBudget(
    t,
    [
      timeout,
      timeout,
      { error: { kind: 'server_error', status: 500, message: 'boom' } },
      { error: { kind: 'timeout', status: 408, message: 'request timeout' } },
    ],
    { retry: { max_attempts: 2, base_delay_ms: 0, max_delay_ms: 0, max_retry_after_ms: 0 } },
  );
  const bound = Buffer.byteLength(request().prompt) + 2 * MESSAGE_OVERHEAD_TOKENS + 100;
  const timedOut = await router.route(request({ request_id: 'REQ-TIMED-OUT', max_tokens: 100 }));
  assert.equal(timedOut.outcome, 'timeout');
  const refused = await router.route(request({ request_id: 'REQ-REFUSED-UPSTREAM', max_tokens: 100 }));
  assert.notEqual(refused.outcome, 'success', 'a 500 then a 408: the provider refused both, nothing it worked on');
  const agent = budget.status({ session_id: 'SES-1' }).scopes.find((s) => s.scope === 'agent');
  assert.equal(agent?.reserved_tokens, 0, 'nothing left pending');
  assert.equal(agent?.settled_tokens, bound, 'the timed-out call is charged at its bound, the refused one not at all');
  const settled = budgetRecordsOf(ledger.query({ order: 'oldest' }), { event_type: 'BUDGET_SETTLED' });
  assert.deepEqual(
    settled.map((e) => e.submission_id),
    ['REQ-TIMED-OUT'],
  );
  assert.deepEqual(
    budgetRecordsOf(ledger.query({ order: 'oldest' }), { event_type: 'BUDGET_RELEASED' }).map((e) => e.submission_id),
    ['REQ-REFUSED-UPSTREAM'],
  );
});

test('a request_id already reserved names a call made: reusing it, in turn or at once, is a recorded refusal, never an uncharged call', async (t) => {
  const { router, budget, provider, ledger } = withBudget(t, [
    { usage: { input_tokens: 10, output_tokens: 5 } },
    { usage: { input_tokens: 10, output_tokens: 5 } },
    { usage: { input_tokens: 10, output_tokens: 5 } },
  ]);
  const first = await router.route(request({ request_id: 'REQ-ONCE', max_tokens: 100 }));
  assert.equal(first.outcome, 'success');
  const again = await router.route(request({ request_id: 'REQ-ONCE', max_tokens: 100 }));
  assert.equal(again.error_code, 'BUDGET_ERROR', JSON.stringify(again));
  assert.match(again.error_message ?? '', /REQ-ONCE/);
  const atOnce = await Promise.all([
    router.route(request({ request_id: 'REQ-TWICE', max_tokens: 100 })),
    router.route(request({ request_id: 'REQ-TWICE', max_tokens: 100 })),
  ]);
  assert.deepEqual(atOnce.map((r) => r.outcome).sort(), ['rejected', 'success'], JSON.stringify(atOnce));
  assert.equal(provider.calls.length, 2, 'one provider call per request_id');
  const agent = budget.status({ session_id: 'SES-1' }).scopes.find((s) => s.scope === 'agent');
  assert.equal(agent?.settled_tokens, 30, 'both calls charged');
  assert.equal(ledger.query({ event_type: 'PROMPT_REJECTED' }).length, 2, 'each refusal recorded');
});
