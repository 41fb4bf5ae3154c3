// A host's own reconciliation passes (every 60 s on a running gateway) leave the calls it still has in flight alone:
// a stream that outlasts the orphan timeout is alive, and its real usage settles it, not an orphan's charge.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createDatabase, pgSkip, startPgServer, type PgServer } from '../../scripts/lib/pg-server.js';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';

// From the dev root, as the root runs them (and as coverage counts them).
const { openSharedStore } = await fromDevRoot<
  typeof import('../../staging/PKG-ROUTER-001/HOT/router/pg/shared-store.js')
>('HOT/router/pg/shared-store.js');
const { PgBudgeter } = await fromDevRoot<
  typeof import('../../staging/PKG-BUDGETER-001/HOT/budgeter/pg/pg-budgeter.js')
>('HOT/budgeter/pg/pg-budgeter.js');

const skip = pgSkip();
let server: PgServer | undefined;
before(async () => {
  if (skip === false) server = await startPgServer();
});
after(() => server?.stop());

const budgetConfig = {
  schema_version: '1',
  mode: 'enforce',
  currency: 'USD',
  pricing: {},
  limits: { session: { default: { max_tokens: 10_000 } } },
  rate_limits: {},
};
const reserve = (id: string) => ({
  request_id: id,
  session_id: 'S1',
  model: 'm1',
  estimated_input_tokens: 100,
  max_output_tokens: 50,
});

test("a host's reconciliation pass charges a dead host's reservation, never a call it is still streaming", {
  skip,
}, async () => {
  const url = await createDatabase(server as PgServer, 'reconcile_in_flight');
  const now = { ms: Date.UTC(2026, 0, 1, 10) };
  const clock = (): number => now.ms;
  const shared = await openSharedStore(url, { budgetConfig, clock, orphanTimeoutMs: 5000 });
  const dead = await PgBudgeter.open(url, { config: budgetConfig, clock });
  const budget = shared.store.budget;
  assert.ok(budget, 'a shared store budgets');
  try {
    assert.equal((await budget.reserve(reserve('LIVE-STREAM'))).ok, true);
    assert.equal((await dead.reserve(reserve('DEAD-HOST'))).ok, true);
    const replay = await budget.reserve(reserve('DEAD-HOST'));
    assert.ok(replay.ok && replay.replayed, 'a replay of the dead host reservation (which the router refuses)');
    now.ms += 60_000;
    const pass = await shared.reconcile();
    assert.deepEqual(
      pass?.map((r) => r.request_id),
      ['DEAD-HOST'],
      'the orphan of the host that died is charged, the stream still running here is not',
    );
    const settled = await budget.settle({
      request_id: 'LIVE-STREAM',
      usage: { input_tokens: 80, output_tokens: 20 },
    });
    assert.equal(settled.usage_known, true, 'the stream settles at its real usage when it ends');
    assert.equal(settled.reservation.charged_tokens, 100);
  } finally {
    await dead.close();
    await shared.close();
  }
});
