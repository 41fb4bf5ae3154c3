// An upstream that holds a request past the gateway's deadline has it whole and may bill it: the reservation stays
// charged (as unknown usage), where a reply the upstream refused (a 5xx) gives it back.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { configSet, issueKey, budgetEntries, ledgerEntries, startServed, type Served } from './harness.js';

let served: Served;
let key: string;

before(async () => {
  served = await startServed([], (root) => {
    configSet(root, 'router.timeout_ms', '3000');
    configSet(root, 'router.retry.max_attempts', '1');
  });
  key = issueKey('AGENT-TIMEOUT');
});
after(async () => {
  await served.cleanup();
});

async function call(session: string): Promise<Response> {
  return fetch(`${served.url}/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': key,
      'anthropic-version': '2023-06-01',
      'x-cplane-session': session,
    },
    body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] }),
  });
}

function budgetSteps(session: string): string[] {
  const entries = ledgerEntries(served.root);
  const exchange = entries.find((e) => e.event_type === 'EXCHANGE' && e.metadata.session_id === session);
  assert.ok(exchange, `an EXCHANGE for ${session}`);
  return budgetEntries(served.root)
    .filter((e) => e.metadata.request_id === exchange.metadata.gateway_request_id)
    .map((e) => e.event_type);
}

test('a call the upstream held past the deadline stays charged; one it refused with a 5xx is released', async () => {
  served.upstream.faults.push({ replyDelayMs: 120_000 });
  const timedOut = await call('SES-T-SLOW');
  assert.equal(timedOut.status, 504);
  await timedOut.arrayBuffer();
  assert.deepEqual(budgetSteps('SES-T-SLOW'), ['BUDGET_ALLOCATED', 'BUDGET_SETTLED'], 'charged, never released');
  served.upstream.faults.push({ status: 500, body: { type: 'error', error: { type: 'api_error', message: 'x' } } });
  const refused = await call('SES-T-REFUSED');
  const text = await refused.text();
  assert.equal(refused.status, 502, text);
  assert.deepEqual(budgetSteps('SES-T-REFUSED'), ['BUDGET_ALLOCATED', 'BUDGET_RELEASED']);
});
