import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BreakerRegistry, type BreakerSnapshot, CircuitBreaker, MAX_BREAKERS } from '../../router/breaker.js';
import { MockProvider } from '#providers/mock/provider.js';
import type { Provider } from '#providers/spec.js';
import { harness, request, type Step } from './harness.js';

const fail500: Step = { error: { kind: 'server_error', status: 500, message: 'boom' } };
const oneAttempt = { retry: { max_attempts: 1, base_delay_ms: 0, max_delay_ms: 0, max_retry_after_ms: 0 } };

test('24 three failures open the breaker; the fourth call is rejected without DISPATCH', async (t) => {
  const h = harness(t, { script: [fail500, fail500, fail500], config: oneAttempt });
  for (let i = 0; i < 3; i += 1) assert.equal((await h.router.route(request())).outcome, 'error');
  const res = await h.router.route(request());
  assert.equal(res.error_code, 'CIRCUIT_OPEN');
  assert.equal(res.dispatch_entry_id, '');
  assert.equal(h.provider.calls.length, 3);
  assert.equal(h.ledger.query({ event_type: 'DISPATCH' }).length, 3);
  assert.equal(h.router.breakerStates()[0]?.state, 'OPEN');
});

test('25 OPEN → HALF_OPEN after the reset timeout → a probe success CLOSES it', async (t) => {
  const h = harness(t, { script: [fail500, fail500, fail500], config: oneAttempt });
  for (let i = 0; i < 3; i += 1) await h.router.route(request());
  h.now.ms += h.config.breaker.reset_timeout_ms - 1;
  assert.equal((await h.router.route(request())).error_code, 'CIRCUIT_OPEN');
  h.now.ms += 1;
  assert.equal((await h.router.route(request())).outcome, 'success');
  assert.equal(h.router.breakerStates()[0]?.state, 'CLOSED');
});

test('retries stop as soon as the breaker opens inside one call', async (t) => {
  const h = harness(t, {
    script: [fail500, fail500, fail500, fail500],
    config: { retry: { max_attempts: 10, base_delay_ms: 1, max_delay_ms: 1, max_retry_after_ms: 0 } },
  });
  const res = await h.router.route(request());
  assert.equal(res.attempts.length, 3);
  assert.equal(h.provider.calls.length, 3);
});

test('a breaker that opens while a call waits to retry stops the retry: no attempt after the wait', async (t) => {
  let breaker: CircuitBreaker | null = null;
  const h = harness(t, {
    script: [fail500, fail500],
    config: { retry: { max_attempts: 10, base_delay_ms: 1, max_delay_ms: 1, max_retry_after_ms: 0 } },
    router: {
      sleep: async () => {
        breaker?.recordFailure();
        breaker?.recordFailure();
      },
    },
  });
  breaker = h.router.breakers.for('mock', 'mock-model-1');
  const res = await h.router.route(request());
  assert.equal(breaker.snapshot().state, 'OPEN');
  assert.equal(res.attempts.length, 1, JSON.stringify(res.attempts));
  assert.equal(h.provider.calls.length, 1);
});

test('a call admitted before the breaker opened stops retrying while it is half-open: only the probe reaches the provider', async (t) => {
  let breaker: CircuitBreaker | null = null;
  const h = harness(t, {
    script: [fail500, fail500],
    config: { retry: { max_attempts: 10, base_delay_ms: 1, max_delay_ms: 1, max_retry_after_ms: 0 } },
    router: {
      // While the call waits to retry, other calls open the breaker and, after its reset timeout, one probes.
      sleep: async () => {
        if (breaker === null) return;
        breaker.recordFailure();
        breaker.recordFailure();
        assert.equal(breaker.snapshot().state, 'OPEN');
        h.now.ms += h.config.breaker.reset_timeout_ms;
        assert.equal(breaker.admit(), true, 'the probe');
        assert.equal(breaker.snapshot().state, 'HALF_OPEN');
      },
    },
  });
  breaker = h.router.breakers.for('mock', 'mock-model-1');
  const res = await h.router.route(request());
  assert.equal(res.outcome, 'error');
  assert.equal(res.attempts.length, 1, JSON.stringify(res.attempts));
  assert.equal(h.provider.calls.length, 1, 'no second attempt beside the probe');
  assert.equal(breaker.snapshot().probes_in_flight, 1, 'the probe keeps its slot');
});

test('client errors (4xx) never open the breaker', async (t) => {
  const bad: Step = { error: { kind: 'invalid_request', status: 400, message: 'bad' } };
  const h = harness(t, { script: [bad, bad, bad, bad], config: oneAttempt });
  for (let i = 0; i < 4; i += 1) assert.equal((await h.router.route(request())).error_code, 'INVALID_REQUEST');
  assert.equal(h.router.breakerStates()[0]?.state, 'CLOSED');
  assert.equal(h.provider.calls.length, 4);
});

test('breaker state machine: a half-open probe failure re-opens; only N probes pass; a released probe is reusable', () => {
  let now = 0;
  const b = new CircuitBreaker('p/m', { failure_threshold: 2, reset_timeout_ms: 100, half_open_probes: 1 }, () => now);
  assert.ok(b.admit());
  b.recordFailure();
  assert.equal(b.snapshot().state, 'CLOSED');
  assert.ok(b.admit());
  b.recordFailure();
  assert.equal(b.snapshot().state, 'OPEN');
  assert.equal(b.admit(), false);
  now = 100;
  assert.ok(b.admit());
  assert.equal(b.snapshot().state, 'HALF_OPEN');
  assert.equal(b.admit(), false, 'one probe at a time');
  b.recordFailure();
  assert.equal(b.snapshot().state, 'OPEN');
  assert.equal(b.snapshot().opened_at, new Date(100).toISOString());
  now = 200;
  assert.ok(b.admit());
  b.releaseProbe();
  assert.ok(b.admit(), 'a released probe can be taken again');
  b.recordSuccess();
  assert.deepEqual(b.snapshot(), {
    key: 'p/m',
    state: 'CLOSED',
    consecutive_failures: 0,
    opened_at: null,
    probes_in_flight: 0,
  });
});

test('transition listeners hear openings and closings after an opening, not probes, successes while closed or restores', () => {
  let now = 1000;
  const registry = new BreakerRegistry({ failure_threshold: 2, reset_timeout_ms: 100, half_open_probes: 1 }, () => now);
  const heard: Array<Pick<BreakerSnapshot, 'key' | 'state' | 'opened_at'>> = [];
  const stop = registry.onTransition(({ key, state, opened_at }) => heard.push({ key, state, opened_at }));
  registry.onTransition(() => {
    throw new Error('a faulty observer');
  });
  const b = registry.for('p', 'm');
  b.recordSuccess();
  b.recordFailure();
  assert.equal(heard.length, 0, 'a success while closed and a failure under the threshold are not transitions');
  b.recordFailure();
  assert.deepEqual(heard, [{ key: 'p/m', state: 'OPEN', opened_at: new Date(1000).toISOString() }]);
  now = 1050;
  b.recordFailure();
  assert.equal(heard.at(-1)?.opened_at, new Date(1050).toISOString(), 'a late failure while open re-arms it');
  now = 1150;
  assert.ok(b.admit());
  assert.equal(heard.length, 2, 'OPEN → HALF_OPEN is not announced');
  b.recordFailure();
  assert.deepEqual(heard.at(-1), { key: 'p/m', state: 'OPEN', opened_at: new Date(1150).toISOString() });
  now = 1250;
  assert.ok(b.admit());
  b.recordSuccess();
  assert.deepEqual(heard.at(-1), { key: 'p/m', state: 'CLOSED', opened_at: null });
  assert.equal(heard.length, 4);
  registry.restore([
    {
      key: 'p/m',
      state: 'OPEN',
      consecutive_failures: 2,
      opened_at: new Date(1250).toISOString(),
      probes_in_flight: 0,
    },
  ]);
  assert.equal(heard.length, 4, 'a restored state is not announced again');
  assert.equal(registry.byKey('p/m'), b, 'byKey names the same breaker as for()');
  stop();
  b.recordSuccess();
  assert.equal(heard.length, 4, 'a stopped listener hears nothing');
});

test('a success from a call admitted before the breaker opened does not close it; a probe does', () => {
  let now = 0;
  const b = new CircuitBreaker('p/m', { failure_threshold: 2, reset_timeout_ms: 100, half_open_probes: 1 }, () => now);
  assert.ok(b.admit(), 'a slow call is admitted while closed');
  b.recordFailure();
  b.recordFailure();
  assert.equal(b.snapshot().state, 'OPEN');
  b.recordSuccess();
  assert.equal(b.snapshot().state, 'OPEN', 'the slow call answering late leaves it open');
  assert.equal(b.admit(), false);
  now = 100;
  assert.ok(b.admit());
  b.recordSuccess();
  assert.equal(b.snapshot().state, 'CLOSED', 'the probe closes it');
});

test('random model names cannot grow the breakers without bound, nor push an open breaker or a failure out', () => {
  const registry = new BreakerRegistry({ failure_threshold: 2, reset_timeout_ms: 1000, half_open_probes: 1 }, () => 0);
  const opened = registry.for('anthropic', 'claude-sonnet-4-5');
  opened.recordFailure();
  opened.recordFailure();
  const counting = registry.for('openai', 'gpt-4.1');
  counting.recordFailure();
  const inFlight = registry.for('openai', 'gpt-4.1-mini');
  assert.ok(inFlight.admit(), 'a call is admitted, then names flood in while it is in flight');
  for (let i = 0; i < MAX_BREAKERS * 20; i += 1) registry.for('anthropic', `model-${i}`).admit();
  const states = registry.snapshot();
  assert.ok(states.length <= MAX_BREAKERS, `${states.length} breakers kept for ${MAX_BREAKERS * 20} names`);
  assert.equal(registry.byKey('anthropic/claude-sonnet-4-5').snapshot().state, 'OPEN', 'the open breaker is kept');
  assert.equal(registry.byKey('openai/gpt-4.1').snapshot().consecutive_failures, 1, 'a failure count is kept');
  inFlight.recordFailure();
  inFlight.recordFailure();
  assert.equal(
    registry.byKey('openai/gpt-4.1-mini').snapshot().state,
    'OPEN',
    'failures of a call admitted before the flood reach the breaker the registry holds for its key',
  );
});

test('half-open, only probes decide: a call admitted before the opening can neither free the probe slot nor re-open it', () => {
  let now = 0;
  const b = new CircuitBreaker('p/m', { failure_threshold: 1, reset_timeout_ms: 100, half_open_probes: 1 }, () => now);
  const early = b.pass();
  const late = b.pass();
  assert.ok(early && late, 'two calls admitted while closed');
  b.recordFailure(early);
  assert.equal(b.snapshot().state, 'OPEN');
  now = 100;
  const probe = b.pass();
  assert.ok(probe, 'the probe is admitted');
  b.releaseProbe(late);
  assert.equal(b.admit(), false, 'the slow call ending (a 400, a client gone) leaves the one probe slot taken');
  b.recordFailure(late);
  assert.equal(b.snapshot().state, 'HALF_OPEN', "the slow call's failure is not the probe's: still half-open");
  b.recordSuccess(probe);
  assert.equal(b.snapshot().state, 'CLOSED', 'the probe closes it');
});

test('through the router: a call admitted before the opening that fails with a 4xx while half-open lets no second probe in', async (t) => {
  const mock = new MockProvider({
    script: [
      { error: { kind: 'server_error', status: 500, message: 'boom' } },
      { error: { kind: 'invalid_request', status: 400, message: 'bad' } },
      {},
      {},
    ],
  });
  // Each call waits in the provider until the test lets it answer, so the order of outcomes is the test's.
  const held: Array<() => void> = [];
  let arrived = (): void => {};
  const provider: Provider = {
    id: 'mock',
    async send(req, options) {
      await new Promise<void>((resolve) => {
        held.push(resolve);
        arrived();
      });
      return mock.send(req, options);
    },
  };
  const inProvider = (n: number): Promise<void> =>
    new Promise((resolve) => {
      arrived = () => {
        if (held.length >= n) resolve();
      };
      arrived();
    });
  const h = harness(t, {
    config: { ...oneAttempt, breaker: { failure_threshold: 1, reset_timeout_ms: 1000, half_open_probes: 1 } },
    router: { providers: [provider] },
  });
  const slow = h.router.route(request({ request_id: 'REQ-SLOW' }));
  await inProvider(1);
  const failing = h.router.route(request({ request_id: 'REQ-FAIL' }));
  await inProvider(2);
  held[1]?.();
  assert.equal((await failing).outcome, 'error');
  assert.equal(h.router.breakerStates()[0]?.state, 'OPEN');
  h.now.ms += 1000;
  const probe = h.router.route(request({ request_id: 'REQ-PROBE' }));
  await inProvider(3);
  held[0]?.();
  assert.equal((await slow).error_code, 'INVALID_REQUEST', 'the slow call ends with its 400 while the probe is out');
  const second = h.router.route(request({ request_id: 'REQ-SECOND' }));
  const first = await Promise.race([second.then(() => 'answered'), inProvider(4).then(() => 'sent')]);
  held[3]?.();
  assert.equal(first, 'answered', 'a second call reached the provider while the probe was out');
  assert.equal((await second).error_code, 'CIRCUIT_OPEN');
  held[2]?.();
  assert.equal((await probe).outcome, 'success');
  assert.equal(h.router.breakerStates()[0]?.state, 'CLOSED');
});

test('a persisted opening later than now (the clock stepped back before the restart) waits one reset timeout from now, not until then', () => {
  let now = 1_000_000;
  const registry = new BreakerRegistry({ failure_threshold: 2, reset_timeout_ms: 100, half_open_probes: 1 }, () => now);
  const hourAhead = now + 3_600_000;
  registry.restore([
    {
      key: 'p/m',
      state: 'OPEN',
      consecutive_failures: 2,
      opened_at: new Date(hourAhead).toISOString(),
      probes_in_flight: 0,
    },
    {
      key: 'p/past',
      state: 'OPEN',
      consecutive_failures: 2,
      opened_at: new Date(now - 50).toISOString(),
      probes_in_flight: 0,
    },
  ]);
  const b = registry.for('p', 'm');
  assert.equal(b.admit(), false, 'still open right after the restart');
  assert.equal(b.snapshot().opened_at, new Date(now).toISOString());
  assert.equal(
    registry.for('p', 'past').snapshot().opened_at,
    new Date(now - 50).toISOString(),
    'a past opening is kept',
  );
  now += 100;
  assert.equal(b.admit(), true, 'probes after one reset timeout');
  assert.equal(b.snapshot().state, 'HALF_OPEN');
});
