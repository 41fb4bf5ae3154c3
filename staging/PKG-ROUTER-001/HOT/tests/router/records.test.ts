import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canonicalJson } from '#kernel/canonical.js';
import type { AppendInput } from '#kernel/ledger/index.js';
import { harness, request } from './harness.js';

/** Every metadata object the router hands the ledger, captured on the way in. */
function captureAppends(ledger: { appendBatch: (inputs: readonly AppendInput[]) => unknown }): AppendInput[] {
  const seen: AppendInput[] = [];
  const original = ledger.appendBatch.bind(ledger);
  ledger.appendBatch = (inputs) => {
    seen.push(...inputs);
    return original(inputs);
  };
  return seen;
}

test('every record the router writes is already in canonical key order, so the ledger stringifies it natively', async (t) => {
  const h = harness(t, {
    script: [
      { error: { kind: 'overloaded' } },
      { text: 'ok', usage: { output_tokens: 7, input_tokens: 3, cache_write_tokens: 1, cache_read_tokens: 2 } },
      { error: { kind: 'invalid_request', message: 'bad' } },
    ],
  });
  const seen = captureAppends(h.ledger);
  const compiled = { stable_prefix_hash: 'b'.repeat(64) };
  assert.equal((await h.router.route(request({ compiled }))).outcome, 'success');
  assert.equal((await h.router.route(request())).outcome, 'error');
  assert.equal((await h.router.route({ prompt: '' })).outcome, 'rejected');

  assert.deepEqual(
    seen.map((r) => r.event_type),
    ['DISPATCH', 'EXCHANGE', 'DISPATCH', 'EXCHANGE', 'PROMPT_REJECTED'],
  );
  for (const record of seen) {
    assert.equal(
      JSON.stringify(record.metadata),
      canonicalJson(record.metadata),
      `${record.event_type} metadata keys are out of order`,
    );
  }
  const exchange = seen[1]?.metadata as Record<string, unknown>;
  assert.equal(exchange.stable_prefix_hash, compiled.stable_prefix_hash);
  assert.equal((exchange.attempts as unknown[]).length, 2, 'the retried attempt is recorded inside the one EXCHANGE');
  assert.ok(exchange.usage_raw, 'the provider usage is recorded');
});

test('a provider usage object with a "__proto__" key is recorded as data', async (t) => {
  const h = harness(t);
  const seen = captureAppends(h.ledger);
  const raw = JSON.parse('{"output_tokens":2,"__proto__":{"polluted":true},"input_tokens":1}') as Record<
    string,
    unknown
  >;
  const send = h.provider.send.bind(h.provider);
  h.provider.send = async (request, options) => {
    const result = await send(request, options);
    return { ...result, usage: { ...result.usage, raw } };
  };
  assert.equal((await h.router.route(request())).outcome, 'success');
  const exchange = seen.find((r) => r.event_type === 'EXCHANGE')?.metadata as Record<string, unknown>;
  assert.equal(canonicalJson(exchange.usage_raw), '{"__proto__":{"polluted":true},"input_tokens":1,"output_tokens":2}');
  assert.equal(JSON.stringify(exchange), canonicalJson(exchange));
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  const stored = h.ledger.query({ event_type: 'EXCHANGE' })[0]?.metadata.usage_raw;
  assert.equal(canonicalJson(stored), '{"__proto__":{"polluted":true},"input_tokens":1,"output_tokens":2}');
});
