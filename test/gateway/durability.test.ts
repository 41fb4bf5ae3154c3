// `cplane serve --durability`: the flag reaches the call path (the gateway's durable commits per call, counted by
// its stores and reported at shutdown), and a value that is not a level is refused naming it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { REPO } from '../../scripts/lib/repo.js';
import { cli, configSet, issueKey, startServed } from './harness.js';

const CALLS = 5;

test('cplane serve --durability exchange over a config of relaxed: one durable commit per call, the EXCHANGE carrying its DISPATCH', async (t) => {
  const served = await startServed(['--durability', 'exchange'], (root) =>
    configSet(root, 'router.durability', 'relaxed'),
  );
  t.after(() => served.cleanup());
  const key = issueKey('AGENT-DURABILITY');
  const ids: string[] = [];
  for (let i = 0; i < CALLS; i += 1) {
    const res = await fetch(`${served.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({
        model: 'claude-sonnet-4-5',
        max_tokens: 64,
        messages: [{ role: 'user', content: `call ${i}` }],
      }),
    });
    assert.equal(res.status, 200, await res.text());
    ids.push(res.headers.get('x-cplane-exchange-id') ?? '');
  }
  assert.equal(new Set(ids).size, CALLS);
  assert.equal(await served.stop(), 0, served.stderr());
  const counted = /(\d+) record batches in (\d+) ledger transactions, (\d+) durable commits \(durability (\w+)\)/.exec(
    served.stderr(),
  );
  assert.ok(counted, served.stderr());
  assert.equal(counted[4], 'exchange');
  assert.equal(Number(counted[2]), 2 * CALLS, 'sequential calls: an admission and a conclusion each');
  assert.equal(Number(counted[3]), CALLS, 'of which the conclusions alone waited for the disk');
  const bad = cli(['config', 'set', 'router.durability', 'sometimes', '--root', served.root]);
  assert.notEqual(bad.status, 0);
  assert.match(bad.stderr, /durability.*"full", "exchange", "relaxed"; got "sometimes"/);
});

test('cplane serve --durability with a value that is not a level: a usage error naming it, nothing opened', () => {
  const r = spawnSync(
    process.execPath,
    [join(REPO, 'bin', 'cplane.js'), 'serve', '--root', join(tmpdir(), 'no-such-root'), '--durability', 'sometimes'],
    { encoding: 'utf8' },
  );
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /ERR_USAGE/);
  assert.match(r.stderr, /--durability must be one of full, exchange, relaxed, got "sometimes"/);
});
