import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ledger, type AppendInput } from '#kernel/ledger/index.js';
import { GroupCommit } from '../../router/group-commit.js';

const record = (reason: string): AppendInput => ({
  event_type: 'NOTE',
  submission_id: 'S',
  decision: 'OK',
  reason,
  metadata: {},
});

test('batches ready in one turn share a transaction: durable if any of them asks, without an fsync if none does', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-group-commit-'));
  const ledger = Ledger.open(join(dir, 'ledger.sqlite'), { create: true, synchronous: 'FULL' });
  t.after(() => {
    ledger.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const group = new GroupCommit((records, options) => Promise.resolve(ledger.appendBatch(records, options)));
  const lazy = { durable: false };
  const first = await Promise.all([
    group.commit([record('a')], lazy),
    group.commit([record('b1'), record('b2')], lazy),
  ]);
  assert.deepEqual(ledger.commitCount, { durable: 0, lazy: 1 }, 'one transaction, not synced');
  await Promise.all([group.commit([record('c')], lazy), group.commit([record('d')])]);
  assert.deepEqual(ledger.commitCount, { durable: 1, lazy: 1 }, 'one transaction, synced for the batch that asked');
  await group.commit([record('e')]);
  assert.deepEqual(ledger.commitCount, { durable: 2, lazy: 1 }, 'durable unless told otherwise');
  assert.deepEqual(group.stats, { groups: 3, batches: 5 });
  assert.equal(first[1]?.length, 2);
  assert.deepEqual(
    ledger.query({ order: 'oldest' }).map((e) => e.reason),
    ['a', 'b1', 'b2', 'c', 'd', 'e'],
  );
  // The lazy commit switched the connection back: a later plain append is synced.
  assert.equal(ledger.db.pragma('synchronous', { simple: true }), 2);
});
