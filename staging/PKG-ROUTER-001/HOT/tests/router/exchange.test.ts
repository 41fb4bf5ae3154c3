import { test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, request } from './harness.js';

const ID = /^LED-[a-f0-9]{8}$/;

test('1-3 EXCHANGE holds the prompt, the response and outcome success', async (t) => {
  const h = harness(t);
  await h.router.route(request());
  const [ex] = h.ledger.query({ event_type: 'EXCHANGE' });
  assert.equal(ex?.metadata.prompt, 'What is the meaning of life?');
  assert.equal(ex?.metadata.response, 'Mock response');
  assert.equal(ex?.metadata.outcome, 'success');
  assert.equal(ex?.decision, 'SUCCESS');
});

test('4-5 one EXCHANGE per round-trip and no PROMPT_SENT/PROMPT_RECEIVED', async (t) => {
  const h = harness(t);
  await h.router.route(request());
  assert.equal(h.ledger.query({ event_type: 'EXCHANGE' }).length, 1);
  assert.equal(h.ledger.query({ event_type: 'PROMPT_SENT' }).length, 0);
  assert.equal(h.ledger.query({ event_type: 'PROMPT_RECEIVED' }).length, 0);
  assert.deepEqual(
    h.ledger.query({ order: 'oldest' }).map((e) => e.event_type),
    ['DISPATCH', 'EXCHANGE'],
  );
});

test('6-8 EXCHANGE carries identity, cost and model', async (t) => {
  const h = harness(t);
  await h.router.route(request());
  const md = h.ledger.query({ event_type: 'EXCHANGE' })[0]!.metadata;
  assert.deepEqual(
    {
      agent_id: md.agent_id,
      session_id: md.session_id,
      work_order_id: md.work_order_id,
      tier: md.tier,
      contract_id: md.contract_id,
      framework_id: md.framework_id,
    },
    {
      agent_id: 'AGENT-1',
      session_id: 'SES-1',
      work_order_id: 'WO-1',
      tier: 'hot',
      contract_id: 'PRC-TEST-001',
      framework_id: 'FMWK-000',
    },
  );
  assert.equal(md.input_tokens, Buffer.byteLength(request().prompt), 'the mock counts a token per prompt byte');
  assert.equal(md.output_tokens, 50);
  assert.equal(md.model_id, 'mock-model-1');
  assert.equal(md.finish_reason, 'stop');
});

test('9 EXCHANGE has no redundant fields; only the seed fields plus documented extensions', async (t) => {
  const h = harness(t);
  await h.router.route(request({ temperature: 0.2, max_tokens: 77 }));
  const md = h.ledger.query({ event_type: 'EXCHANGE' })[0]!.metadata;
  for (const key of ['agent_class', 'package_id', 'prompt_pack_id', 'max_tokens', 'temperature', 'domain_tags'])
    assert.ok(!(key in md), key);
  const seed = [
    'agent_id',
    'session_id',
    'work_order_id',
    'tier',
    'contract_id',
    'framework_id',
    'prompt',
    'response',
    'outcome',
    'input_tokens',
    'output_tokens',
    'context_hash',
    'dispatch_entry_id',
    'model_id',
    'finish_reason',
    'latency_ms',
  ];
  const extensions = ['attempts', 'cache_read_tokens', 'cache_write_tokens', 'usage_raw'];
  assert.deepEqual(Object.keys(md).sort(), [...seed, ...extensions].sort());
});

test('10 context_hash is the SHA-256 of the prompt', async (t) => {
  const h = harness(t);
  await h.router.route(request());
  const md = h.ledger.query({ event_type: 'EXCHANGE' })[0]!.metadata;
  assert.match(String(md.context_hash), /^[a-f0-9]{64}$/);
  const { createHash } = await import('node:crypto');
  assert.equal(md.context_hash, createHash('sha256').update('What is the meaning of life?').digest('hex'));
});

test('11-13 DISPATCH is written first, has exactly three keys, and EXCHANGE links to it', async (t) => {
  const h = harness(t);
  const res = await h.router.route(request());
  const [dispatch] = h.ledger.query({ event_type: 'DISPATCH' });
  const [exchange] = h.ledger.query({ event_type: 'EXCHANGE' });
  assert.ok(dispatch && exchange);
  assert.ok(dispatch.timestamp <= exchange.timestamp);
  assert.equal(exchange.previous_hash, dispatch.entry_hash);
  assert.deepEqual(Object.keys(dispatch.metadata).sort(), ['agent_id', 'contract_id', 'session_id']);
  assert.equal(dispatch.decision, 'DISPATCHED');
  assert.equal(dispatch.reason, 'Dispatching to mock/mock-model-1');
  assert.equal(exchange.metadata.dispatch_entry_id, dispatch.id);
  assert.equal(res.dispatch_entry_id, dispatch.id);
});

test('29-30 PromptResponse carries the exchange and dispatch ids', async (t) => {
  const h = harness(t);
  const res = await h.router.route(request());
  assert.match(res.exchange_entry_id, ID);
  assert.match(res.dispatch_entry_id, ID);
  assert.equal(h.ledger.get(res.exchange_entry_id)?.event_type, 'EXCHANGE');
  assert.equal(h.ledger.get(res.dispatch_entry_id)?.event_type, 'DISPATCH');
});

test('23 happy path returns content and tokens', async (t) => {
  const h = harness(t);
  const res = await h.router.route(request());
  assert.equal(res.outcome, 'success');
  assert.equal(res.content, 'Mock response');
  assert.equal(res.input_tokens, Buffer.byteLength(request().prompt));
  assert.equal(res.output_tokens, 50);
  assert.equal(res.provider_id, 'mock');
  assert.equal(h.provider.calls.length, 1);
});

test('history(session) returns the conversation in order', async (t) => {
  const h = harness(t);
  await h.router.route(request({ prompt: 'first' }));
  await h.router.route(request({ prompt: 'second' }));
  await h.router.route(request({ prompt: 'other session', session_id: 'SES-2' }));
  assert.deepEqual(
    h.ledger.history('SES-1').map((e) => e.metadata.prompt),
    ['first', 'second'],
  );
});

test('a compiled prompt is sent as its body and the EXCHANGE records its stable_prefix_hash', async (t) => {
  const h = harness(t);
  const body = { model: 'mock-model-1', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
  const hash = 'a'.repeat(64);
  const res = await h.router.route(request({ compiled: { stable_prefix_hash: hash, body } }));
  assert.deepEqual((h.provider.calls[0]?.request as { body?: unknown } | undefined)?.body, body);
  assert.equal(res.stable_prefix_hash, hash);
  assert.equal(h.ledger.query({ event_type: 'EXCHANGE' })[0]?.metadata.stable_prefix_hash, hash);
});
