import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AppendInput, LedgerEntry } from '#kernel/ledger/index.js';
import { GroupCommit } from '#router/group-commit.js';

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
