// A durable append made through the store commits at NORMAL and then syncs the WAL on the thread pool: counted as
// one durable commit; once a sync has failed, every later append is refused before it commits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { unlinkSync } from 'node:fs';
import { sqliteLedgerStore } from '../../../kernel/ledger/store.js';
import { levelNote as note, recordLevels, tempLedger } from './helpers.js';

test('a durable append through the store commits without its own fsync, then is counted durable once the WAL synced', async (t) => {
  const ledger = tempLedger(t);
  const store = sqliteLedgerStore(ledger);
  const levels = recordLevels(ledger);
  const before = { ...ledger.commitCount };
  await store.appendBatch([note('durable-1')]);
  await store.append(note('durable-2'));
  await store.appendBatch([note('lazy-1')], { durable: false });
  assert.deepEqual(levels(), [
    ['durable-1', 1],
    ['durable-2', 1],
    ['lazy-1', 1],
  ]);
  assert.equal(ledger.commitCount.durable - before.durable, 2);
  assert.equal(ledger.commitCount.lazy - before.lazy, 1);
  // A ledger in memory has no WAL file to sync: its durable appends commit at FULL as appendBatch's do.
  const memory = tempLedger(t, { synchronous: 'NORMAL' });
  await sqliteLedgerStore(memory).appendBatch([note('normal-1')]);
  assert.equal(memory.head().seq, 1);
});

test('after a WAL sync failed, the append is not acknowledged and every later one is refused before it commits', async (t) => {
  const ledger = tempLedger(t);
  const store = sqliteLedgerStore(ledger);
  await store.appendBatch([note('first')]);
  // The WAL file gone from under the writer: the next sync cannot show its commit durable.
  unlinkSync(`${ledger.path}-wal`);
  await assert.rejects(store.appendBatch([note('unsynced')]), (error: unknown) => {
    assert.match((error as Error).message, /syncing the ledger WAL/);
    return true;
  });
  const head = ledger.head().seq;
  for (const durable of [true, false])
    await assert.rejects(store.appendBatch([note(`retried-${durable}`)], { durable }), /syncing the ledger WAL/);
  await assert.rejects(store.appendBatch([note('lone')], { waitHere: true }), /syncing the ledger WAL/);
  // Nor does a write that bypasses the store commit: the disk's state is unknown to every path.
  assert.throws(() => ledger.appendBatch([note('direct')]), /syncing the ledger WAL/);
  assert.equal(ledger.head().seq, head, 'nothing committed after the failure');
});

test('a lone durable append (waitHere) commits at FULL and is durable before the call returns; others wait for the pool', async (t) => {
  const ledger = tempLedger(t);
  const store = sqliteLedgerStore(ledger);
  const levels = recordLevels(ledger);
  const before = ledger.commitCount.durable;
  const lone = store.appendBatch([note('lone')], { waitHere: true });
  // Counted before the promise is awaited: the fsync was made on this thread, inside the commit.
  assert.equal(ledger.commitCount.durable - before, 1);
  await lone;
  const pooled = store.appendBatch([note('pooled')]);
  assert.equal(ledger.commitCount.durable - before, 1, 'not durable until the pool synced the WAL');
  await pooled;
  assert.equal(ledger.commitCount.durable - before, 2);
  // synchronous: 2 is FULL (its own fsync in the commit), 1 NORMAL (the WAL synced after it).
  assert.deepEqual(levels(), [
    ['lone', 2],
    ['pooled', 1],
  ]);
});
