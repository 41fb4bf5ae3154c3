import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sha256Hex } from '../../../kernel/canonical.js';
import { Ledger, verifyLedger, type LedgerEntry } from '../../../kernel/ledger/index.js';
import { appendN, tamper, tempLedger, type TestContext } from './helpers.js';

/** Five entries, closed so the file can be tampered with raw, then reopened for verify. */
function fiveEntries(t: TestContext): { path: string; entries: LedgerEntry[] } {
  const ledger = tempLedger(t);
  const entries = appendN(ledger, 5);
  ledger.close();
  return { path: ledger.path, entries };
}

function verifyFile(
  t: TestContext,
  path: string,
  anchor?: { seq: number; hash: string },
): ReturnType<typeof verifyLedger> {
  const ledger = Ledger.open(path);
  t.after(() => {
    ledger.close();
  });
  return verifyLedger(ledger, anchor ? { anchor } : {});
}

test('an edited metadata value is named as the first bad entry, even with the triggers dropped', (t) => {
  const { path, entries } = fiveEntries(t);
  tamper(path, `UPDATE entries SET metadata = '{"n":2,"session_id":"EVIL"}' WHERE seq = 3`);
  const result = verifyFile(t, path);
  assert.equal(result.ok, false);
  assert.equal(result.entries, 2);
  assert.deepEqual(result.head, { seq: 2, hash: entries[1]?.entry_hash });
  assert.equal(result.first_bad?.id, entries[2]?.id);
  assert.equal(result.first_bad?.problem, 'edited');
  assert.match(result.first_bad?.message ?? '', /content was edited/);
});

test('an edited entry_hash is named as such', (t) => {
  const { path, entries } = fiveEntries(t);
  tamper(path, `UPDATE entries SET entry_hash = '${'f'.repeat(64)}' WHERE seq = 2`);
  const result = verifyFile(t, path);
  assert.deepEqual([result.first_bad?.id, result.first_bad?.problem], [entries[1]?.id, 'hash_edited']);
});

test('an edited previous_hash breaks the link at that entry', (t) => {
  const { path, entries } = fiveEntries(t);
  tamper(path, `UPDATE entries SET previous_hash = '${'e'.repeat(64)}' WHERE seq = 4`);
  const result = verifyFile(t, path);
  assert.deepEqual([result.first_bad?.id, result.first_bad?.problem], [entries[3]?.id, 'broken_link']);
});

test('a deleted row is reported as missing at its position', (t) => {
  const { path, entries } = fiveEntries(t);
  tamper(path, 'DELETE FROM entries WHERE seq = 3');
  const result = verifyFile(t, path);
  assert.equal(result.first_bad?.problem, 'deleted');
  assert.equal(result.first_bad?.seq, 3);
  assert.match(result.first_bad?.message ?? '', new RegExp(`#4 \\(${entries[3]?.id}\\)`));
});

test('a deleted row with the rest renumbered to hide the gap is still caught', (t) => {
  const { path, entries } = fiveEntries(t);
  tamper(path, 'DELETE FROM entries WHERE seq = 1; UPDATE entries SET seq = seq - 1;');
  const result = verifyFile(t, path);
  assert.equal(result.first_bad?.seq, 1);
  assert.equal(result.first_bad?.id, entries[1]?.id);
  assert.equal(result.first_bad?.problem, 'deleted');
});

test('a row deleted from the middle with the rest renumbered is caught where the gap was', (t) => {
  const { path, entries } = fiveEntries(t);
  tamper(path, 'DELETE FROM entries WHERE seq = 3; UPDATE entries SET seq = seq - 1 WHERE seq > 3;');
  const result = verifyFile(t, path);
  assert.deepEqual(
    [result.first_bad?.seq, result.first_bad?.id, result.first_bad?.problem],
    [3, entries[3]?.id, 'deleted'],
  );
  assert.deepEqual(result.head, { seq: 2, hash: entries[1]?.entry_hash });
});

test('two rows swapped are reported as reordered at the first of them', (t) => {
  const { path, entries } = fiveEntries(t);
  tamper(
    path,
    'UPDATE entries SET seq = -1 WHERE seq = 3; UPDATE entries SET seq = 3 WHERE seq = 4; UPDATE entries SET seq = 4 WHERE seq = -1;',
  );
  const result = verifyFile(t, path);
  assert.deepEqual(
    [result.first_bad?.seq, result.first_bad?.id, result.first_bad?.problem],
    [3, entries[3]?.id, 'reordered'],
  );
});

test('metadata that is not JSON any more is reported as unreadable', (t) => {
  const { path, entries } = fiveEntries(t);
  // The generated columns refuse malformed JSON, so a forger rebuilds the table without them first.
  tamper(
    path,
    `CREATE TABLE plain AS SELECT seq, id, event_type, submission_id, decision, reason, metadata, timestamp, previous_hash, entry_hash,
      session_id, agent_id, work_order_id, dispatch_entry_id FROM entries;
    DROP TABLE entries; ALTER TABLE plain RENAME TO entries; UPDATE entries SET metadata = '{not json' WHERE seq = 5`,
  );
  const result = verifyFile(t, path);
  assert.deepEqual([result.first_bad?.id, result.first_bad?.problem], [entries[4]?.id, 'unreadable']);
});

test('metadata spliced to smuggle extra keys into the hash input is refused even when its hash was recomputed', (t) => {
  const { path, entries } = fiveEntries(t);
  const smuggled = '{"n":4,"session_id":"S1"},"reason":"forged"';
  const first = entries[4] as LedgerEntry;
  // The string verify's fast path would build for this row, with a matching entry_hash recomputed over it.
  const input = `{"decision":"OK","event_type":"TEST","id":"${first.id}","metadata":${smuggled},"previous_hash":"${first.previous_hash}","reason":${JSON.stringify(first.reason)},"submission_id":"SUB-4","timestamp":"${first.timestamp}"}`;
  tamper(
    path,
    `CREATE TABLE plain AS SELECT seq, id, event_type, submission_id, decision, reason, metadata, timestamp, previous_hash, entry_hash,
      session_id, agent_id, work_order_id, dispatch_entry_id FROM entries;
    DROP TABLE entries; ALTER TABLE plain RENAME TO entries;
    UPDATE entries SET metadata = '${smuggled}', entry_hash = '${sha256Hex(input)}' WHERE seq = 5`,
  );
  const result = verifyFile(t, path);
  assert.deepEqual([result.first_bad?.id, result.first_bad?.problem], [first.id, 'unreadable']);
});

test('metadata rewritten to equivalent non-canonical JSON still verifies (the hash is over the value)', (t) => {
  const { path } = fiveEntries(t);
  tamper(path, `UPDATE entries SET metadata = '{ "session_id" : "S1", "n" : 1 }' WHERE seq = 2`);
  assert.equal(verifyFile(t, path).ok, true);
});

test('a deleted tail is invisible without an anchor and caught against one', (t) => {
  const { path, entries } = fiveEntries(t);
  const anchor = { seq: 5, hash: entries[4]?.entry_hash as string };
  assert.equal(verifyFile(t, path, anchor).ok, true);
  tamper(path, 'DELETE FROM entries WHERE seq >= 4');
  assert.equal(verifyFile(t, path).ok, true, 'the remaining chain is consistent in itself');
  const result = verifyFile(t, path, anchor);
  assert.equal(result.ok, false);
  assert.deepEqual([result.first_bad?.seq, result.first_bad?.problem], [4, 'truncated']);
});

test('an anchor whose hash does not match the entry at its seq is reported', (t) => {
  const { path, entries } = fiveEntries(t);
  const result = verifyFile(t, path, { seq: 3, hash: 'a'.repeat(64) });
  assert.deepEqual(
    [result.first_bad?.seq, result.first_bad?.id, result.first_bad?.problem],
    [3, entries[2]?.id, 'anchor_mismatch'],
  );
  assert.equal(verifyFile(t, path, { seq: 0, hash: 'b'.repeat(64) }).first_bad?.problem, 'anchor_mismatch');
  assert.equal(verifyFile(t, path, { seq: 3, hash: entries[2]?.entry_hash as string }).ok, true);
});

test('verify walks chains longer than one read chunk', (t) => {
  const ledger = tempLedger(t, { synchronous: 'OFF' });
  appendN(ledger, 9000);
  const result = verifyLedger(ledger);
  assert.deepEqual([result.ok, result.entries], [true, 9000]);
  ledger.close();
  tamper(ledger.path, `UPDATE entries SET reason = 'changed' WHERE seq = 8500`);
  const broken = verifyFile(t, ledger.path);
  assert.deepEqual([broken.first_bad?.seq, broken.first_bad?.problem], [8500, 'edited']);
});
