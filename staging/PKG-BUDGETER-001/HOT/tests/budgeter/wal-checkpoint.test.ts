// A checkpoint syncs the WAL and the database file inside whichever call's commit crosses the WAL's checkpoint
// size: the budget store sets that size so calls meet one rarely (store.ts, BUDGET_WAL_CHECKPOINT_PAGES); a server's
// store checkpoints on a worker thread instead (walCheckpoints 'background').
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, copyFileSync, openSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Budgeter } from '../../budgeter/index.js';
import { BUDGET_WAL_CHECKPOINT_PAGES } from '../../budgeter/store.js';
import { request, tempDir, testConfig } from './helpers.js';

/** The WAL header's checkpoint sequence number: SQLite bumps it each time a checkpoint restarts the WAL. */
function walRestarts(dbPath: string): number {
  const fd = openSync(`${dbPath}-wal`, 'r');
  try {
    const header = Buffer.alloc(16);
    readSync(fd, header, 0, 16, 0);
    return header.readUInt32BE(12);
  } finally {
    closeSync(fd);
  }
}

test("reserve and settle leave the WAL unchecked past SQLite's default 1,000 pages, up to the store size", (t) => {
  const dbPath = join(tempDir(t), 'budget.sqlite');
  const b = Budgeter.open({ dbPath, config: testConfig() });
  t.after(() => b.close());
  // Frames written since the WAL began (it has not restarted, or the test fails): its size over a frame's.
  const pages = (): number => Math.floor((statSync(`${dbPath}-wal`).size - 32) / (4096 + 24));
  const before = walRestarts(dbPath);
  let calls = 0;
  // Distinct sessions spread the totals over many pages, so a few hundred calls write well over 1,000 pages.
  while (calls < 5000) {
    const id = `R${calls}`;
    b.reserve(request(id, { session_id: `S${calls % 500}` }));
    b.settle({ request_id: id, usage: { input_tokens: 90, output_tokens: 40 } });
    calls += 1;
    if (calls % 100 === 0 && walRestarts(dbPath) === before && pages() > 1500) break;
  }
  assert.equal(walRestarts(dbPath), before, `the WAL was checkpointed within ${calls} calls`);
  assert.ok(pages() > 1500 && pages() < BUDGET_WAL_CHECKPOINT_PAGES, `${pages()} pages in the WAL`);
});

/** Reservations the database file holds on its own: a copy read without the -wal beside it. */
function reservationsWithoutWal(dir: string, dbPath: string): number {
  const copy = join(dir, `copy-${Math.random().toString(36).slice(2)}.sqlite`);
  copyFileSync(dbPath, copy);
  const db = new Database(copy, { readonly: true });
  try {
    return db.prepare('SELECT count(*) FROM reservations').pluck().get() as number;
  } finally {
    db.close();
  }
}

test('background checkpoints (a server): a worker thread copies the WAL into the file, never a step', async (t) => {
  const dir = tempDir(t);
  const dbPath = join(dir, 'budget.sqlite');
  // Every 1,000 frames (a server's are rarer, CHECKPOINT_FRAMES): the same mechanism, sooner.
  const b = Budgeter.open({ dbPath, config: testConfig(), walCheckpoints: 'background', checkpointFrames: 1000 });
  t.after(() => b.close());
  let calls = 0;
  const checkpointer = b.walCheckpointer;
  assert.ok(checkpointer !== null);
  // Steps until two checkpoints were asked for, waiting for the worker's answer after each ask: the worker's pace
  // changes when the steps go on, never what the file holds.
  while (checkpointer.stats.requested < 2) {
    const id = `R${calls}`;
    b.reserve(request(id, { session_id: `S${calls % 500}` }));
    b.settle({ request_id: id, usage: { input_tokens: 90, output_tokens: 40 } });
    calls += 1;
    await new Promise(setImmediate);
    if (checkpointer.stats.answered < checkpointer.stats.requested) await checkpointer.settled();
    assert.ok(calls < 20_000, 'the steps cross the threshold');
  }
  assert.equal(checkpointer.stats.inline, 0, 'no checkpoint ran inside a step');
  assert.equal(checkpointer.stats.complete, 2, JSON.stringify(checkpointer.stats));
  assert.equal(reservationsWithoutWal(dir, dbPath), calls, 'every step is in the database file itself');
  // Closing stops the worker and checkpoints the rest.
  b.reserve(request('LAST'));
  b.close();
  assert.equal(reservationsWithoutWal(dir, dbPath), calls + 1);
});
