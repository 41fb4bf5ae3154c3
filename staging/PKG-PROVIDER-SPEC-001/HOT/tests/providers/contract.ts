// The one contract every provider meets. Each provider's test file calls `providerContract` with a
// harness that turns the scenarios below into that provider's behaviour (wire replies from a real
// 127.0.0.1 server for HTTP providers, script steps for the mock).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { inspect } from 'node:util';
import AjvModule from 'ajv';
import { isCpError } from '#kernel/errors.js';
import type { Clock } from '../../providers/clock.js';
import { isProviderError, type ProviderError, type ProviderErrorKind } from '../../providers/errors.js';
import type { Provider, ProviderResult, SimpleRequest } from '../../providers/spec.js';
import { fixedClock } from './fixtures/clock.js';
import type { WireUsage } from './fixtures/wire.js';

export type ContractStop = 'stop' | 'length' | 'tool_use';
export type ContractFailureKind = Extract<
  ProviderErrorKind,
  'rate_limited' | 'overloaded' | 'server_error' | 'spend_limit' | 'invalid_request' | 'auth'
>;

export type Scenario =
  | { type: 'answer'; text: string; model: string; stop: ContractStop; usage: WireUsage; request_id: string }
  | {
      type: 'failure';
      kind: ContractFailureKind;
      status: number;
      retry_after?: { seconds: number } | { date: string };
      request_id: string;
    }
  | { type: 'malformed' }
  | { type: 'slow'; delay_ms: number }
  /** Status and headers arrive at once; the body only after `delay_ms`. */
  | { type: 'stalled_body'; delay_ms: number }
  | { type: 'unreachable' };

export interface ContractRig {
  provider: Provider;
  /** The next send meets this scenario. */
  script(scenario: Scenario): void | Promise<void>;
  /** How many requests reached the far side so far. */
  received(): number;
  close(): Promise<void>;
}

export interface ContractHarness {
  name: string;
  /** The API key the provider was given; it must never show in a result or an error. */
  secret: string | null;
  /** Whether the wire format has a cache-write bucket (Chat Completions does not: writes are a known 0). */
  reportsCacheWrite: boolean;
  /** Whether its error replies name a request id (Gemini's carry none, in headers or body); default true. */
  errorRequestIds?: boolean;
  open(clock: Clock): Promise<ContractRig>;
}

const NOW = Date.parse('2026-03-04T05:06:07Z');
const REQUEST: SimpleRequest = {
  model: 'model-under-test',
  max_tokens: 256,
  prompt: 'What is the meaning of life?',
  system: [{ text: 'You are terse.', cache: true }],
};
const USAGE: WireUsage = { input_tokens: 1500, output_tokens: 42, cache_read_tokens: 1200, cache_write_tokens: 200 };

const Ajv = AjvModule.default;
const resultSchema = JSON.parse(
  readFileSync(new URL('../../schemas/provider-result.schema.json', import.meta.url), 'utf8'),
) as object;
const errorSchema = JSON.parse(
  readFileSync(new URL('../../schemas/provider-error.schema.json', import.meta.url), 'utf8'),
) as object;
const ajv = new Ajv({ allErrors: true, strict: true });
const validateResult = ajv.compile(resultSchema);
const validateError = ajv.compile(errorSchema);

async function withRig(harness: ContractHarness, fn: (rig: ContractRig) => Promise<void>): Promise<void> {
  const rig = await harness.open(fixedClock(NOW));
  try {
    await fn(rig);
  } finally {
    await rig.close();
  }
}

async function sendExpectingError(rig: ContractRig, timeoutMs = 5000): Promise<ProviderError> {
  const outcome = await rig.provider.send(REQUEST, { timeoutMs }).then(
    (result) => ({ result }),
    (error: unknown) => ({ error }),
  );
  if ('result' in outcome) assert.fail(`expected a ProviderError, got a result ${JSON.stringify(outcome.result)}`);
  const { error } = outcome;
  assert.ok(isProviderError(error), `expected a ProviderError, got ${inspect(error)}`);
  assert.ok(
    validateError(error.toJSON()),
    `error JSON does not match provider-error.schema.json: ${ajv.errorsText(validateError.errors)}`,
  );
  return error;
}

function assertNoSecret(harness: ContractHarness, what: string, ...values: unknown[]): void {
  if (harness.secret === null) return;
  for (const value of values) {
    const texts = [
      JSON.stringify(value) ?? '',
      inspect(value, { depth: 10, showHidden: true }),
      value instanceof Error ? `${value.message}\n${value.stack ?? ''}` : '',
    ];
    for (const text of texts) assert.ok(!text.includes(harness.secret), `${what} leaks the API key`);
  }
}

export function providerContract(harness: ContractHarness): void {
  describe(`provider contract: ${harness.name}`, () => {
    test('an answer: content, model, stop reason, request id, latency and usage with cache tokens', () =>
      withRig(harness, async (rig) => {
        await rig.script({
          type: 'answer',
          text: 'The answer is 42',
          model: 'model-v7',
          stop: 'stop',
          usage: USAGE,
          request_id: 'req-success-1',
        });
        const result = await rig.provider.send(REQUEST, { timeoutMs: 5000 });
        assert.ok(
          validateResult(result),
          `result does not match provider-result.schema.json: ${ajv.errorsText(validateResult.errors)}`,
        );
        assert.equal(result.provider_id, rig.provider.id);
        assert.equal(result.content, 'The answer is 42');
        assert.equal(result.model, 'model-v7');
        assert.equal(result.stop_reason, 'stop');
        assert.equal(typeof result.raw_stop_reason, 'string');
        assert.equal(result.request_id, 'req-success-1');
        assert.ok(result.latency_ms >= 0);
        assert.equal(result.usage.input_tokens, 1500);
        assert.equal(result.usage.output_tokens, 42);
        assert.equal(result.usage.cache_read_tokens, 1200);
        assert.equal(result.usage.cache_write_tokens, harness.reportsCacheWrite ? 200 : 0);
        assert.notEqual(result.usage.raw, null);
        assert.equal(rig.received(), 1);
        assertNoSecret(harness, 'the result', result);
      }));

    test('usage without cache activity reports the cache buckets as known zeros, not unknown', () =>
      withRig(harness, async (rig) => {
        await rig.script({
          type: 'answer',
          text: 'ok',
          model: 'model-v7',
          stop: 'stop',
          usage: { input_tokens: 12, output_tokens: 3, cache_read_tokens: 0, cache_write_tokens: 0 },
          request_id: 'r',
        });
        const { usage } = await rig.provider.send(REQUEST, { timeoutMs: 5000 });
        assert.deepEqual(
          [usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens],
          [12, 3, 0, 0],
        );
      }));

    for (const [stop, expected] of [
      ['length', 'length'],
      ['tool_use', 'tool_use'],
    ] as const) {
      test(`stop reason ${stop} is normalised`, () =>
        withRig(harness, async (rig) => {
          await rig.script({ type: 'answer', text: 'partial', model: 'm', stop, usage: USAGE, request_id: 'r' });
          const result: ProviderResult = await rig.provider.send(REQUEST, { timeoutMs: 5000 });
          assert.equal(result.stop_reason, expected);
        }));
    }

    const failures: {
      name: string;
      scenario: Scenario & { type: 'failure' };
      kind: ProviderErrorKind;
      retryable: boolean;
      retryAfterMs: number | null;
    }[] = [
      {
        name: '429 with retry-after in seconds',
        scenario: {
          type: 'failure',
          kind: 'rate_limited',
          status: 429,
          retry_after: { seconds: 7 },
          request_id: 'req-429',
        },
        kind: 'rate_limited',
        retryable: true,
        retryAfterMs: 7000,
      },
      {
        name: '429 with retry-after as an HTTP date',
        scenario: {
          type: 'failure',
          kind: 'rate_limited',
          status: 429,
          retry_after: { date: new Date(NOW + 30_000).toUTCString() },
          request_id: 'req-429d',
        },
        kind: 'rate_limited',
        retryable: true,
        retryAfterMs: 30_000,
      },
      {
        name: '529 overloaded',
        scenario: { type: 'failure', kind: 'overloaded', status: 529, request_id: 'req-529' },
        kind: 'overloaded',
        retryable: true,
        retryAfterMs: null,
      },
      {
        name: '500 server error',
        scenario: { type: 'failure', kind: 'server_error', status: 500, request_id: 'req-500' },
        kind: 'server_error',
        retryable: true,
        retryAfterMs: null,
      },
      {
        name: '429 spend limit',
        scenario: { type: 'failure', kind: 'spend_limit', status: 429, request_id: 'req-spend' },
        kind: 'spend_limit',
        retryable: false,
        retryAfterMs: null,
      },
      {
        name: '400 invalid request',
        scenario: { type: 'failure', kind: 'invalid_request', status: 400, request_id: 'req-400' },
        kind: 'invalid_request',
        retryable: false,
        retryAfterMs: null,
      },
      {
        name: '401 auth',
        scenario: { type: 'failure', kind: 'auth', status: 401, request_id: 'req-401' },
        kind: 'auth',
        retryable: false,
        retryAfterMs: null,
      },
    ];
    for (const f of failures) {
      test(`${f.name} → ${f.kind}, retryable=${f.retryable}, one attempt`, () =>
        withRig(harness, async (rig) => {
          await rig.script(f.scenario);
          const error = await sendExpectingError(rig);
          assert.equal(error.kind, f.kind);
          assert.equal(error.status, f.scenario.status);
          assert.equal(error.retryable, f.retryable);
          assert.equal(error.retry_after_ms, f.retryAfterMs);
          assert.equal(error.request_id, harness.errorRequestIds === false ? null : f.scenario.request_id);
          assert.equal(error.provider_id, rig.provider.id);
          assert.equal(error.code, `ERR_PROVIDER_${f.kind.toUpperCase()}`);
          assert.equal(error.error_code, f.kind.toUpperCase());
          assert.ok(isCpError(error) && error.hint.length > 0);
          assert.equal(rig.received(), 1, 'a provider makes exactly one attempt per send');
          assertNoSecret(harness, `the ${f.kind} error`, error, error.toJSON());
        }));
    }

    test('a malformed success body → malformed_response, not retryable', () =>
      withRig(harness, async (rig) => {
        await rig.script({ type: 'malformed' });
        const error = await sendExpectingError(rig);
        assert.equal(error.kind, 'malformed_response');
        assert.equal(error.retryable, false);
        assertNoSecret(harness, 'the malformed_response error', error);
      }));

    test('a reply slower than the timeout → timeout, retryable', () =>
      withRig(harness, async (rig) => {
        await rig.script({ type: 'slow', delay_ms: 3000 });
        const error = await sendExpectingError(rig, 60);
        assert.equal(error.kind, 'timeout');
        assert.equal(error.retryable, true);
        assert.equal(error.status, null);
      }));

    test('a body that stalls after the headers → timeout (the deadline covers the whole reply)', () =>
      withRig(harness, async (rig) => {
        await rig.script({ type: 'stalled_body', delay_ms: 3000 });
        const error = await sendExpectingError(rig, 80);
        assert.equal(error.kind, 'timeout');
      }));

    test('an unreachable provider → network, retryable', () =>
      withRig(harness, async (rig) => {
        await rig.script({ type: 'unreachable' });
        const error = await sendExpectingError(rig);
        assert.equal(error.kind, 'network');
        assert.equal(error.retryable, true);
        assertNoSecret(harness, 'the network error', error);
      }));

    test('the caller aborting → cancelled, not retryable', () =>
      withRig(harness, async (rig) => {
        await rig.script({ type: 'slow', delay_ms: 3000 });
        const controller = new AbortController();
        const pending = rig.provider.send(REQUEST, { timeoutMs: 5000, signal: controller.signal });
        setTimeout(() => controller.abort(), 20);
        const error = await pending.then(
          () => assert.fail('expected cancellation'),
          (e: unknown) => e,
        );
        assert.ok(isProviderError(error));
        assert.equal(error.kind, 'cancelled');
        assert.equal(error.retryable, false);
      }));

    test('an invalid request is refused before anything is sent', () =>
      withRig(harness, async (rig) => {
        const bad = { ...REQUEST, max_tokens: 0 };
        const error = await rig.provider.send(bad, { timeoutMs: 5000 }).then(
          () => assert.fail('expected a refusal'),
          (e: unknown) => e,
        );
        assert.ok(isProviderError(error));
        assert.equal(error.kind, 'invalid_request');
        assert.equal(error.status, null);
        assert.match(error.message, /max_tokens must be a positive integer, got 0/);
        assert.equal(rig.received(), 0);
      }));

    test('the provider object itself does not expose the key', () =>
      withRig(harness, async (rig) => {
        assertNoSecret(harness, 'the provider', rig.provider);
      }));
  });
}
