// Open requests (a pending reservation, or a settled one's records kept for the ledger) live in one small table
// from version 3; a version 2 file (a partial index on reservations and a record_outbox table) is migrated by its
// first writer without losing a pending reservation or a kept record, and read as it is by a read-only opener.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Budgeter, type ReserveOutcome } from '../../budgeter/index.js';
import { manualClock, request, tempDir, testConfig } from './helpers.js';

const ok = (o: ReserveOutcome): void => assert.equal(o.ok, true, JSON.stringify(o));
const usage = { input_tokens: 10, output_tokens: 5 };

test('a settlement turns its pending row into its kept records; delivery and the orphan pass read them', (t) => {
  const dbPath = join(tempDir(t), 'budget.sqlite');
  const clock = manualClock();
  const b = Budgeter.open({ dbPath, config: testConfig(), clock: clock.now });
  t.after(() => b.close());
  ok(b.reserve(request('P1')));
  ok(b.reserve(request('S1')));
  b.settle({ request_id: 'S1', usage });
  assert.deepEqual(b.stalePending(clock.now()), ['P1']);
  assert.equal(b.status().pending_reservations, 1);
  const due = b.recordsDue(clock.now());
  assert.deepEqual(
    due.map((r) => [r.request_id, r.records.map((x) => x.event_type)]),
    [['S1', ['BUDGET_SETTLED']]],
  );
  // Reported appended: dropped, the pending reservation stays.
  b.forgetRecords(['S1']);
  assert.deepEqual(b.recordsDue(clock.now()), []);
  assert.deepEqual(b.stalePending(clock.now()), ['P1']);
  b.release('P1');
  assert.deepEqual(b.stalePending(clock.now()), []);
  assert.deepEqual(
    b.recordsDue(clock.now()).map((r) => r.request_id),
    ['P1'],
  );
});

test('a version 2 file is read as it is and migrated by its first writer, pending and kept rows and all', (t) => {
  const dbPath = join(tempDir(t), 'budget.sqlite');
  const clock = manualClock();
  const config = testConfig();
  const first = Budgeter.open({ dbPath, config, clock: clock.now });
  ok(first.reserve(request('PENDING')));
  ok(first.reserve(request('KEPT')));
  first.settle({ request_id: 'KEPT', usage });
  first.close();
  // What version 2 wrote: pending reservations found by a partial index, kept records in their own table.
  const db = new Database(dbPath);
  db.exec(`
    DROP VIEW record_outbox;
    CREATE TABLE record_outbox (request_id TEXT PRIMARY KEY, finished_at TEXT NOT NULL, records TEXT NOT NULL) STRICT, WITHOUT ROWID;
    INSERT INTO record_outbox SELECT request_id, since, records FROM open_requests WHERE records IS NOT NULL;
    DROP TABLE open_requests;
    CREATE INDEX reservations_pending ON reservations (created_at) WHERE state = 'reserved';
    UPDATE budget_meta SET value = '2' WHERE key = 'format_version';
  `);
  db.close();

  const reader = Budgeter.open({ dbPath, config, readonly: true });
  assert.equal(reader.status().pending_reservations, 1, 'a read-only opener reads version 2 as it is');
  assert.deepEqual(reader.stalePending(clock.now()), ['PENDING']);
  assert.deepEqual(
    reader.recordsDue(clock.now()).map((r) => r.request_id),
    ['KEPT'],
  );
  reader.close();

  const writer = Budgeter.open({ dbPath, config, clock: clock.now });
  t.after(() => writer.close());
  assert.deepEqual(writer.stalePending(clock.now()), ['PENDING']);
  assert.equal(writer.status().pending_reservations, 1);
  const kept = writer.recordsDue(clock.now());
  assert.deepEqual(
    kept.map((r) => [r.request_id, r.records.map((x) => x.event_type)]),
    [['KEPT', ['BUDGET_SETTLED']]],
  );
  writer.settle({ request_id: 'PENDING', usage });
  assert.deepEqual(writer.stalePending(clock.now()), []);
  assert.deepEqual(
    writer
      .recordsDue(clock.now())
      .map((r) => r.request_id)
      .sort(),
    ['KEPT', 'PENDING'],
  );
  const check = new Database(dbPath, { readonly: true });
  t.after(() => check.close());
  assert.equal(check.prepare("SELECT value FROM budget_meta WHERE key = 'format_version'").pluck().get(), '4');
  assert.deepEqual(
    check.prepare("SELECT type, name FROM sqlite_master WHERE name IN ('record_outbox', 'reservations_pending')").all(),
    [{ type: 'view', name: 'record_outbox' }],
  );
});
