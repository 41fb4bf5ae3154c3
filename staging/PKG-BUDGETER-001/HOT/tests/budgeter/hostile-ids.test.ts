import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Budgeter, parseBudgetConfig, type ReserveOutcome } from '../../budgeter/index.js';
import { manualClock, request, tempDir, testConfig } from './helpers.js';

/**
 * Scope ids are caller-chosen printable ASCII, so they include the names of Object.prototype members. A per-id
 * limit table (`by_id`) must only ever answer with the operator's own entries: an id such as `constructor`
 * must fall back to the kind's default limit, not read an inherited function or object as a limit that has no
 * `max_tokens` and so no limit at all.
 */
const INHERITED = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', 'isPrototypeOf'];

function open(t: import('node:test').TestContext, config = testConfig()): Budgeter {
  const b = Budgeter.open({ dbPath: join(tempDir(t), 'budget.sqlite'), config, clock: manualClock().now });
  t.after(() => b.close());
  return b;
}

function ok(outcome: ReserveOutcome): boolean {
  return outcome.ok;
}

const limits = {
  session: { default: { max_tokens: 200 }, by_id: { vip: { max_tokens: 10_000 } } },
  agent: { default: { max_tokens: 200 }, by_id: { vip: { max_tokens: 10_000 } } },
  key: { default: { max_tokens: 200 }, by_id: { vip: { max_tokens: 10_000 } } },
};

for (const id of INHERITED) {
  test(`a session, agent or key scope named ${JSON.stringify(id)} gets the default limit, not an inherited one`, (t) => {
    const b = open(t, testConfig({ limits }));
    // 150 tokens each: the first fits the default of 200, the second must be refused in that scope.
    assert.equal(ok(b.reserve(request('S-1', { session_id: id }))), true);
    const session = b.reserve(request('S-2', { session_id: id }));
    assert.equal(session.ok, false, `session ${id} overspent its default limit: ${JSON.stringify(session)}`);
    assert.deepEqual(!session.ok && session.violations.map((v) => `${v.scope}:${v.scope_id}:${v.limit_value}`), [
      `session:${id}:200`,
    ]);

    assert.equal(ok(b.reserve(request('A-1', { session_id: 'SA', agent_id: id }))), true);
    const agent = b.reserve(request('A-2', { session_id: 'SA', agent_id: id }));
    assert.equal(agent.ok, false, `agent ${id} overspent its default limit`);

    assert.equal(ok(b.reserve(request('K-1', { session_id: 'SK1', budget_scope: id }))), true);
    const key = b.reserve(request('K-2', { session_id: 'SK2', budget_scope: id }));
    assert.equal(key.ok, false, `key scope ${id} overspent its default limit`);

    const status = b.status({ session_id: id }).scopes.find((s) => s.scope === 'session');
    assert.deepEqual(status?.limit, { max_tokens: 200 });
    assert.equal(status?.state, 'ok');
  });
}

test('without a default, an inherited name is unlimited like any unconfigured id, and reports no limit', (t) => {
  const b = open(t, testConfig({ limits: { session: { by_id: { vip: { max_tokens: 100 } } } } }));
  assert.equal(ok(b.reserve(request('R1', { session_id: 'constructor' }))), true);
  const status = b.status({ session_id: 'constructor' }).scopes.find((s) => s.scope === 'session');
  assert.equal(status?.limit, null);
  assert.equal(status?.state, 'unlimited');
});

test('an operator entry literally named "__proto__" in a config file is an own entry and is enforced', (t) => {
  const text = JSON.stringify(testConfig({ limits: { session: { default: { max_tokens: 10_000 } } } })).replace(
    '"default":',
    '"by_id":{"__proto__":{"max_tokens":200}},"default":',
  );
  const config = parseBudgetConfig(JSON.parse(text), 'hostile.json');
  const b = open(t, config);
  assert.equal(ok(b.reserve(request('R1', { session_id: '__proto__' }))), true);
  assert.equal(ok(b.reserve(request('R2', { session_id: '__proto__' }))), false, '__proto__ entry not enforced');
  // Any other session still gets the default.
  assert.equal(ok(b.reserve(request('R3', { session_id: 'other' }))), true);
  assert.equal(ok(b.reserve(request('R4', { session_id: 'other' }))), true);
});
