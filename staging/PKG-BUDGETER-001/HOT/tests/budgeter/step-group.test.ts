import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Budgeter, type ReserveOutcome } from '../../budgeter/index.js';
import { StepGroup } from '../../budgeter/step-group.js';
import { manualClock, request, tempDir, testConfig } from './helpers.js';

function open(t: import('node:test').TestContext, config = testConfig()): { b: Budgeter; dbPath: string } {
  const dbPath = join(tempDir(t), 'budget.sqlite');
  const b = Budgeter.open({ dbPath, config, clock: manualClock().now });
  t.after(() => b.close());
  return { b, dbPath };
}

const limited = testConfig({ limits: { session: { default: { max_tokens: 1000 } } } });

test('the steps of calls in flight share one transaction and spend no more than steps taken one at a time', async (t) => {
  const { b, dbPath } = open(t, limited);
  const steps = new StepGroup(b);
  // A call in flight: its reservation is open, so the next steps wait for the turn's end and go together.
  assert.equal((await steps.reserve(() => b.reserve(request('R0')))).ok, true);
  const commitsBefore = b.commitCount.lazy;
  const groupsBefore = steps.stats.groups;
  const reader = new Database(dbPath, { readonly: true });
  t.after(() => reader.close());
  const rows = reader.prepare('SELECT count(*) AS n FROM reservations WHERE request_id = ?');
  const seen: number[] = [];
  const outcomes = await Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      steps
        .reserve(() => b.reserve(request(`R${i + 1}`)))
        .then((outcome: ReserveOutcome) => {
          // Answered only once committed: another connection already reads the reservation.
          seen.push((rows.get(`R${i + 1}`) as { n: number }).n);
          return outcome;
        }),
    ),
  );
  assert.equal(steps.stats.groups - groupsBefore, 1, 'one group');
  assert.equal(b.commitCount.lazy - commitsBefore, 1, 'one commit for eight steps');
  // 150 tokens each under a 1,000-token session limit: R0 and the first five fit, in the order asked.
  assert.deepEqual(
    outcomes.map((o) => o.ok),
    [true, true, true, true, true, false, false, false],
  );
  assert.equal(b.status({ session_id: 'S1' }).scopes[0]?.reserved_tokens, 900);
  assert.deepEqual(
    seen,
    outcomes.map((o) => (o.ok ? 1 : 0)),
  );
});

test('a step that throws in a group rolls back only itself', async (t) => {
  const { b } = open(t, limited);
  const steps = new StepGroup(b);
  await steps.reserve(() => b.reserve(request('R0')));
  const [settled, conflict, fresh] = await Promise.allSettled([
    steps.finish(() => b.settle({ request_id: 'R0', usage: { input_tokens: 10, output_tokens: 5 } })),
    // The same request id with other values: refused inside its step, after the settle above wrote.
    steps.reserve(() => b.reserve(request('R0', { max_output_tokens: 51 }))),
    steps.reserve(() => b.reserve(request('R1'))),
  ]);
  assert.equal(settled.status, 'fulfilled');
  assert.equal(conflict.status, 'rejected');
  assert.equal((conflict as PromiseRejectedResult).reason.code, 'ERR_BUDGET_REQUEST_CONFLICT');
  assert.equal(fresh.status, 'fulfilled');
  const [session] = b.status({ session_id: 'S1' }).scopes;
  assert.equal(session?.settled_tokens, 15);
  assert.equal(session?.reserved_tokens, 150);
});

test('a group whose transaction cannot begin answers each step alone, and the next group commits', async (t) => {
  const { b, dbPath } = open(t, { ...limited, busy_timeout_ms: 20 });
  const steps = new StepGroup(b);
  await steps.reserve(() => b.reserve(request('R0')));
  const other = new Database(dbPath);
  t.after(() => other.close());
  other.prepare('BEGIN IMMEDIATE').run();
  const blocked = await Promise.allSettled([
    steps.reserve(() => b.reserve(request('R1'))),
    steps.reserve(() => b.reserve(request('R2'))),
  ]);
  assert.deepEqual(
    blocked.map((r) => r.status),
    ['rejected', 'rejected'],
  );
  for (const r of blocked) assert.equal((r as PromiseRejectedResult).reason.code, 'SQLITE_BUSY');
  other.prepare('ROLLBACK').run();
  const again = await Promise.all([
    steps.reserve(() => b.reserve(request('R1'))),
    steps.reserve(() => b.reserve(request('R2'))),
  ]);
  assert.deepEqual(
    again.map((o) => o.ok),
    [true, true],
  );
  assert.equal(b.status({ session_id: 'S1' }).scopes[0]?.reserved_tokens, 450);
});

test('a step with no call in flight runs in its own transaction without waiting for the next turn', async (t) => {
  const { b } = open(t, limited);
  const steps = new StepGroup(b);
  let immediateRan = false;
  setImmediate(() => {
    immediateRan = true;
  });
  const outcome = await steps.reserve(() => b.reserve(request('R1')));
  assert.equal(outcome.ok, true);
  assert.equal(immediateRan, false, 'answered before the turn ended');
  await steps.finish(() => b.settle({ request_id: 'R1', usage: { input_tokens: 10, output_tokens: 5 } }));
  assert.equal(steps.stats.groups, 2);
  assert.equal(steps.stats.steps, 2);
});
