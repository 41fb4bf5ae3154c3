import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Budgeter, type Refused } from '../../budgeter/index.js';
import { manualClock, request, tempDir, testConfig } from './helpers.js';

function setup(
  t: import('node:test').TestContext,
  rate: { window_ms: number; max_requests?: number; max_tokens?: number },
  mode: 'enforce' | 'warn' = 'enforce',
) {
  const clock = manualClock(Date.UTC(2026, 0, 1, 0, 0, 0));
  const b = Budgeter.open({
    dbPath: join(tempDir(t), 'b.sqlite'),
    config: testConfig({ mode, rate_limits: { session: rate } }),
    clock: clock.now,
  });
  t.after(() => b.close());
  return { b, clock };
}

test('requests per window: the next request is RATE_LIMITED with the time left in the window, then allowed in the next window', (t) => {
  const { b, clock } = setup(t, { window_ms: 60_000, max_requests: 2 });
  assert.equal(b.reserve(request('R1')).ok, true);
  clock.advance(15_000);
  assert.equal(b.reserve(request('R2')).ok, true);
  clock.advance(5_000);
  const no = b.reserve(request('R3')) as Refused;
  assert.equal(no.ok, false);
  assert.equal(no.code, 'RATE_LIMITED');
  assert.equal(no.retry_after_ms, 40_000);
  assert.equal(no.violations[0]?.limit, 'max_requests');
  clock.advance(40_000);
  assert.equal(b.reserve(request('R3')).ok, true, 'a new window starts');
});

test('tokens per window count the reserved tokens of every request in the window', (t) => {
  const { b, clock } = setup(t, { window_ms: 1000, max_tokens: 400 });
  assert.equal(b.reserve(request('R1')).ok, true);
  assert.equal(b.reserve(request('R2')).ok, true);
  const no = b.reserve(request('R3')) as Refused;
  assert.equal(no.code, 'RATE_LIMITED');
  assert.deepEqual(
    [no.violations[0]?.used, no.violations[0]?.requested, no.violations[0]?.limit_value],
    [300, 150, 400],
  );
  assert.equal(
    b.reserve(request('R4', { estimated_input_tokens: 50, max_output_tokens: 50 })).ok,
    true,
    'a smaller request fits',
  );
  clock.advance(1000);
  assert.equal(b.reserve(request('R3')).ok, true);
});

test('warn mode lets a rate-limited request through with a warning', (t) => {
  const { b } = setup(t, { window_ms: 1000, max_requests: 1 }, 'warn');
  assert.equal(b.reserve(request('R1')).ok, true);
  const over = b.reserve(request('R2'));
  assert.equal(over.ok, true);
  assert.equal(over.ok && over.warnings[0]?.code, 'RATE_LIMITED');
});

test('releasing a call that never happened gives its slot back in the window it was counted in, not in a later one', (t) => {
  const { b, clock } = setup(t, { window_ms: 60_000, max_requests: 1 });
  assert.equal(b.reserve(request('R1')).ok, true);
  assert.equal(b.reserve(request('R2')).ok, false);
  b.release('R1');
  assert.equal(b.reserve(request('R2')).ok, true, 'the slot came back');
  clock.advance(60_000);
  assert.equal(b.reserve(request('R3')).ok, true);
  b.release('R2');
  assert.equal(
    b.reserve(request('R4')).ok,
    false,
    'R2 was counted in an earlier window; the current one is still full',
  );
});
