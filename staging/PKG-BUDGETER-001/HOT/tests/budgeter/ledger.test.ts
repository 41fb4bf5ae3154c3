import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Ledger, verifyLedger } from '#kernel/ledger/index.js';
import { Budgeter } from '../../budgeter/index.js';
import { request, tempDir, testConfig } from './helpers.js';

function ledgerIn(t: import('node:test').TestContext, dir: string): Ledger {
  const ledger = Ledger.open(join(dir, 'ledger.sqlite'), { create: true, synchronous: 'NORMAL' });
  t.after(() => ledger.db.open && ledger.db.close());
  return ledger;
}

test('with a ledger: allocation, refusal and settlement are recorded once, with snake_case metadata the ledger indexes', (t) => {
  const dir = tempDir(t);
  const ledger = ledgerIn(t, dir);
  const b = Budgeter.open({
    dbPath: join(dir, 'b.sqlite'),
    config: testConfig({ limits: { work_order: { default: { max_tokens: 200 } } } }),
    ledger,
  });
  t.after(() => b.close());
  const r = b.reserve(request('R1', { work_order_id: 'WO1', agent_id: 'A1' }));
  assert.equal(r.ok, true);
  assert.equal(r.ledger_entry_ids.length, 1);
  b.reserve(request('R1', { work_order_id: 'WO1', agent_id: 'A1' }));
  const no = b.reserve(request('R2', { work_order_id: 'WO1', agent_id: 'A1' }));
  assert.equal(no.ok, false);
  b.settle({ request_id: 'R1', usage: { input_tokens: 90, output_tokens: 10, cache_write_1h_tokens: 5 } });
  b.settle({ request_id: 'R1', usage: { input_tokens: 90, output_tokens: 10, cache_write_1h_tokens: 5 } });
  const entries = ledger.query({ work_order_id: 'WO1', order: 'oldest' });
  assert.deepEqual(
    entries.map((e) => `${e.event_type}/${e.decision}/${e.submission_id}`),
    ['BUDGET_ALLOCATED/RESERVED/R1', 'BUDGET_EXCEEDED/REFUSED/R2', 'BUDGET_SETTLED/SETTLED/R1'],
  );
  const settled = entries[2]?.metadata ?? {};
  assert.equal(entries[0]?.id, r.ledger_entry_ids[0]);
  assert.deepEqual(
    [
      settled.session_id,
      settled.agent_id,
      settled.input_tokens,
      settled.cache_write_1h_tokens,
      settled.tokens,
      settled.cost,
      settled.reserved_tokens,
    ],
    ['S1', 'A1', 90, 5, 105, (90 * 2 + 10 * 10 + 5 * 4) / 1e6, 150],
  );
  assert.equal(ledger.query({ agent_id: 'A1' }).length, 3);
  assert.equal(verifyLedger(ledger).ok, true);
});

test('without a ledger the records come back for the caller to batch with its own append', (t) => {
  const dir = tempDir(t);
  const ledger = ledgerIn(t, dir);
  const b = Budgeter.open({ dbPath: join(dir, 'b.sqlite'), config: testConfig() });
  t.after(() => b.close());
  const r = b.reserve(request('R1'));
  assert.deepEqual(r.ledger_entry_ids, []);
  const dispatch = {
    event_type: 'DISPATCH',
    submission_id: 'C1',
    decision: 'DISPATCHED',
    reason: 'test',
    metadata: { session_id: 'S1' },
  };
  const written = ledger.appendBatch([...r.records, dispatch]);
  assert.deepEqual(
    written.map((e) => e.event_type),
    ['BUDGET_ALLOCATED', 'DISPATCH'],
  );
  assert.deepEqual(b.reserve(request('R1')).records, [], 'a replay has nothing new to record');
  const released = b.release('R1');
  assert.equal(released.records[0]?.event_type, 'BUDGET_RELEASED');
});

test('a failed ledger append rolls the budget change back: a state change and its record exist together or not at all', (t) => {
  const dir = tempDir(t);
  const ledger = ledgerIn(t, dir);
  const config = testConfig({ limits: { session: { default: { max_tokens: 1000 } } } });
  const b = Budgeter.open({ dbPath: join(dir, 'b.sqlite'), config, ledger });
  t.after(() => b.close());
  ledger.db.close();
  assert.throws(() => b.reserve(request('R1')), {
    code: 'ERR_BUDGET_LEDGER',
    message: /BUDGET_ALLOCATED for request R1 failed, budget unchanged/,
  });
  assert.equal(b.status({ session_id: 'S1' }).scopes.length, 0, 'nothing was charged');
  const reopened = Ledger.open(join(dir, 'ledger.sqlite'), { synchronous: 'NORMAL' });
  t.after(() => reopened.db.close());
  const b2 = Budgeter.open({ dbPath: join(dir, 'b.sqlite'), config, ledger: reopened });
  t.after(() => b2.close());
  const again = b2.reserve(request('R1'));
  assert.equal(again.ok && again.replayed, false, 'a fresh reservation, not a replay of a half-done one');
  assert.equal(again.ok && again.remaining_tokens, 850);
  assert.equal(b2.reserve(request('R1')).ledger_entry_ids.length, 0, 'recorded once');
  assert.deepEqual(
    reopened.query({ event_type: 'BUDGET_ALLOCATED' }).map((e) => e.submission_id),
    ['R1'],
  );
});
