import { test } from 'node:test';
import assert from 'node:assert/strict';
import { verifyLedger } from '#kernel/ledger/index.js';
import { harness, request } from './harness.js';

test('a provider error message holding half an emoji and a lone surrogate is recorded and the chain still verifies', async (t) => {
  const half = 'quota \ud83d\ude00\ud83d\ude00'.slice(0, 9);
  const h = harness(t, {
    script: [{ error: { kind: 'invalid_request', status: 400, message: `${half} \udc00 bad` } }],
  });
  const res = await h.router.route(request({ prompt: `question \ud83d` }));
  assert.equal(res.outcome, 'error');
  const [exchange] = h.ledger.query({ event_type: 'EXCHANGE' });
  assert.equal(exchange?.metadata.error_message, 'quota \ud83d\ude00\ufffd \ufffd bad');
  assert.equal(exchange?.metadata.prompt, 'question \ufffd');
  assert.equal(verifyLedger(h.ledger).ok, true);
});
