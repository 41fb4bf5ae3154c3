import { test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, request, type Step } from './harness.js';
import { warningText } from '#kernel/catalogue/define.js';
import { CpError } from '#kernel/errors.js';

test('14-16 provider error: DISPATCH and an error EXCHANGE with the prompt and the error fields', async (t) => {
  const h = harness(t, { script: [{ error: { kind: 'invalid_request', status: 400, message: 'bad model' } }] });
  const res = await h.router.route(request());
  const [dispatch] = h.ledger.query({ event_type: 'DISPATCH' });
  const [exchange] = h.ledger.query({ event_type: 'EXCHANGE' });
  assert.ok(dispatch && exchange);
  assert.equal(exchange.metadata.outcome, 'error');
  assert.equal(exchange.decision, 'ERROR');
  assert.equal(exchange.metadata.prompt, 'What is the meaning of life?');
  assert.equal(exchange.metadata.response, '');
  assert.equal(exchange.metadata.error_code, 'INVALID_REQUEST');
  assert.equal(exchange.metadata.error_message, 'bad model');
  assert.equal(exchange.metadata.dispatch_entry_id, dispatch.id);
  assert.equal(res.outcome, 'error');
  assert.equal(h.provider.calls.length, 1, 'a 4xx is never retried');
});

test('17 timeout: EXCHANGE outcome timeout', async (t) => {
  const h = harness(t, {
    script: [{ error: { kind: 'timeout', message: 'no reply in 60000 ms' } }],
    config: { retry: { max_attempts: 1, base_delay_ms: 0, max_delay_ms: 0, max_retry_after_ms: 0 } },
  });
  const res = await h.router.route(request());
  assert.equal(h.ledger.query({ event_type: 'EXCHANGE' })[0]?.metadata.outcome, 'timeout');
  assert.equal(res.outcome, 'timeout');
  assert.equal(res.error_code, 'TIMEOUT');
});

test('18-19 server error after retries: one EXCHANGE, outcome error, latency and every attempt recorded', async (t) => {
  const fail: Step = { error: { kind: 'server_error', status: 500, message: 'boom' } };
  const h = harness(t, {
    script: [fail, fail],
    config: { retry: { max_attempts: 2, base_delay_ms: 100, max_delay_ms: 1000, max_retry_after_ms: 5000 } },
  });
  const res = await h.router.route(request());
  const exchanges = h.ledger.query({ event_type: 'EXCHANGE' });
  assert.equal(exchanges.length, 1);
  const md = exchanges[0]!.metadata;
  assert.equal(md.outcome, 'error');
  assert.ok(typeof md.latency_ms === 'number' && md.latency_ms >= 0);
  assert.equal((md.attempts as unknown[]).length, 2);
  assert.equal(res.attempts.length, 2);
  assert.equal(h.provider.calls.length, 2);
});

test('retries 429 honouring retry-after, then succeeds: attempts inside the one EXCHANGE', async (t) => {
  const h = harness(t, {
    script: [
      { error: { kind: 'rate_limited', status: 429, retry_after_ms: 2000, message: 'slow down' } },
      { error: { kind: 'overloaded', status: 529, message: 'overloaded' } },
    ],
  });
  const res = await h.router.route(request());
  assert.equal(res.outcome, 'success');
  assert.deepEqual(h.sleeps, [2000, 500], 'retry-after honoured; then backoff with jitter (random 0.5 of 2x500)');
  const md = h.ledger.query({ event_type: 'EXCHANGE' })[0]!.metadata;
  assert.deepEqual(
    (md.attempts as Array<{ status: number | null; outcome: string }>).map((a) => [a.status, a.outcome]),
    [
      [429, 'error'],
      [529, 'error'],
      [null, 'success'],
    ],
  );
  assert.equal(h.ledger.query({ event_type: 'EXCHANGE' }).length, 1);
});

test('a 429 spend limit is never retried', async (t) => {
  const h = harness(t, {
    script: [{ error: { kind: 'spend_limit', status: 429, message: 'enforced_spend_limit_reached' } }],
  });
  const res = await h.router.route(request());
  assert.equal(h.provider.calls.length, 1);
  assert.equal(res.error_code, 'SPEND_LIMIT');
  assert.deepEqual(h.sleeps, []);
});

test('a retry-after longer than the configured ceiling is not waited for', async (t) => {
  const h = harness(t, {
    script: [{ error: { kind: 'rate_limited', status: 429, retry_after_ms: 3_600_000, message: 'later' } }],
  });
  const res = await h.router.route(request());
  assert.equal(res.outcome, 'error');
  assert.equal(h.provider.calls.length, 1);
});

test('the ledger refusing the EXCHANGE after the provider answered loses nothing: spooled, surfaced, recovered', async (t) => {
  const h = harness(t);
  const realAppendBatch = h.ledger.appendBatch.bind(h.ledger);
  let failExchange = true;
  h.ledger.appendBatch = (inputs) => {
    if (failExchange && inputs.some((input) => input.event_type === 'EXCHANGE')) throw new Error('disk I/O error');
    return realAppendBatch(inputs);
  };
  const res = await h.router.route(request());
  assert.equal(res.outcome, 'success');
  assert.equal(res.content, 'Mock response');
  assert.equal(res.exchange_entry_id, '');
  assert.match(res.warnings.map(warningText).join('\n'), /LEDGER_WRITE_FAILED: exchange spooled/);
  assert.equal(h.ledger.query({ event_type: 'EXCHANGE' }).length, 0);
  failExchange = false;
  assert.equal((await h.router.recoverSpool()).drained, 1);
  const [exchange] = h.ledger.query({ event_type: 'EXCHANGE' });
  assert.equal(exchange?.metadata.response, 'Mock response');
  assert.equal(exchange?.metadata.dispatch_entry_id, res.dispatch_entry_id);
  assert.equal((await h.router.recoverSpool()).drained, 0);
});

test('a ledger refusing the DISPATCH for a fault of the machine refuses the call as LEDGER_UNAVAILABLE: nothing sent, retry later', async (t) => {
  const h = harness(t);
  const realAppendBatch = h.ledger.appendBatch.bind(h.ledger);
  h.ledger.appendBatch = () => {
    throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
  };
  const admit = () =>
    h.router.admit({
      request: { ...request(), provider_id: 'mock', model_id: 'mock-model-1' },
      bounds: { estimated_input_tokens: 10, max_output_tokens: 10 },
      contextHash: 'c'.repeat(64),
    });
  const refused = await admit();
  assert.equal(refused.ok, false);
  if (refused.ok) return;
  assert.equal(refused.code, 'LEDGER_UNAVAILABLE');
  assert.match(refused.message, /^ERR_DISK_FULL: no space left on the device.*; free space/);
  assert.equal(refused.retryAfterMs, 30_000);
  assert.equal(refused.entryId, '', 'the refusal could not be recorded either');
  assert.equal(h.provider.calls.length, 0);
  // A bug in the ledger is still a bug, not a refusal.
  h.ledger.appendBatch = () => {
    throw new TypeError('x is not a function');
  };
  await assert.rejects(admit(), TypeError);
  h.ledger.appendBatch = realAppendBatch;
  const admitted = await admit();
  assert.equal(admitted.ok, true);
  assert.equal(h.ledger.query({ event_type: 'DISPATCH' }).length, 1);
});

test('route() on a ledger refusing its DISPATCH for a fault of the machine: refused as LEDGER_UNAVAILABLE, like the gateway', async (t) => {
  const h = harness(t);
  const realAppendBatch = h.ledger.appendBatch.bind(h.ledger);
  h.ledger.appendBatch = (inputs, options) => {
    if (inputs.some((input) => input.event_type === 'DISPATCH'))
      throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
    return realAppendBatch(inputs, options);
  };
  const res = await h.router.route(request());
  assert.equal(res.outcome, 'rejected');
  assert.equal(res.error_code, 'LEDGER_UNAVAILABLE');
  assert.match(res.error_message ?? '', /^ERR_DISK_FULL: /);
  assert.equal(res.dispatch_entry_id, '');
  assert.equal(h.provider.calls.length, 0, 'nothing is sent without its DISPATCH');
  const [rejected] = h.ledger.query({ event_type: 'PROMPT_REJECTED' });
  assert.equal(rejected?.metadata.error_code, 'LEDGER_UNAVAILABLE');
  h.ledger.appendBatch = realAppendBatch;
  assert.equal((await h.router.route(request())).outcome, 'success');
});

test('a spooled exchange is appended once the ledger takes writes again: the next recorded call drains it, no restart', async (t) => {
  const h = harness(t);
  const realAppendBatch = h.ledger.appendBatch.bind(h.ledger);
  let failExchange = true;
  h.ledger.appendBatch = (inputs, options) => {
    if (failExchange && inputs.some((input) => input.event_type === 'EXCHANGE')) throw new Error('disk I/O error');
    return realAppendBatch(inputs, options);
  };
  const spooled = await h.router.route(request({ session_id: 'SES-SPOOLED' }));
  assert.match(spooled.warnings.map(warningText).join('\n'), /LEDGER_WRITE_FAILED: exchange spooled/);
  assert.equal(h.router.spooled(), 1);
  failExchange = false;
  const next = await h.router.route(request({ session_id: 'SES-NEXT' }));
  assert.equal(next.outcome, 'success');
  for (let i = 0; i < 1000 && h.router.spooled() > 0; i += 1) await new Promise((r) => setTimeout(r, 5));
  assert.equal(h.router.spooled(), 0);
  const exchanges = h.ledger.query({ event_type: 'EXCHANGE', order: 'oldest' });
  assert.deepEqual(
    exchanges.map((e) => [e.metadata.session_id, e.metadata.dispatch_entry_id]),
    [
      ['SES-NEXT', next.dispatch_entry_id],
      ['SES-SPOOLED', spooled.dispatch_entry_id],
    ],
  );
});

test('an exchange spooled while a drain runs is not forgotten: the next recorded call appends it', async (t) => {
  const h = harness(t);
  const realAppendBatch = h.ledger.appendBatch.bind(h.ledger);
  const failing = new Set(['SES-A']);
  h.ledger.appendBatch = (inputs, options) => {
    const refused = inputs.some((i) => i.event_type === 'EXCHANGE' && failing.has(String(i.metadata?.session_id)));
    if (refused) throw new Error('disk I/O error');
    return realAppendBatch(inputs, options);
  };
  const a = await h.router.route(request({ session_id: 'SES-A' }));
  assert.equal(h.router.spooled(), 1);
  failing.delete('SES-A');
  failing.add('SES-B');
  // The drain lists A, then waits while it looks up A's DISPATCH; meanwhile B is spooled.
  const realGet = h.ledger.get.bind(h.ledger);
  let release = (): void => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  h.ledger.get = ((id: string) =>
    id === a.dispatch_entry_id ? held.then(() => realGet(id)) : realGet(id)) as typeof h.ledger.get;
  const drain = h.router.recoverSpool();
  const b = await h.router.route(request({ session_id: 'SES-B' }));
  assert.match(b.warnings.map(warningText).join('\n'), /LEDGER_WRITE_FAILED: exchange spooled/);
  release();
  assert.equal((await drain).drained, 1);
  assert.equal(h.router.spooled(), 1, 'B waits in the spool');
  failing.clear();
  h.ledger.get = realGet;
  assert.equal((await h.router.route(request({ session_id: 'SES-C' }))).outcome, 'success');
  for (let i = 0; i < 1000 && h.router.spooled() > 0; i += 1) await new Promise((r) => setTimeout(r, 5));
  assert.equal(h.router.spooled(), 0);
  const exchange = h.ledger.query({ event_type: 'EXCHANGE', session_id: 'SES-B' })[0];
  assert.equal(exchange?.metadata.dispatch_entry_id, b.dispatch_entry_id);
});

test('the gateway path (admit/conclude) degrades like route(): the ledger refusing the raw usage keeps the EXCHANGE without it', async (t) => {
  const h = harness(t);
  let refusals = 0;
  const realAppendBatch = h.ledger.appendBatch.bind(h.ledger);
  h.ledger.appendBatch = (inputs, options) => {
    if (inputs.some((i) => i.event_type === 'EXCHANGE' && typeof i.metadata?.usage_raw === 'object')) {
      refusals += 1;
      throw new CpError('ERR_CANONICAL_JSON', 'non-finite number Infinity at /usage_raw/x', {
        hint: 'JSON numbers must be finite',
      });
    }
    return realAppendBatch(inputs, options);
  };
  const admitted = await h.router.admit({
    request: { ...request(), provider_id: 'mock', model_id: 'mock-model-1' },
    bounds: { estimated_input_tokens: 10, max_output_tokens: 10 },
    contextHash: 'c'.repeat(64),
  });
  assert.equal(admitted.ok, true);
  if (!admitted.ok) return;
  const usage = { input_tokens: 3, output_tokens: 2, cache_read_tokens: 0, cache_write_tokens: 0, raw: { x: 1 } };
  const concluded = await h.router.conclude(admitted.call, {
    kind: 'answered',
    answer: {
      provider_id: 'mock',
      model: 'mock-model-1',
      content: 'hello',
      stop_reason: 'stop',
      raw_stop_reason: null,
      usage,
      request_id: null,
      latency_ms: 0,
    },
    usageFinal: true,
    attempts: [],
    extra: { surface: 'anthropic' },
  });
  assert.equal(refusals, 1, 'a record fault is not retried as is');
  assert.equal(concluded.unrecorded, null);
  assert.notEqual(concluded.exchangeEntryId, '');
  assert.match(concluded.warnings.map(warningText).join('\n'), /EXCHANGE_RECORD_DEGRADED/);
  const [exchange] = h.ledger.query({ event_type: 'EXCHANGE' });
  assert.equal(exchange?.id, concluded.exchangeEntryId);
  assert.equal(exchange?.metadata.usage_raw, '[dropped: the ledger refused it]');
  assert.equal(exchange?.metadata.surface, 'anthropic');
  assert.equal(exchange?.metadata.usage_complete, true);
});
