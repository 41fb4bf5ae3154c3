// Client disconnects and the drain deadline: the upstream call is aborted, the EXCHANGE is written as cancelled,
// the reservation stays charged; SIGTERM with a short --drain-timeout cancels what is still streaming and exits 0.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { configSet, issueKey, budgetEntries, ledgerEntries, startServed, type Served } from './harness.js';

let served: Served;
let key: string;

before(async () => {
  // Retry-afters up to an hour are waited for: a wait the gateway did not cut short would outlast the test.
  served = await startServed(['--drain-timeout', '200'], (root) =>
    configSet(root, 'router.retry.max_retry_after_ms', '3600000'),
  );
  key = issueKey('AGENT-DRAIN');
});
after(async () => {
  await served.cleanup();
});

const headers = (session: string): Record<string, string> => ({
  'content-type': 'application/json',
  'x-api-key': key,
  'anthropic-version': '2023-06-01',
  'x-cplane-session': session,
});
const body = (stream: boolean): string =>
  JSON.stringify({
    model: 'claude-sonnet-4-5',
    max_tokens: 64,
    stream,
    messages: [{ role: 'user', content: 'Hello' }],
  });

async function exchangeOf(session: string): Promise<ReturnType<typeof ledgerEntries>[number]> {
  for (let i = 0; i < 100; i += 1) {
    const found = ledgerEntries(served.root).find(
      (e) => e.event_type === 'EXCHANGE' && e.metadata.session_id === session,
    );
    if (found) return found;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no EXCHANGE for ${session}`);
}

test('a client gone before the reply began: EXCHANGE cancelled, the upstream call aborted, the reservation charged', async () => {
  served.upstream.faults.push({ replyDelayMs: 1500 });
  const controller = new AbortController();
  const pending = fetch(`${served.url}/v1/messages`, {
    method: 'POST',
    headers: headers('SES-D-GONE'),
    body: body(false),
    signal: controller.signal,
  });
  const sent = served.upstream.requests.length;
  while (served.upstream.requests.length === sent) await new Promise((r) => setTimeout(r, 20));
  const abortedBefore = served.upstream.aborted;
  controller.abort();
  await assert.rejects(pending);
  const exchange = await exchangeOf('SES-D-GONE');
  for (let i = 0; i < 1500 && served.upstream.aborted === abortedBefore; i += 1)
    await new Promise((r) => setTimeout(r, 20));
  assert.equal(served.upstream.aborted, abortedBefore + 1, 'the gateway hung up on the upstream');
  assert.equal(exchange.decision, 'CANCELLED');
  assert.equal(exchange.metadata.outcome, 'cancelled');
  assert.equal(exchange.metadata.error_code, 'CANCELLED');
  const budget = budgetEntries(served.root).filter(
    (e) => e.metadata.request_id === exchange.metadata.gateway_request_id,
  );
  assert.deepEqual(
    budget.map((e) => e.event_type),
    ['BUDGET_ALLOCATED', 'BUDGET_SETTLED'],
    'settled as unknown usage, never released',
  );
});

test('a client gone while the gateway waits out an upstream retry-after: the wait ends, EXCHANGE cancelled, no retry sent', async () => {
  served.upstream.faults.push({
    status: 529,
    body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
    headers: { 'retry-after': '3600' },
  });
  const controller = new AbortController();
  const pending = fetch(`${served.url}/v1/messages`, {
    method: 'POST',
    headers: headers('SES-D-BACKOFF'),
    body: body(false),
    signal: controller.signal,
  });
  const sent = served.upstream.requests.length;
  while (served.upstream.requests.length === sent) await new Promise((r) => setTimeout(r, 20));
  controller.abort();
  await assert.rejects(pending);
  const exchange = await exchangeOf('SES-D-BACKOFF');
  assert.equal(exchange.decision, 'CANCELLED');
  assert.equal(exchange.metadata.error_code, 'CANCELLED');
  assert.equal(served.upstream.requests.length, sent + 1, 'the retry was never sent');
  const budget = budgetEntries(served.root).filter(
    (e) => e.metadata.request_id === exchange.metadata.gateway_request_id,
  );
  assert.equal(budget.length, 2, 'the reservation is concluded, not left held');
  assert.equal(budget[0]?.event_type, 'BUDGET_ALLOCATED');
});

test('SIGTERM past the drain timeout cancels the stream still running, records it, and exits 0', async () => {
  served.upstream.faults.push({ frameDelayMs: 400 });
  const res = await fetch(`${served.url}/v1/messages`, {
    method: 'POST',
    headers: headers('SES-D-DRAIN'),
    body: body(true),
  });
  const reader = res.body!.getReader();
  await reader.read();
  const code = await served.stop();
  assert.equal(code, 0, served.stderr());
  assert.match(served.stderr(), /drained \(0 finished, 1 cancelled\)/);
  const exchange = await exchangeOf('SES-D-DRAIN');
  assert.equal(exchange.decision, 'CANCELLED');
  assert.equal(exchange.metadata.usage_complete, false);
  assert.match(String(exchange.metadata.response), /^\[/);
});
