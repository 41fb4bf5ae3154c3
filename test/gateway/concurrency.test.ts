// 200 concurrent streaming calls from four client processes through one `cplane serve`: 200 EXCHANGEs, each
// settled, one unbroken chain that `ledger verify` accepts; the exchanges in flight share ledger transactions.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cli, issueKey, budgetEntries, ledgerEntries, startServed, type Served } from './harness.js';

let served: Served;

before(async () => {
  served = await startServed();
});
after(async () => {
  await served.cleanup();
});

/** A client process: `count` streaming calls at once, printing how many ended with message_stop. */
const CLIENT = `
const [url, key, session, count] = process.argv.slice(1);
const one = async (i) => {
  const res = await fetch(url + '/v1/messages', { method: 'POST', headers: { 'content-type': 'application/json',
    'x-api-key': key, 'anthropic-version': '2023-06-01', 'x-cplane-session': session },
    body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'call ' + i }] }) });
  const text = await res.text();
  return res.status === 200 && text.includes('event: message_stop');
};
Promise.all(Array.from({ length: Number(count) }, (_, i) => one(i))).then((ok) => {
  process.stdout.write(String(ok.filter(Boolean).length));
});
`;

function client(key: string, session: string, count: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', CLIENT, served.url, key, session, String(count)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString('utf8');
    });
    child.once('exit', (code) => (code === 0 ? resolve(Number(out)) : reject(new Error(`client exited ${code}`))));
  });
}

test('200 concurrent streams from 4 processes: 200 EXCHANGEs, all settled, the chain verifies, transactions shared', async (t) => {
  const key = issueKey('AGENT-LOAD');
  const done = await Promise.all([0, 1, 2, 3].map((i) => client(key, `SES-LOAD-${i}`, 50)));
  assert.deepEqual(done, [50, 50, 50, 50], 'every stream ended with its final event');
  const entries = ledgerEntries(served.root).filter((e) => String(e.metadata.session_id).startsWith('SES-LOAD-'));
  const exchanges = entries.filter((e) => e.event_type === 'EXCHANGE');
  assert.equal(exchanges.length, 200);
  assert.ok(exchanges.every((e) => e.decision === 'SUCCESS' && e.metadata.usage_complete === true));
  assert.equal(entries.filter((e) => e.event_type === 'DISPATCH').length, 200);
  assert.equal(new Set(exchanges.map((e) => e.metadata.dispatch_entry_id)).size, 200, 'one EXCHANGE per DISPATCH');
  const settled = budgetEntries(served.root).filter((e) => e.event_type === 'BUDGET_SETTLED');
  const ids = new Set(exchanges.map((e) => e.metadata.gateway_request_id));
  assert.equal(settled.filter((e) => ids.has(e.metadata.request_id)).length, 200, 'every reservation settled');
  const verify = cli(['ledger', 'verify', '--root', served.root]);
  assert.equal(verify.status, 0, verify.stdout + verify.stderr);
  assert.equal(await served.stop(), 0);
  const grouped = /(\d+) record batches in (\d+) ledger transactions/.exec(served.stderr());
  assert.ok(grouped, served.stderr());
  assert.ok(Number(grouped[1]) >= 400, 'a DISPATCH batch and an EXCHANGE batch per call');
  t.diagnostic(grouped[0]);
});
