import { test } from 'node:test';
import assert from 'node:assert/strict';
import { issueToken } from '../../router/auth.js';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Budgeter } from '#budgeter/index.js';
import { chainBudgetRecords } from '#budgeter/records.js';
import { harness, request } from './harness.js';
import { warningText } from '#kernel/catalogue/define.js';
import { configPath } from '#kernel/root/layout.js';

const CODE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const KEYS = { default: 'test-secret-0123456789abcdef' };

test('20-22 a rejection is lightweight: five keys, no prompt, no DISPATCH', async (t) => {
  const h = harness(t, { router: { devMode: false, authKeys: KEYS } });
  const res = await h.router.route(request());
  const [rejected] = h.ledger.query({ event_type: 'PROMPT_REJECTED' });
  assert.deepEqual(Object.keys(rejected!.metadata).sort(), [
    'agent_id',
    'contract_id',
    'error_code',
    'error_message',
    'session_id',
  ]);
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
  assert.equal(
    (await h.router.route(request({ auth_token: `${good[0]}.${forged}.${good[2]}` }))).error_code,
    'AUTH_BAD_SIGNATURE',
  );
  assert.equal(h.provider.calls.length, 1);
});

test('28 dev mode bypasses auth', async (t) => {
  const h = harness(t, { router: { devMode: true } });
  assert.equal((await h.router.route(request())).outcome, 'success');
});

function budgeter(t: { after: (fn: () => void) => void }, dir: string, sessionMaxTokens: number): Budgeter {
  const config = JSON.parse(readFileSync(configPath(CODE_ROOT, 'budget.json'), 'utf8')) as Record<string, unknown>;
  const b = Budgeter.open({
    dbPath: join(dir, 'budget.sqlite'),
    config: { ...config, limits: { session: { default: { max_tokens: sessionMaxTokens } } } },
  });
  t.after(() => b.close());
  return b;
}

test('26 budget exhausted: PROMPT_REJECTED BUDGET_EXHAUSTED, provider never called, budget record in the same batch', async (t) => {
  const h0 = harness(t);
  const h = harness(t, { router: { budget: budgeter(t, h0.dir, 100) } });
  const res = await h.router.route(request({ max_tokens: 500 }));
  assert.equal(res.error_code, 'BUDGET_EXHAUSTED');
  assert.equal(h.provider.calls.length, 0);
  const rejected = h.ledger.query({ event_type: 'PROMPT_REJECTED' });
  assert.equal(rejected[0]?.metadata.error_code, 'BUDGET_EXHAUSTED');
  assert.equal(res.exchange_entry_id, rejected[0]?.id);
  assert.equal(h.ledger.query({ event_type: 'DISPATCH' }).length, 0);
});

test('budget: reserved with the DISPATCH, settled with the EXCHANGE, released after a failure — all in the ledger', async (t) => {
  const h0 = harness(t);
  const budget = budgeter(t, h0.dir, 1_000_000);
  const h = harness(t, {
    router: { budget },
    script: [{ usage: { input_tokens: 20 } }, { error: { kind: 'invalid_request', status: 400 } }],
  });
  const ok = await h.router.route(request({ request_id: 'R1' }));
  assert.equal(ok.outcome, 'success');
  assert.equal(typeof ok.cost_incurred, 'number');
  const failed = await h.router.route(request({ request_id: 'R2' }));
  assert.equal(failed.outcome, 'error');
  // Two records a call: the reservation rides in the DISPATCH, the settlement or release in the EXCHANGE.
  const chain = h.ledger.query({ order: 'oldest' });
  assert.deepEqual(
    chain.map((e) => e.event_type),
    ['DISPATCH', 'EXCHANGE', 'DISPATCH', 'EXCHANGE'],
  );
  assert.deepEqual(
    chainBudgetRecords(chain).map((e) => [e.event_type, e.submission_id, e.id]),
    [
      ['BUDGET_ALLOCATED', 'R1', chain[0]?.id],
      ['BUDGET_SETTLED', 'R1', chain[1]?.id],
      ['BUDGET_ALLOCATED', 'R2', chain[2]?.id],
      ['BUDGET_RELEASED', 'R2', chain[3]?.id],
    ],
  );
  const status = budget.status({ session_id: 'SES-1' });
  assert.equal(status.pending_reservations, 0);
  // Settled at the real usage: 20 input + 50 output tokens for R1; R2 released.
  const session = status.scopes.find((s) => s.scope === 'session');
  assert.equal(session?.settled_tokens, 70);
  assert.equal(session?.reserved_tokens, 0);
});

test('a budget settle failure after the answer is surfaced, the exchange is still recorded', async (t) => {
  const h0 = harness(t);
  const budget = budgeter(t, h0.dir, 1_000_000);
  budget.settle = () => {
    throw new Error('budget db locked');
  };
  const h = harness(t, { router: { budget }, script: [{ usage: { input_tokens: 20 } }] });
  const res = await h.router.route(request());
  assert.equal(res.outcome, 'success');
  assert.match(res.warnings.map(warningText).join(), /BUDGET_SETTLE_FAILED: budget db locked/);
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
