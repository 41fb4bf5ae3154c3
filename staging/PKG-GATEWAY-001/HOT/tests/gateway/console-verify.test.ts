// The console's "verify now" re-hashes the whole chain: seconds per hundred thousand entries. Asked of a gateway, it
// must not hold the thread every call is served on, and asking again while it runs must not start another.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ledger, verifyLedger } from '#kernel/ledger/index.js';
import { SqliteConsoleData } from '../../gateway/console/sqlite-data.js';

test('a console verify runs off the serving thread, once for every request made while it runs', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cplane-console-verify-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const ledger = Ledger.open(join(dir, 'ledger.sqlite'), { create: true });
  t.after(() => ledger.close());
  for (let i = 0; i < 20; i += 1)
    ledger.append({
      event_type: 'EXCHANGE',
      submission_id: 'anthropic.messages',
      decision: 'SUCCESS',
      reason: 'r',
      metadata: { session_id: 'S1', agent_id: 'A' },
      content: { prompt: [`{"q":${i}}`], response: [`answer ${i}`] },
    });
  const data = new SqliteConsoleData({ root: dir, ledger, breakers: () => [] });
  // Turns of the event loop while the verify runs: none at all when it runs to its end before returning.
  let turns = 0;
  let done = false;
  const spin = (): void => {
    if (done) return;
    turns += 1;
    setImmediate(spin);
  };
  t.after(() => {
    done = true;
  });
  setImmediate(spin);
  const first = data.verify();
  const second = data.verify();
  const summary = await first;
  done = true;
  assert.ok(turns > 0, 'the gateway kept serving while the chain was verified');
  assert.equal(second, first, 'a second request joins the verify already running');
  const direct = verifyLedger(ledger);
  assert.equal(summary.ok, true, JSON.stringify(summary));
  assert.equal(summary.entries, direct.entries);
  assert.equal(summary.head_seq, ledger.head().seq);
  assert.equal(summary.first_bad, null);
  assert.notEqual(data.verify(), first, 'a request after it ended runs a new verify');
  await data.verify();
});
