// A checkpoint syncs the WAL and the database file inside whichever call's commit crosses the WAL's checkpoint
// size: the budget store sets that size so calls meet one rarely (store.ts, BUDGET_WAL_CHECKPOINT_PAGES).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
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
