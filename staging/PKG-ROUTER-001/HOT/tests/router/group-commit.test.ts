import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ledger, type AppendInput, type LedgerEntry } from '#kernel/ledger/index.js';
import { GroupCommit } from '#router/group-commit.js';

const note = (reason: string): AppendInput => ({
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
  const first = await Promise.all([group.commit([note('a')], lazy), group.commit([note('b1'), note('b2')], lazy)]);
  assert.deepEqual(ledger.commitCount, { durable: 0, lazy: 1 }, 'one transaction, not synced');
  await Promise.all([group.commit([note('c')], lazy), group.commit([note('d')])]);
  assert.deepEqual(ledger.commitCount, { durable: 1, lazy: 1 }, 'one transaction, synced for the batch that asked');
  await group.commit([note('e')]);
  assert.deepEqual(ledger.commitCount, { durable: 2, lazy: 1 }, 'durable unless told otherwise');
  assert.deepEqual(group.stats, { groups: 3, batches: 5 });
  assert.equal(first[1]?.ok && first[1].ids.length, 2);
  assert.deepEqual(
    ledger.query({ order: 'oldest' }).map((e) => e.reason),
    ['a', 'b1', 'b2', 'c', 'd', 'e'],
  );
  // The lazy commit switched the connection back: a later plain append is synced.
  assert.equal(ledger.db.pragma('synchronous', { simple: true }), 2);
});

const record: AppendInput = { event_type: 'DISPATCH', submission_id: 'PRC-1', decision: 'DISPATCHED', reason: 'x' };

function store(): { appended: number[]; append: (records: AppendInput[]) => Promise<LedgerEntry[]> } {
  const appended: number[] = [];
  return {
    appended,
    append: async (records) => {
      appended.push(records.length);
      return records.map((_, i) => ({ id: `E${appended.length}-${i}` }) as LedgerEntry);
    },
  };
}

test('batches ready in the same turn share one transaction, each told its own entry ids', async () => {
  const s = store();
  const group = new GroupCommit(s.append);
  const [a, b] = await Promise.all([group.commit([record]), group.commit([record, record])]);
  assert.deepEqual(s.appended, [3]);
  assert.deepEqual(group.stats, { groups: 1, batches: 2 });
  assert.deepEqual(a, { ok: true, ids: ['E1-0'] });
  assert.deepEqual(b, { ok: true, ids: ['E1-1', 'E1-2'] });
});

test("a lone caller's batch is written without waiting for the next turn of the event loop", async () => {
  const s = store();
  let turned = false;
  setImmediate(() => {
    turned = true;
  });
  const lone = new GroupCommit(s.append, () => true);
  assert.deepEqual(await lone.commit([record]), { ok: true, ids: ['E1-0'] });
  assert.equal(turned, false, 'committed before the event loop turned');
  const grouped = new GroupCommit(s.append, () => false);
  await grouped.commit([record]);
  assert.equal(turned, true, 'a caller with others in flight waits a turn for them');
});

test("a lone caller's commit waits for the disk on its own thread; a group's, or one beside other calls, does not", async () => {
  const asked: (boolean | undefined)[] = [];
  const append = async (records: AppendInput[], options: { waitHere?: boolean }): Promise<LedgerEntry[]> => {
    asked.push(options.waitHere);
    return records.map((_, i) => ({ id: `E${i}` }) as LedgerEntry);
  };
  let lone = true;
  const group = new GroupCommit(append, () => lone);
  await group.commit([record]);
  lone = false;
  await group.commit([record]);
  await Promise.all([group.commit([record]), group.commit([record])]);
  assert.deepEqual(asked, [true, false, false]);
});

test('a failed group tells each batch whether it was alone in it (its own fault) or not', async () => {
  const failing = new GroupCommit(async () => {
    throw new Error('disk I/O error');
  });
  const [a, b] = await Promise.all([failing.commit([record]), failing.commit([record])]);
  assert.equal(a.ok || b.ok, false);
  assert.equal(!a.ok && a.alone, false);
  assert.equal(!b.ok && b.alone, false);
  const alone = await failing.commit([record]);
  assert.equal(alone.ok, false);
  assert.equal(!alone.ok && alone.alone, true);
  assert.match(String(!alone.ok && (alone.error as Error).message), /disk I\/O error/);
});
