import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CpError } from '#kernel/errors.js';
import { Ledger, type AppendInput, type AppendOptions } from '#kernel/ledger/index.js';
import { sqliteLedgerStore } from '#kernel/ledger/store.js';
import { serialWriter } from '../../router/serial-writer.js';

const record = (reason: string): AppendInput => ({
  event_type: 'NOTE',
  submission_id: 'S',
  decision: 'OK',
  reason,
  metadata: {},
});

/** A real ledger behind a store that counts its appends and can be told to refuse. */
function counted(refuse: (batch: readonly AppendInput[]) => Error | null = () => null) {
  const ledger = Ledger.open(':memory:', { create: true });
  const inner = sqliteLedgerStore(ledger);
  const calls: number[] = [];
  const store = {
    ...inner,
    backend: 'postgres' as const,
    async appendBatch(batch: readonly AppendInput[]) {
      calls.push(batch.length);
      const refusal = refuse(batch);
      if (refusal) throw refusal;
      return inner.appendBatch(batch);
    },
  };
  return { ledger, calls, writer: serialWriter(store) };
}

test('appends made while one is in flight are written together, each caller getting its own entries', async () => {
  const { ledger, calls, writer } = counted();
  const results = await Promise.all([
    writer.appendBatch([record('a')]),
    writer.appendBatch([record('b1'), record('b2')]),
    writer.appendBatch([record('c')]),
    writer.append(record('d')),
  ]);
  // The first goes alone; the three that queued behind it go as one.
  assert.deepEqual(calls, [1, 4]);
  assert.deepEqual(
    results.map((r) => (Array.isArray(r) ? r.map((e) => e.reason) : [r.reason])),
    [['a'], ['b1', 'b2'], ['c'], ['d']],
  );
  assert.equal(ledger.head().seq, 5);
  ledger.close();
});

test('a group the store refuses is retried batch by batch: the bad batch alone fails', async () => {
  const { ledger, writer } = counted((batch) =>
    batch.some((r) => r.reason === 'bad') ? new CpError('ERR_LEDGER_ENTRY_INVALID', 'refused') : null,
  );
  const [first, good, bad, other] = await Promise.allSettled([
    writer.appendBatch([record('first')]),
    writer.appendBatch([record('good')]),
    writer.appendBatch([record('bad')]),
    writer.appendBatch([record('other')]),
  ]);
  assert.equal(first?.status, 'fulfilled');
  assert.equal(good?.status, 'fulfilled');
  assert.equal(bad?.status, 'rejected');
  assert.equal(other?.status, 'fulfilled');
  assert.deepEqual(
    ledger
      .query({})
      .map((e) => e.reason)
      .sort(),
    ['first', 'good', 'other'],
  );
  ledger.close();
});

test('a store that is unavailable fails the whole group without retrying it (it may have landed)', async () => {
  const { ledger, calls, writer } = counted(
    () => new CpError('ERR_STORE_UNAVAILABLE', 'the database went away; the outcome is unknown'),
  );
  const first = writer.appendBatch([record('first')]);
  const rest = Promise.allSettled([writer.appendBatch([record('x')]), writer.appendBatch([record('y')])]);
  await assert.rejects(first, (e: unknown) => e instanceof CpError && e.code === 'ERR_STORE_UNAVAILABLE');
  const settled = await rest;
  assert.deepEqual(
    settled.map((s) => s.status),
    ['rejected', 'rejected'],
  );
  assert.deepEqual(calls, [1, 2], 'the group was tried once, never batch by batch');
  ledger.close();
});

test('a group is durable if any of its batches asks, lazy if none does; a batch with `once` still goes alone', async () => {
  const ledger = Ledger.open(':memory:', { create: true });
  const inner = sqliteLedgerStore(ledger);
  const asked: (AppendOptions | undefined)[] = [];
  const writer = serialWriter({
    ...inner,
    backend: 'postgres' as const,
    appendBatch(batch: readonly AppendInput[], options?: AppendOptions) {
      asked.push(options);
      return inner.appendBatch(batch, options);
    },
  });
  const lazy = { durable: false };
  await Promise.all([
    writer.appendBatch([record('first')], lazy),
    writer.appendBatch([record('a')], lazy),
    writer.appendBatch([record('b')]),
  ]);
  await Promise.all([
    writer.appendBatch([record('first')], lazy),
    writer.appendBatch([record('c')], lazy),
    writer.appendBatch([record('d')], lazy),
  ]);
  await Promise.all([
    writer.appendBatch([record('first')]),
    writer.appendBatch([record('e')], lazy),
    writer.appendBatch([record('f')], { once: ['NOTE'], durable: false }),
  ]);
  assert.deepEqual(asked, [lazy, undefined, lazy, lazy, undefined, lazy, { once: ['NOTE'], durable: false }]);
  assert.deepEqual(ledger.commitCount, { durable: 2, lazy: 5 });
  ledger.close();
});
