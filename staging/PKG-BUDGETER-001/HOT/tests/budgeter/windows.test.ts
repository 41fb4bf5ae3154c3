// A scope's rate window and its count of calls in flight are kept in the row of its totals (format 4, scope_rows):
// a version 3 file's scope_totals and rate_windows tables are moved there by its first writer, windows and counts
// intact, and a row that holds only a window or a count is no scope's totals (status lists the charged scopes).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Budgeter, type ReserveOutcome } from '../../budgeter/index.js';
import { manualClock, request, tempDir, testConfig } from './helpers.js';

const ok = (o: ReserveOutcome): void => assert.equal(o.ok, true, JSON.stringify(o));

const config = testConfig({
  rate_limits: { session: { window_ms: 60_000, max_requests: 2 }, agent: { window_ms: 60_000, max_in_flight: 2 } },
});

function refusedFor(o: ReserveOutcome): string[] {
  assert.equal(o.ok, false, JSON.stringify(o));
  return o.ok ? [] : o.violations.map((v) => `${v.scope} ${v.limit}`);
}

const scopesOf = (b: Budgeter) => b.status({ session_id: 'S1' }).scopes.map((s) => `${s.scope} ${s.scope_id}`);

test('windows and counts in flight live in their scopes rows; status lists only charged scopes', (t) => {
  const dbPath = join(tempDir(t), 'budget.sqlite');
  const clock = manualClock();
  const b = Budgeter.open({ dbPath, config, clock: clock.now });
  t.after(() => b.close());
  ok(b.reserve(request('R1', { agent_id: 'A' })));
  ok(b.reserve(request('R2', { agent_id: 'A' })));
  assert.deepEqual(refusedFor(b.reserve(request('R3', { agent_id: 'B' }))), ['session max_requests']);
  clock.advance(60_000);
  assert.deepEqual(refusedFor(b.reserve(request('R4', { agent_id: 'A' }))), ['agent max_in_flight']);
  b.settle({ request_id: 'R1', usage: { input_tokens: 10, output_tokens: 5 } });
  ok(b.reserve(request('R5', { agent_id: 'A' })));
  assert.deepEqual(scopesOf(b), ['session S1', 'agent A']);
  const db = new Database(dbPath, { readonly: true });
  t.after(() => db.close());
  assert.equal(db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'rate_windows'").pluck().get(), 0);
});

test('a version 3 file is read as it is, and its first writer moves its windows into their scopes rows', (t) => {
  const dbPath = join(tempDir(t), 'budget.sqlite');
  const clock = manualClock();
  const first = Budgeter.open({ dbPath, config, clock: clock.now });
  ok(first.reserve(request('R1', { agent_id: 'A' })));
  ok(first.reserve(request('R2', { agent_id: 'A' })));
  first.close();
  // What version 3 wrote: windows and counts in flight in a table of their own, the totals without them.
  const db = new Database(dbPath);
  db.exec(`
    CREATE TABLE rate_windows (scope TEXT PRIMARY KEY, window_start INTEGER NOT NULL, requests INTEGER NOT NULL,
      tokens INTEGER NOT NULL) STRICT, WITHOUT ROWID;
    INSERT INTO rate_windows SELECT scope, window_start, window_requests, window_tokens FROM scope_rows
      WHERE window_start IS NOT NULL;
    CREATE TABLE totals_v3 (scope TEXT PRIMARY KEY, kind TEXT NOT NULL, session_id TEXT NOT NULL,
      work_order_id TEXT NOT NULL, agent_id TEXT NOT NULL, reserved_tokens INTEGER NOT NULL DEFAULT 0,
      reserved_cost INTEGER NOT NULL DEFAULT 0, settled_tokens INTEGER NOT NULL DEFAULT 0,
      settled_cost INTEGER NOT NULL DEFAULT 0, requests INTEGER NOT NULL DEFAULT 0,
      unknown_cost_requests INTEGER NOT NULL DEFAULT 0) STRICT, WITHOUT ROWID;
    INSERT INTO totals_v3 SELECT * FROM scope_totals;
    DROP VIEW scope_totals;
    DROP TABLE scope_rows;
    ALTER TABLE totals_v3 RENAME TO scope_totals;
    CREATE INDEX scope_totals_session ON scope_totals (session_id, kind);
    UPDATE budget_meta SET value = '3' WHERE key = 'format_version';
  `);
  assert.ok((db.prepare('SELECT count(*) FROM rate_windows').pluck().get() as number) >= 2);
  db.close();

  const reader = Budgeter.open({ dbPath, config, readonly: true });
  assert.deepEqual(scopesOf(reader), ['session S1', 'agent A'], 'a read-only opener reads version 3 as it is');
  reader.close();

  const writer = Budgeter.open({ dbPath, config, clock: clock.now });
  t.after(() => writer.close());
  // The session's window still holds its two requests, and the agent its two calls in flight.
  assert.deepEqual(refusedFor(writer.reserve(request('R3', { agent_id: 'B' }))), ['session max_requests']);
  clock.advance(60_000);
  assert.deepEqual(refusedFor(writer.reserve(request('R4', { agent_id: 'A' }))), ['agent max_in_flight']);
  assert.deepEqual(scopesOf(writer), ['session S1', 'agent A']);
  const check = new Database(dbPath, { readonly: true });
  t.after(() => check.close());
  assert.equal(check.prepare("SELECT value FROM budget_meta WHERE key = 'format_version'").pluck().get(), '4');
  assert.deepEqual(
    check.prepare("SELECT type, name FROM sqlite_master WHERE name IN ('rate_windows', 'scope_totals')").all(),
    [{ type: 'view', name: 'scope_totals' }],
  );
});
