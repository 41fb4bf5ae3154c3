// An open port flooded by clients without a key: every request is refused (401, nothing upstream), but the ledger
// records them one by one only up to the configured rate; the rest are counted into REFUSALS_SUPPRESSED, flushed at
// shutdown, so every refusal is accounted for and the chain verifies.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { cli, configSet, ledgerEntries, startServed, type Served } from './harness.js';

let served: Served;
before(async () => {
  served = await startServed([], (root) => configSet(root, 'gateway.unauthenticated_refusals_per_second', '5'));
});
after(async () => {
  await served.cleanup();
});

test('300 requests without an authentic key: all refused, a few recorded, the rest counted; verify passes', async () => {
  const kinds = [
    {},
    { 'x-api-key': 'cpt1.bm90LWpzb24.c2ln' },
    { authorization: 'Bearer sk-ant-not-a-cplane-key' },
  ] as Array<Record<string, string>>;
  const statuses: number[] = [];
  for (let round = 0; round < 10; round++) {
    const batch = Array.from({ length: 30 }, async (_, i) => {
      const res = await fetch(`${served.url}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...kinds[i % 3] },
        // Every fifth is not even JSON: a malformed body without a key is just as anonymous.
        body: i % 5 === 0 ? '{"model":' : JSON.stringify({ model: 'm', max_tokens: 8, messages: [] }),
      });
      await res.arrayBuffer();
      return res.status;
    });
    statuses.push(...(await Promise.all(batch)));
  }
  assert.equal(statuses.length, 300);
  assert.ok(
    statuses.every((s) => s === 400 || s === 401),
    String([...new Set(statuses)]),
  );
  assert.equal(served.upstream.requests.length, 0);
  assert.equal(await served.stop(), 0);
  const entries = ledgerEntries(served.root);
  const recorded = entries.filter((e) => e.event_type === 'PROMPT_REJECTED').length;
  const summaries = entries.filter((e) => e.event_type === 'REFUSALS_SUPPRESSED');
  const counted = summaries.reduce((n, e) => n + (e.metadata.total as number), 0);
  assert.equal(recorded + counted, 300, `${recorded} recorded + ${counted} counted`);
  assert.ok(recorded < 300 && counted > 0, `${recorded} recorded`);
  assert.ok(summaries.length >= 1);
  const verify = cli(['ledger', 'verify', '--root', served.root]);
  assert.equal(verify.status, 0, verify.stderr + verify.stdout);
});
