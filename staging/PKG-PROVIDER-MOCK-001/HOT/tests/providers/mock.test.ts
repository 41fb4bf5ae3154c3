import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isProviderError, isRetryableKind, PROVIDER_ERROR_KINDS } from '#providers/errors.js';
import { MockProvider } from '../../providers/mock/provider.js';
import { providerContract, type Scenario } from '#tests/providers/contract.js';
import { FakeClock } from '#tests/providers/fixtures/clock.js';
import { wireContract } from '#tests/providers/wire-contract.js';

providerContract({
  name: 'MockProvider',
  secret: null,
  reportsCacheWrite: true,
  async open(clock) {
    const mock = new MockProvider({ clock });
    const script = (s: Scenario): void => {
      switch (s.type) {
        case 'answer':
          mock.enqueue({ text: s.text, model: s.model, stop_reason: s.stop, usage: s.usage, request_id: s.request_id });
          break;
        case 'failure': {
          const retryAfter =
            s.retry_after === undefined
              ? null
              : 'seconds' in s.retry_after
                ? s.retry_after.seconds * 1000
                : Date.parse(s.retry_after.date) - clock.now();
          mock.enqueue({
            error: { kind: s.kind, status: s.status, retry_after_ms: retryAfter, request_id: s.request_id },
          });
          break;
        }
        case 'malformed':
          mock.enqueue({ error: { kind: 'malformed_response' } });
          break;
        case 'slow':
        case 'stalled_body':
          mock.enqueue({ delay_ms: s.delay_ms });
          break;
        case 'unreachable':
          mock.enqueue({ error: { kind: 'network' } });
          break;
      }
    };
    return { provider: mock, script, received: () => mock.calls.length, close: async () => {} };
  },
});

const REQUEST = { model: 'mock-model-1', max_tokens: 100, prompt: 'What is the meaning of life?' };

test('mock: the default answer is configurable (the smoke test uses "The answer is 42")', async () => {
  const mock = new MockProvider({ defaultResponse: 'The answer is 42' });
  const result = await mock.send(REQUEST, { timeoutMs: 1000 });
  assert.equal(result.content, 'The answer is 42');
  // An honest count: at most 100, never more than the prompt's 28 bytes (a real tokenizer cannot count more).
  assert.deepEqual([result.usage.input_tokens, result.usage.output_tokens], [28, 50]);
  const long = await mock.send({ ...REQUEST, prompt: 'x'.repeat(500) }, { timeoutMs: 1000 });
  assert.equal(long.usage.input_tokens, 100);
  assert.equal(result.model, 'mock-model-1');
  assert.equal((await new MockProvider().send(REQUEST, { timeoutMs: 1000 })).content, 'Mock response');
});

test('mock: scripted steps are used in order, then the default; every call is recorded', async () => {
  const clock = new FakeClock();
  const mock = new MockProvider({ clock, script: [{ text: 'first' }, { error: { kind: 'overloaded' } }] });
  mock.enqueue({ text: 'third', usage: { input_tokens: null } });
  assert.equal((await mock.send(REQUEST, { timeoutMs: 10 })).content, 'first');
  const error = await mock.send({ ...REQUEST, prompt: 'second' }, { timeoutMs: 20 }).catch((e: unknown) => e);
  assert.ok(isProviderError(error));
  assert.equal(error.kind, 'overloaded');
  assert.equal(error.status, 529);
  const third = await mock.send(REQUEST, { timeoutMs: 30 });
  assert.equal(third.content, 'third');
  assert.equal(third.usage.input_tokens, null, 'a scripted unknown stays unknown');
  assert.equal((await mock.send(REQUEST, { timeoutMs: 40 })).content, 'Mock response');
  assert.equal(mock.pending, 0);
  assert.deepEqual(
    mock.calls.map((c) => [c.timeout_ms, 'prompt' in c.request ? c.request.prompt : null]),
    [
      [10, REQUEST.prompt],
      [20, 'second'],
      [30, REQUEST.prompt],
      [40, REQUEST.prompt],
    ],
  );
  assert.equal(mock.calls[0]?.at, clock.now());
});

test('mock: latency runs on the injected timers and is reported from the injected clock', async () => {
  const clock = new FakeClock();
  const mock = new MockProvider({ clock, timers: clock, latencyMs: 250 });
  let settled = false;
  const pending = mock.send(REQUEST, { timeoutMs: 1000 }).then((r) => {
    settled = true;
    return r;
  });
  clock.advance(249);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(settled, false, 'not answered before its latency elapsed');
  clock.advance(1);
  const result = await pending;
  assert.equal(result.latency_ms, 250);
  assert.equal(clock.pendingTimers, 0, 'the deadline timer is cleared');
});

test('mock: latency beyond the timeout fails as timeout at the deadline', async () => {
  const clock = new FakeClock();
  const mock = new MockProvider({ clock, timers: clock, script: [{ delay_ms: 5000, text: 'too late' }] });
  const pending = mock.send(REQUEST, { timeoutMs: 300 }).catch((e: unknown) => e);
  clock.advance(300);
  const error = await pending;
  assert.ok(isProviderError(error));
  assert.equal(error.kind, 'timeout');
  assert.equal(error.error_code, 'TIMEOUT');
  assert.equal(clock.now() - (mock.calls[0]?.at ?? 0), 300);
});

test("mock: every ProviderError kind can be scripted and carries the kind's retryability", async () => {
  for (const kind of PROVIDER_ERROR_KINDS) {
    const mock = new MockProvider({
      script: [{ error: { kind, retry_after_ms: kind === 'rate_limited' ? 1500 : null } }],
    });
    const error = await mock.send(REQUEST, { timeoutMs: 1000 }).catch((e: unknown) => e);
    assert.ok(isProviderError(error), kind);
    assert.equal(error.kind, kind);
    assert.equal(error.retryable, isRetryableKind(kind), kind);
    assert.equal(error.retry_after_ms, kind === 'rate_limited' ? 1500 : null);
  }
});

test('mock: a rendered body is accepted and its model reported', async () => {
  const mock = new MockProvider();
  const result = await mock.send(
    { body: { model: 'claude-x', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] } },
    { timeoutMs: 100 },
  );
  assert.equal(result.model, 'claude-x');
  const bad = await mock
    .send({ body: { model: 'claude-x', messages: [] } }, { timeoutMs: 100 })
    .catch((e: unknown) => e);
  assert.ok(isProviderError(bad) && bad.kind === 'invalid_request');
  assert.equal(mock.calls.length, 1);
});

wireContract({
  name: 'MockProvider (in-process Anthropic and OpenAI surfaces)',
  secret: null,
  neutralSurface: 'anthropic.messages',
  generation: ['anthropic.messages', 'openai.chat', 'openai.responses'],
  async open(clock) {
    const mock = new MockProvider({ clock });
    return {
      provider: mock,
      answer: (_surface, a) => {
        mock.enqueue({ text: a.text, model: a.model, stop_reason: a.stop, usage: a.usage, request_id: a.request_id });
      },
      rateLimited: (requestId, seconds) => {
        mock.enqueue({
          error: { kind: 'rate_limited', status: 429, retry_after_ms: seconds * 1000, request_id: requestId },
        });
      },
      received: () => mock.calls.length,
      close: async () => {},
    };
  },
});
