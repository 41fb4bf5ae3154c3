import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ledger, verifyLedger, computeEntryHash, GENESIS_HASH, hashInput } from '../../kernel/ledger/index.js';

function tempLedger(t: { after: (fn: () => void) => void }, options = {}): Ledger {
  const dir = mkdtempSync(join(tmpdir(), 'cp-ledger-'));
  const ledger = Ledger.open(join(dir, 'ledger.sqlite'), { create: true, ...options });
  t.after(() => { ledger.close(); rmSync(dir, { recursive: true, force: true }); });
  return ledger;
}

test('golden vector: a fixed entry hashes to a fixed value', () => {
  const entry = {
    id: 'LED-0000abcd', event_type: 'EXCHANGE', submission_id: 'SUB-1', decision: 'RECORDED', reason: 'golden',
    metadata: { b: [1, 2.5, 'x'], a: { z: true, y: null }, é: 'ü' }, timestamp: '2026-01-02T03:04:05.678Z', previous_hash: GENESIS_HASH,
  };
  assert.equal(hashInput(entry),
    '{"decision":"RECORDED","event_type":"EXCHANGE","id":"LED-0000abcd","metadata":{"a":{"y":null,"z":true},"b":[1,2.5,"x"],"é":"ü"},"previous_hash":"0000000000000000000000000000000000000000000000000000000000000000","reason":"golden","submission_id":"SUB-1","timestamp":"2026-01-02T03:04:05.678Z"}');
  // Cross-checked with `printf '%s' "$HASH_INPUT" | sha256sum`.
  assert.equal(computeEntryHash(entry), '4990f82fb4ba03bce898d67dedbe829bc92b73a43468d93b3f643ca80cc126bc');
});

test('append links each entry to the previous one and verify passes', (t) => {
  let now = Date.parse('2026-01-01T00:00:00Z');
  const ledger = tempLedger(t, { clock: () => (now += 1000) });
  const a = ledger.append({ event_type: 'TEST', submission_id: 'S', decision: 'OK', reason: 'first' });
  const b = ledger.append({ event_type: 'TEST', submission_id: 'S', decision: 'OK', reason: 'second', metadata: { session_id: 'X' } });
  assert.equal(a.previous_hash, GENESIS_HASH);
  assert.equal(b.previous_hash, a.entry_hash);
  assert.match(a.id, /^LED-[a-f0-9]{8}$/);
  assert.equal(a.timestamp, '2026-01-01T00:00:01.000Z');
  assert.deepEqual(ledger.head(), { seq: 2, hash: b.entry_hash });
  assert.deepEqual(verifyLedger(ledger), { ok: true, entries: 2, head: { seq: 2, hash: b.entry_hash } });
});
