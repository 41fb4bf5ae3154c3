import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { Budgeter } from '../../budgeter/index.js';
import { outboxRow } from '../../budgeter/kept-records.js';
import { chainBudgetRecords, foldBudget } from '../../budgeter/records.js';
import type { AppendInput } from '#kernel/ledger/index.js';
import { manualClock, request, tempDir, testConfig } from './helpers.js';

const schema = JSON.parse(
  readFileSync(new URL('../../schemas/budget-record.schema.json', import.meta.url), 'utf8'),
) as object;
const validate = new Ajv({ strict: false, allErrors: true }).compile(schema);

function check(records: readonly AppendInput[]): void {
  for (const record of records)
    assert.ok(validate(record), `${record.event_type}/${record.decision}: ${JSON.stringify(validate.errors)}`);
}

test('every kind of budget record matches budget-record.schema.json', (t) => {
  const clock = manualClock();
  const b = Budgeter.open({
    dbPath: join(tempDir(t), 'b.sqlite'),
    clock: clock.now,
    config: testConfig({
      mode: 'warn',
      limits: { session: { by_id: { tight: { max_tokens: 100, max_cost: 0.0001 } } } },
      rate_limits: { agent: { window_ms: 1000, max_requests: 1 } },
    }),
  });
  t.after(() => b.close());
  const seen = new Set<string>();
  const note = (records: readonly AppendInput[]) => {
    check(records);
    for (const r of records) seen.add(`${r.event_type}/${r.decision}`);
  };
  note(b.reserve(request('R1', { work_order_id: 'WO', agent_id: 'A' })).records);
  note(b.reserve(request('R2', { work_order_id: 'WO', agent_id: 'A' })).records);
  note(b.settle({ request_id: 'R1', usage: { input_tokens: 1, output_tokens: 2, cache_write_tokens: 3 } }).records);
  note(b.settle({ request_id: 'R2', usage: 'garbage' }).records);
  note(b.reserve(request('R3', { session_id: 'tight', model: 'unpriced' })).records);
  note(b.release('R3').records);
  note(b.reserve(request('R4', { session_id: 'tight', estimated_input_tokens: 10, max_output_tokens: 0 })).records);
  note(b.settle({ request_id: 'R4', usage: { input_tokens: 500, output_tokens: 0 } }).records);
  const enforce = Budgeter.open({
    dbPath: join(tempDir(t), 'e.sqlite'),
    config: testConfig({ limits: { agent: { default: { max_tokens: 1 } } } }),
  });
  t.after(() => enforce.close());
  note(enforce.reserve(request('R5', { agent_id: 'A' })).records);
  assert.deepEqual([...seen].sort(), [
    'BUDGET_ALLOCATED/RESERVED',
    'BUDGET_ALLOCATED/RESERVED_OVER_BUDGET',
    'BUDGET_EXCEEDED/OVERSPENT',
    'BUDGET_EXCEEDED/REFUSED',
    'BUDGET_EXCEEDED/WARNED',
    'BUDGET_RELEASED/RELEASED',
    'BUDGET_SETTLED/SETTLED',
    'BUDGET_SETTLED/SETTLED_USAGE_UNKNOWN',
  ]);
});

test('the schema rejects a settlement that reports an unknown cost as a number string or drops a field', () => {
  const bad = {
    event_type: 'BUDGET_SETTLED',
    submission_id: 'R1',
    decision: 'SETTLED',
    reason: 'x',
    metadata: {
      request_id: 'R1',
      session_id: 'S1',
      work_order_id: null,
      agent_id: null,
      model: 'm1',
      mode: 'enforce',
      currency: 'USD',
      cost: 'unknown',
    },
  };
  assert.equal(validate(bad), false);
});

test('kept records are read back only as the records a budget step makes for that request', (t) => {
  const dir = tempDir(t);
  const clock = manualClock();
  const b = Budgeter.open({ dbPath: join(dir, 'b.sqlite'), config: testConfig(), clock: clock.now });
  try {
    assert.equal(b.reserve(request('k1')).ok, true);
    const settled = b.settle({ request_id: 'k1', usage: { input_tokens: 10, output_tokens: 5 } });
    const kept = { request_id: 'k1', records: JSON.stringify(settled.records) };
    assert.deepEqual(outboxRow(kept), { request_id: 'k1', records: settled.records });
    const [record] = settled.records as [AppendInput];
    const refused = (records: unknown, why: RegExp, id = 'k1'): void => {
      const row = outboxRow({
        request_id: id,
        records: typeof records === 'string' ? records : JSON.stringify(records),
      });
      assert.deepEqual(row.records, [], 'nothing of it is delivered');
      assert.match(row.problem ?? '', why);
      assert.match(row.problem ?? '', /^ERR_BUDGET_DB: /);
    };
    refused('{"not":"json"', /are not JSON/);
    refused({ event_type: 'BUDGET_SETTLED' }, /not a list of records/);
    refused([], /not a list of records/);
    refused('x'.repeat((1 << 20) + 1), /at most 1048576 characters/);
    // Another kind (one the chain gives weight to), another request's record, content, or a mangled record.
    refused([{ ...record, event_type: 'ROOT_CREATED' }], /does not make for it/);
    refused([record], /does not make for it/, 'k2');
    refused([{ ...record, metadata: { ...record.metadata, request_id: 'k2' } }], /does not make for it/);
    refused([{ ...record, content: { prompt: ['x'], response: [] } }], /does not make for it/);
    refused([{ ...record, decision: 42 }], /budget-record\.schema\.json/);
  } finally {
    b.close();
  }
});

test('a reservation folded into its DISPATCH and a settlement or release into its EXCHANGE unfold to the records the budgeter made', (t) => {
  const b = Budgeter.open({
    dbPath: join(tempDir(t), 'f.sqlite'),
    config: testConfig({ mode: 'warn', limits: { session: { by_id: { tight: { max_tokens: 100 } } } } }),
  });
  t.after(() => b.close());
  const call = (requestId: string, extra: Record<string, unknown>, end: (id: string) => readonly AppendInput[]) => {
    const reserved = b.reserve(request(requestId, extra));
    assert.equal(reserved.ok, true);
    const allocation = reserved.records.filter((r) => r.event_type === 'BUDGET_ALLOCATED');
    const settlement = end(requestId).filter((r) => r.event_type !== 'BUDGET_EXCEEDED');
    const identity = {
      agent_id: typeof extra.agent_id === 'string' ? extra.agent_id : '',
      session_id: typeof extra.session_id === 'string' ? extra.session_id : 'S1',
    };
    const dispatch = foldBudget(
      {
        event_type: 'DISPATCH',
        submission_id: 'PRC-1',
        decision: 'DISPATCHED',
        reason: 'Dispatching to mock/m1',
        metadata: { ...identity, contract_id: 'PRC-1' },
      },
      allocation[0] as AppendInput,
    );
    const exchange = foldBudget(
      {
        event_type: 'EXCHANGE',
        submission_id: 'PRC-1',
        decision: 'SUCCESS',
        reason: 'Exchange completed',
        metadata: {
          ...identity,
          dispatch_entry_id: 'LED-d',
          work_order_id: typeof extra.work_order_id === 'string' ? extra.work_order_id : '',
        },
      },
      settlement[0] as AppendInput,
    );
    const chain = [
      { id: 'LED-d', ...dispatch, metadata: dispatch.metadata ?? {} },
      { id: 'LED-e', ...exchange, metadata: exchange.metadata ?? {} },
    ];
    const unfolded = chainBudgetRecords(chain).map(({ event_type, submission_id, decision, reason, metadata }) => ({
      event_type,
      submission_id,
      decision,
      reason,
      metadata,
    }));
    assert.deepEqual(unfolded, [...allocation, ...settlement], requestId);
    check(unfolded as AppendInput[]);
    // What rides folded leaves out what the host record says and what the reservation already said.
    const folded = exchange.metadata?.budget as Record<string, unknown>;
    for (const key of ['session_id', 'agent_id', 'mode', 'currency', 'reserved_tokens', 'reserved_cost'])
      assert.equal(key in folded, false, `${requestId}: ${key}`);
  };
  call(
    'R1',
    { work_order_id: 'WO', agent_id: 'A' },
    (id) => b.settle({ request_id: id, usage: { input_tokens: 1, output_tokens: 2, cache_write_tokens: 3 } }).records,
  );
  call('R2', { agent_id: 'A' }, (id) => b.settle({ request_id: id, usage: 'garbage' }).records);
  call('R3', { session_id: 'tight', model: 'unpriced' }, (id) => b.release(id).records);
  call(
    'R4',
    { session_id: 'tight', estimated_input_tokens: 10, max_output_tokens: 0 },
    (id) => b.settle({ request_id: id, usage: { input_tokens: 500, output_tokens: 0 } }).records,
  );
});
