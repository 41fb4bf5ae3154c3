// The `key` scope: every call made with a key naming a budget scope is charged to it, across sessions; version 1
// budget databases (before key scopes) are migrated by their first writer and still read by read-only openers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Budgeter, type ReserveOutcome } from '../../budgeter/index.js';
import { manualClock, request, tempDir, testConfig } from './helpers.js';

const ok = (o: ReserveOutcome): void => assert.equal(o.ok, true, JSON.stringify(o));

test('a key scope spans sessions: its limit refuses a call in a fresh session, naming the key scope', (t) => {
  const dbPath = join(tempDir(t), 'budget.sqlite');
  const config = testConfig({
    limits: { key: { by_id: { 'team-a': { max_tokens: 320 } } }, session: { default: { max_tokens: 10_000 } } },
  });
  const b = Budgeter.open({ dbPath, config, clock: manualClock().now });
  t.after(() => b.close());
  ok(b.reserve(request('R1', { session_id: 'S1', budget_scope: 'team-a' })));
  ok(b.reserve(request('R2', { session_id: 'S2', budget_scope: 'team-a' })));
  const third = b.reserve(request('R3', { session_id: 'S3', budget_scope: 'team-a' }));
  assert.equal(third.ok, false);
  if (third.ok) return;
  assert.equal(third.code, 'BUDGET_EXHAUSTED');
  assert.deepEqual(
    third.violations.map((v) => [v.scope, v.scope_id, v.used]),
    [['key', 'team-a', 300]],
  );
  assert.match(third.message, /key team-a max_tokens 320/);
  // Another key, or none, is not charged to team-a.
  ok(b.reserve(request('R4', { session_id: 'S3', budget_scope: 'team-b' })));
  ok(b.reserve(request('R5', { session_id: 'S3' })));
  // Settling a key's call for less frees room in the key scope (the scope is read back from the reservation).
  b.settle({ request_id: 'R1', usage: { input_tokens: 10, output_tokens: 10 } });
  ok(b.reserve(request('R3', { session_id: 'S3', budget_scope: 'team-a' })));
  const key = b.status().scopes.find((s) => s.scope === 'key' && s.scope_id === 'team-a');
  assert.ok(key, JSON.stringify(b.status().scopes));
  // The same request id with another budget scope is a different call.
  assert.throws(() => b.reserve(request('R2', { session_id: 'S2', budget_scope: 'team-b' })), /R2/);
  assert.throws(() => b.reserve(request('R9', { budget_scope: 'has space' })), /budget_scope/);
});

test('a version 1 database is migrated by its first writer; its reservations settle as before', (t) => {
  const dbPath = join(tempDir(t), 'budget.sqlite');
  const config = testConfig({ limits: { session: { default: { max_tokens: 1000 } } } });
  const first = Budgeter.open({ dbPath, config, clock: manualClock().now });
  ok(first.reserve(request('OLD')));
  first.close();
  // Made into what version 1 wrote: no budget_scope column, format_version 1.
  const db = new Database(dbPath);
  db.exec('ALTER TABLE reservations DROP COLUMN budget_scope');
  db.prepare("UPDATE budget_meta SET value = '1' WHERE key = 'format_version'").run();
  db.close();
  const reader = Budgeter.open({ dbPath, config, readonly: true });
  assert.equal(reader.status().pending_reservations, 1, 'a read-only opener reads version 1 as it is');
  reader.close();
  const writer = Budgeter.open({ dbPath, config, clock: manualClock().now });
  t.after(() => writer.close());
  ok(writer.reserve(request('OLD')));
  writer.settle({ request_id: 'OLD', usage: { input_tokens: 1, output_tokens: 1 } });
  const check = new Database(dbPath, { readonly: true });
  t.after(() => check.close());
  assert.equal(check.prepare("SELECT value FROM budget_meta WHERE key = 'format_version'").pluck().get(), '4');
  assert.equal(check.prepare("SELECT budget_scope FROM reservations WHERE request_id = 'OLD'").pluck().get(), '');
});
