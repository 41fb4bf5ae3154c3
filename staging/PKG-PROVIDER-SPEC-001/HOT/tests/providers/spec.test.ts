import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  isRetryableKind,
  isProviderError,
  kindForStatus,
  ProviderError,
  PROVIDER_ERROR_KINDS,
} from '../../providers/errors.js';
import { redact } from '../../providers/redact.js';
import { parseProviderRequest, requireModelMessagesMax } from '../../providers/request.js';
import { parseRetryAfter } from '../../providers/retry-after.js';
import { uncachedInputTokens } from '../../providers/spec.js';
import { systemTimers } from '../../providers/clock.js';
import { postJson } from '../../providers/http.js';
import { fixedClock } from './fixtures/clock.js';
import { ScriptedServer } from './fixtures/server.js';

const NOW = Date.parse('2026-05-06T07:08:09Z');
const clock = fixedClock(NOW);

test('retry-after: delta-seconds, HTTP dates against the injected clock, retry-after-ms first, junk is null', () => {
  const at = (h: Record<string, string>): number | null => parseRetryAfter(new Headers(h), clock);
  assert.equal(at({}), null);
  assert.equal(at({ 'retry-after': '12' }), 12_000);
  assert.equal(at({ 'retry-after': ' 0 ' }), 0);
  assert.equal(at({ 'retry-after': '1.5' }), 1500);
  assert.equal(at({ 'retry-after': new Date(NOW + 45_000).toUTCString() }), 45_000);
  assert.equal(at({ 'retry-after': 'Wednesday, 06-May-26 07:08:19 GMT' }), 10_000, 'the obsolete RFC 850 date form');
  assert.equal(at({ 'retry-after': new Date(NOW - 60_000).toUTCString() }), 0, 'a date in the past means now');
  assert.equal(at({ 'retry-after': '-5' }), null);
  assert.equal(at({ 'retry-after': 'soon' }), null);
  assert.equal(at({ 'retry-after': '' }), null);
  assert.equal(at({ 'retry-after-ms': '250.2', 'retry-after': '9' }), 251);
  assert.equal(at({ 'retry-after-ms': 'x', 'retry-after': '9' }), 9000);
});

test('status → kind and kind → retryable follow one table: 408/409/429/5xx/529 retry, other 4xx never', () => {
  const table: [number, string, boolean][] = [
    [400, 'invalid_request', false],
    [401, 'auth', false],
    [402, 'spend_limit', false],
    [403, 'auth', false],
    [404, 'invalid_request', false],
    [408, 'timeout', true],
    [409, 'server_error', true],
    [413, 'invalid_request', false],
    [422, 'invalid_request', false],
    [428, 'invalid_request', false],
    [429, 'rate_limited', true],
    [500, 'server_error', true],
    [502, 'server_error', true],
    [503, 'overloaded', true],
    [529, 'overloaded', true],
    [302, 'malformed_response', false],
  ];
  for (const [status, kind, retryable] of table) {
    assert.equal(kindForStatus(status), kind, String(status));
    assert.equal(isRetryableKind(kindForStatus(status)), retryable, String(status));
  }
  assert.deepEqual(PROVIDER_ERROR_KINDS.filter(isRetryableKind), [
    'rate_limited',
    'overloaded',
    'server_error',
    'timeout',
    'network',
  ]);
});

test('ProviderError: CpError code, seed error_code, details and JSON form', () => {
  const error = new ProviderError({
    kind: 'rate_limited',
    providerId: 'p',
    message: 'slow down',
    status: 429,
    retryAfterMs: 100,
    requestId: 'r1',
    providerErrorType: 'rate_limit_error',
    cause: new Error('inner'),
  });
  assert.equal(error.code, 'ERR_PROVIDER_RATE_LIMITED');
  assert.equal(error.error_code, 'RATE_LIMITED');
  assert.equal(error.name, 'ProviderError');
  assert.ok(error.hint.includes('retry_after_ms'));
  assert.deepEqual(JSON.parse(JSON.stringify(error)), {
    code: 'ERR_PROVIDER_RATE_LIMITED',
    message: 'slow down',
    hint: error.hint,
    details: {
      provider_id: 'p',
      kind: 'rate_limited',
      status: 429,
      retryable: true,
      retry_after_ms: 100,
      request_id: 'r1',
      provider_error_type: 'rate_limit_error',
      after_success: false,
    },
  });
  // A ProviderError from another copy of the module is still recognised; a look-alike with an unknown kind is not.
  const foreign = Object.assign(new Error('x'), { code: 'ERR_PROVIDER_TIMEOUT', kind: 'timeout' });
  assert.equal(isProviderError(foreign), true);
  assert.equal(isProviderError(Object.assign(new Error('x'), { code: 'ERR_PROVIDER_X', kind: 'weird' })), false);
  assert.equal(isProviderError({ code: 'ERR_PROVIDER_TIMEOUT', kind: 'timeout' }), false);
});

test('request validation names the offending field and value', () => {
  const check = (v: unknown): string => {
    try {
      parseProviderRequest(v, 'p', (b) => requireModelMessagesMax(b, ['max_tokens']));
      return 'ok';
    } catch (e) {
      assert.ok(isProviderError(e) && e.kind === 'invalid_request' && e.status === null);
      return e.message;
    }
  };
  assert.equal(check({ model: 'm', max_tokens: 1, prompt: '', system: 'sys' }), 'ok');
  assert.match(check(null), /expected an object, got null/);
  assert.match(check({ model: '', max_tokens: 1, prompt: 'x' }), /model must be a non-empty string, got ""/);
  assert.match(check({ model: 'm', max_tokens: 1.5, prompt: 'x' }), /max_tokens must be a positive integer, got 1.5/);
  assert.match(check({ model: 'm', max_tokens: 1, prompt: 7 }), /prompt must be a string, got 7/);
  assert.match(
    check({ model: 'm', max_tokens: 1, prompt: 'x', temperature: -1 }),
    /temperature must be a non-negative number, got -1/,
  );
  assert.match(
    check({ model: 'm', max_tokens: 1, prompt: 'x', stop_sequences: [1] }),
    /stop_sequences must be an array of strings/,
  );
  assert.match(
    check({ model: 'm', max_tokens: 1, prompt: 'x', system: [{ text: 'a' }, { text: 1 }] }),
    /system\[1\]\.text must be a string/,
  );
  assert.match(
    check({ model: 'm', max_tokens: 1, prompt: 'x', system: [{ text: 'a', cache: 'yes' }] }),
    /system\[0\]\.cache must be a boolean/,
  );
  assert.match(check({ model: 'm', max_tokens: 1, prompt: 'x', system: 5 }), /system must be a string or an array/);
  assert.match(check({ body: [] }), /body must be an object, got \[\]/);
  assert.match(
    check({ body: { model: 'm', messages: [], max_tokens: 1 } }),
    /body\.messages must be a non-empty array/,
  );
  assert.match(
    check({ body: { model: 'm', messages: [{}] } }),
    /body\.max_tokens must be a positive integer, got \[null\]/,
  );
});

test('redact removes every occurrence of each secret and ignores trivially short ones', () => {
  assert.equal(redact('key sk-abc123 and sk-abc123 again', ['sk-abc123']), 'key [REDACTED] and [REDACTED] again');
  assert.equal(redact('a b c', ['', 'b']), 'a b c');
});

test('uncached input tokens: total minus the cache buckets, unknown if any part is unknown', () => {
  assert.equal(
    uncachedInputTokens({
      input_tokens: 1500,
      output_tokens: 1,
      cache_read_tokens: 1200,
      cache_write_tokens: 200,
      raw: null,
    }),
    100,
  );
  assert.equal(
    uncachedInputTokens({
      input_tokens: 1500,
      output_tokens: 1,
      cache_read_tokens: 1200,
      cache_write_tokens: null,
      raw: null,
    }),
    null,
  );
});

test('postJson refuses a response body over the size cap as malformed_response', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  server.push({ status: 200, body: 'x'.repeat(5000) }, { status: 200, body: 'y'.repeat(100) });
  const post = (): Promise<unknown> =>
    postJson({
      providerId: 'p',
      fetch: (input, init) => fetch(input, init),
      clock,
      timers: systemTimers,
      url: `${server.url}/v1/x`,
      headers: {},
      body: { a: 1 },
      options: { timeoutMs: 5000 },
      secrets: [],
      maxResponseBytes: 1000,
    });
  const error = await post().catch((e: unknown) => e);
  assert.ok(isProviderError(error));
  assert.equal(error.kind, 'malformed_response');
  assert.match(error.message, /body over 1000 bytes/);
  const reply = (await post()) as { status: number; text: string };
  assert.equal(reply.text, 'y'.repeat(100));
  assert.deepEqual(
    server.received.map((r) => r.json),
    [{ a: 1 }, { a: 1 }],
  );
});

test('postJson: a signal already aborted sends nothing', async (t) => {
  const server = await ScriptedServer.start();
  t.after(() => server.close());
  const controller = new AbortController();
  controller.abort();
  const error = await postJson({
    providerId: 'p',
    fetch: (input, init) => fetch(input, init),
    clock,
    timers: systemTimers,
    url: server.url,
    headers: {},
    body: {},
    options: { timeoutMs: 5000, signal: controller.signal },
    secrets: [],
  }).catch((e: unknown) => e);
  assert.ok(isProviderError(error) && error.kind === 'cancelled');
  assert.equal(server.received.length, 0);
});
