import { test } from 'node:test';
import assert from 'node:assert/strict';
import { issueToken } from '../../router/auth.js';
import type { BudgetPort } from '../../router/ports.js';
import { harness, request } from './harness.js';

const KEYS = { default: 'test-secret-0123456789abcdef' };

test('20-22 a rejection is lightweight: five keys, no prompt, no DISPATCH', async (t) => {
  const h = harness(t, { router: { devMode: false, authKeys: KEYS } });
  const res = await h.router.route(request());
  const [rejected] = h.ledger.query({ event_type: 'PROMPT_REJECTED' });
  assert.deepEqual(Object.keys(rejected!.metadata).sort(), ['agent_id', 'contract_id', 'error_code', 'error_message', 'session_id']);
  assert.ok(!('prompt' in rejected!.metadata));
  assert.equal(rejected!.decision, 'REJECTED');
  assert.equal(rejected!.reason, 'AUTH_MISSING: no auth token');
  assert.equal(res.dispatch_entry_id, '');
  assert.equal(res.outcome, 'rejected');
  assert.equal(res.exchange_entry_id, rejected!.id);
  assert.equal(h.ledger.query({ event_type: 'DISPATCH' }).length, 0);
  assert.equal(h.provider.calls.length, 0);
});

test('validation failure is a PROMPT_REJECTED naming the bad field', async (t) => {
  const h = harness(t);
  const res = await h.router.route({ ...request(), max_tokens: -5, surprise: true });
  assert.equal(res.error_code, 'VALIDATION_FAILED');
  assert.match(res.error_message ?? '', /max_tokens|surprise/);
  assert.equal(h.ledger.query({ event_type: 'PROMPT_REJECTED' }).length, 1);
  const garbage = await h.router.route('not a request');
  assert.equal(garbage.error_code, 'VALIDATION_FAILED');
  assert.equal(h.provider.calls.length, 0);
});

test('auth: a valid scoped token passes; expired, forged, wrong agent and wrong scope are refused', async (t) => {
  const h = harness(t, { router: { devMode: false, authKeys: KEYS } });
  const nowS = Math.floor(h.now.ms / 1000);
  const claims = { sub: 'AGENT-1', scopes: ['route:PRC-TEST-001'], iat: nowS, exp: nowS + 60 };
  assert.equal((await h.router.route(request({ auth_token: issueToken(claims, KEYS) }))).outcome, 'success');
  const cases: Array<[string, string]> = [
    [issueToken({ ...claims, exp: nowS - 1 }, KEYS), 'AUTH_EXPIRED'],
    [issueToken(claims, { default: 'another-secret' }), 'AUTH_BAD_SIGNATURE'],
    [issueToken({ ...claims, sub: 'AGENT-2' }, KEYS), 'AUTH_WRONG_AGENT'],
    [issueToken({ ...claims, scopes: ['route:OTHER'] }, KEYS), 'AUTH_SCOPE'],
    [issueToken({ ...claims, kid: 'k2' }, { k2: 'x' }), 'AUTH_UNKNOWN_KEY'],
    ['cpt1.e30.AAAA', 'AUTH_MALFORMED'],
    ['not-a-token', 'AUTH_MALFORMED'],
  ];
  for (const [token, code] of cases) {
    const res = await h.router.route(request({ auth_token: token }));
    assert.equal(res.error_code, code, token);
  }
  // Tamper with the payload but keep the MAC: the signature no longer verifies.
  const good = issueToken(claims, KEYS).split('.');
  const forged = Buffer.from(JSON.stringify({ ...claims, scopes: ['route:*'] })).toString('base64url');
  assert.equal((await h.router.route(request({ auth_token: `${good[0]}.${forged}.${good[2]}` }))).error_code, 'AUTH_BAD_SIGNATURE');
  assert.equal(h.provider.calls.length, 1);
});

test('28 dev mode bypasses auth', async (t) => {
  const h = harness(t, { router: { devMode: true } });
  assert.equal((await h.router.route(request())).outcome, 'success');
});

class CountingBudget implements BudgetPort {
  reserved: string[] = [];
  released: string[] = [];
  settled: string[] = [];
  constructor(private remaining: number) {}
  reserve(r: Parameters<BudgetPort['reserve']>[0]): ReturnType<BudgetPort['reserve']> {
    const need = r.estimated_input_tokens + r.max_output_tokens;
    if (need > this.remaining) return { ok: false, code: 'BUDGET_EXHAUSTED', message: `needs ${need}, ${this.remaining} left` };
    this.remaining -= need;
    this.reserved.push(r.request_id);
    return { ok: true, remaining_tokens: this.remaining };
  }
  settle(id: string): { cost: number | null; remaining_tokens: number | null } { this.settled.push(id); return { cost: 0.001, remaining_tokens: this.remaining }; }
  release(id: string): void { this.released.push(id); }
}

test('26 budget exhausted: PROMPT_REJECTED BUDGET_EXHAUSTED and the provider is never called', async (t) => {
  const budget = new CountingBudget(100);
  const h = harness(t, { router: { budget } });
  const res = await h.router.route(request({ max_tokens: 500 }));
  assert.equal(res.error_code, 'BUDGET_EXHAUSTED');
  assert.equal(h.provider.calls.length, 0);
  assert.equal(h.ledger.query({ event_type: 'PROMPT_REJECTED' })[0]?.metadata.error_code, 'BUDGET_EXHAUSTED');
});

test('budget is reserved before and settled after a success, released after a failure', async (t) => {
  const budget = new CountingBudget(1_000_000);
  const h = harness(t, { router: { budget }, script: [{}, { error: { kind: 'invalid_request', status: 400 } }] });
  const ok = await h.router.route(request({ request_id: 'R1' }));
  assert.equal(ok.cost_incurred, 0.001);
  await h.router.route(request({ request_id: 'R2' }));
  assert.deepEqual([budget.reserved, budget.settled, budget.released], [['R1', 'R2'], ['R1'], ['R2']]);
});

test('a budget settle failure after the answer is surfaced, the exchange is still recorded', async (t) => {
  const budget = new CountingBudget(1_000_000);
  budget.settle = () => { throw new Error('budget db locked'); };
  const h = harness(t, { router: { budget } });
  const res = await h.router.route(request());
  assert.equal(res.outcome, 'success');
  assert.match(res.warnings.join(), /BUDGET_SETTLE_FAILED: budget db locked/);
  assert.equal(h.ledger.query({ event_type: 'EXCHANGE' }).length, 1);
});

test('27 output validation failure: output_valid false, the response is still returned', async (t) => {
  const schema = { type: 'object', required: ['answer'], properties: { answer: { type: 'number' } } };
  const h = harness(t, { script: [{ text: '{"answer":"forty-two"}' }, { text: '{"answer":42}' }] });
  const bad = await h.router.route(request({ output_schema: schema }));
  assert.equal(bad.output_valid, false);
  assert.equal(bad.content, '{"answer":"forty-two"}');
  assert.match(bad.output_validation_errors.join(), /answer/);
  const good = await h.router.route(request({ output_schema: schema }));
  assert.equal(good.output_valid, true);
});

test('an unknown provider is a rejection naming the registered ones', async (t) => {
  const h = harness(t);
  const res = await h.router.route(request({ provider_id: 'nope' }));
  assert.equal(res.error_code, 'UNKNOWN_PROVIDER');
  assert.match(res.error_message ?? '', /have: mock/);
});
