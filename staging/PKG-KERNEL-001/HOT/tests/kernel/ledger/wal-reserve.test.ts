import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { copyFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Ledger, verifyLedger } from '../../../kernel/ledger/index.js';
import { appendN, tempDir } from './helpers.js';

/** What a reservation grows the WAL to: an autocheckpoint's worth of 2 KiB frames (24-byte headers) and a quarter. */
const RESERVED = 1250 * (2048 + 24);

const tables = (ledger: Ledger): string[] =>
  ledger.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all() as string[];

test('a writer opened with reserveWal finds its WAL grown, and appends overwrite it without growing it', (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'ledger.sqlite');
  const plain = Ledger.open(join(dir, 'plain.sqlite'), { create: true });
  const ledger = Ledger.open(path, { create: true, reserveWal: true });
  t.after(() => {
    plain.close();
    ledger.close();
  });
  const reserved = statSync(`${path}-wal`).size;
  assert.ok(reserved >= RESERVED, `WAL of ${reserved} bytes, expected at least ${RESERVED}`);
  // Nothing of the reservation is in the database: no table, no page, no schema change.
  assert.deepEqual(tables(ledger), tables(plain));
  assert.equal(ledger.db.pragma('page_count', { simple: true }), plain.db.pragma('page_count', { simple: true }));
  assert.equal(
    ledger.db.pragma('schema_version', { simple: true }),
    plain.db.pragma('schema_version', { simple: true }),
  );
  appendN(ledger, 40);
  for (let i = 0; i < 40; i += 1) appendN(ledger, 1);
  assert.equal(statSync(`${path}-wal`).size, reserved);
  assert.equal(verifyLedger(ledger).ok, true);
  assert.equal(ledger.query({ order: 'oldest' }).length, 80);
});

test("a writer whose WAL a worker checkpoints reserves the worker's interval, not SQLite's", (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'ledger.sqlite');
  const ledger = Ledger.open(path, {
    create: true,
    reserveWal: true,
    walCheckpoints: 'background',
    checkpointFrames: 2000,
  });
  t.after(() => ledger.close());
  const reserved = statSync(`${path}-wal`).size;
  assert.ok(reserved >= 2500 * (2048 + 24), `WAL of ${reserved} bytes`);
  assert.ok(reserved < 3000 * (2048 + 24), `WAL of ${reserved} bytes`);
});

test('a crash image of a reserved WAL recovers exactly the committed entries', (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'ledger.sqlite');
  const ledger = Ledger.open(path, { create: true, reserveWal: true });
  t.after(() => ledger.close());
  appendN(ledger, 5);
  const head = ledger.head();
  // The files as a killed writer leaves them: its WAL, committed frames first and the reservation's after them.
  const crashed = join(dir, 'crashed.sqlite');
  copyFileSync(path, crashed);
  copyFileSync(`${path}-wal`, `${crashed}-wal`);
  const recovered = Ledger.open(crashed);
  try {
    assert.deepEqual(verifyLedger(recovered), { ok: true, entries: 5, head });
    appendN(recovered, 2);
    assert.equal(verifyLedger(recovered).ok, true);
  } finally {
    recovered.close();
  }
});

test('a reservation is skipped, not waited for, while another connection holds the write lock', (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'ledger.sqlite');
  Ledger.open(path, { create: true }).close();
  const other = new Database(path);
  other.exec('BEGIN IMMEDIATE');
  t.after(() => other.close());
  const ledger = Ledger.open(path, { reserveWal: true, busyTimeoutMs: 20 });
  t.after(() => ledger.close());
  assert.ok(statSync(`${path}-wal`).size < RESERVED);
  other.exec('ROLLBACK');
  appendN(ledger, 3);
  assert.equal(verifyLedger(ledger).ok, true);
});
