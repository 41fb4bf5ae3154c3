import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { canonicalJson } from '../../../kernel/canonical.js';
import {
  compileQuery,
  computeEntryHash,
  GENESIS_HASH,
  HISTORY_SQL,
  importLedger,
  listOrphans,
  ORPHANS_SQL,
  type Ledger,
  type LedgerEntry,
  type LedgerQuery,
} from '../../../kernel/ledger/index.js';
import { tempDir, tempLedger } from './helpers.js';

function plan(ledger: Ledger, sql: string, params: unknown[]): string[] {
  return (ledger.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map(
    (row) => row.detail,
  );
}

/** A small conversation: sessions, agents, work orders, and DISPATCH/EXCHANGE pairs. */
function conversation(ledger: Ledger): LedgerEntry[] {
  const out: LedgerEntry[] = [];
  for (let turn = 0; turn < 4; turn += 1) {
    for (const session of ['S-A', 'S-B']) {
      const meta = { contract_id: 'C-1', agent_id: `agent-${session}`, session_id: session };
      const dispatch = ledger.append({
        event_type: 'DISPATCH',
        submission_id: 'C-1',
        decision: 'DISPATCHED',
        reason: 'Dispatching to mock/m1',
        metadata: meta,
      });
      const exchange = ledger.append({
        event_type: 'EXCHANGE',
        submission_id: 'C-1',
        decision: 'SUCCESS',
        reason: 'ok',
        metadata: {
          ...meta,
          work_order_id: `WO-${turn % 2}`,
          prompt: `q${turn}`,
          response: `a${turn}`,
          dispatch_entry_id: dispatch.id,
        },
      });
      out.push(dispatch, exchange);
    }
  }
  return out;
}

const INDEXED_FORMS: [string, LedgerQuery][] = [
  ['event type', { event_type: 'EXCHANGE' }],
  ['submission id', { submission_id: 'C-1' }],
  ['session', { session_id: 'S-A' }],
  ['agent', { agent_id: 'agent-S-A' }],
  ['work order', { work_order_id: 'WO-1' }],
  ['time range', { since: '2026-01-01T00:00:03Z', until: '2026-01-01T00:00:09Z' }],
  ['since only', { since: '2026-01-01T00:00:03Z' }],
  ['session + event type, newest first with limit', { session_id: 'S-B', event_type: 'EXCHANGE', limit: 2 }],
  ['event type oldest first', { event_type: 'DISPATCH', order: 'oldest', limit: 3 }],
];

test('every filtered query form is served by an index (no full scan)', (t) => {
  const ledger = tempLedger(t);
  conversation(ledger);
  for (const [name, query] of INDEXED_FORMS) {
    const { sql, params } = ledger.compile(query);
    const details = plan(ledger, sql, params);
    assert.ok(
      details.some((d) =>
        /^SEARCH entries USING ((COVERING )?INDEX|INTEGER PRIMARY KEY \(rowid>\? AND rowid<\?\))/.test(d),
      ),
      `${name}: ${details.join(' | ')}`,
    );
    assert.ok(!details.some((d) => /^SCAN entries\b/.test(d)), `${name} scans: ${details.join(' | ')}`);
  }
  assert.ok(
    plan(ledger, 'SELECT * FROM entries WHERE id = ?', ['LED-00000000']).some((d) =>
      /USING INDEX sqlite_autoindex_entries/.test(d),
    ),
  );
  const history = plan(ledger, HISTORY_SQL, ['S-A']);
  assert.ok(
    history.some((d) => /USING INDEX entries_session/.test(d)) && !history.some((d) => /TEMP B-TREE/.test(d)),
    history.join(' | '),
  );
  const orphans = plan(ledger, ORPHANS_SQL, ['2026-01-01T00:00:00.000Z']);
  assert.ok(
    orphans.some((d) => /SEARCH d USING INDEX entries_event_type/.test(d)),
    orphans.join(' | '),
  );
  assert.ok(
    orphans.some((d) => /SEARCH e USING INDEX entries_dispatch_link/.test(d)),
    orphans.join(' | '),
  );
});

test('the unfiltered newest-first query walks the primary key backwards and stops at the limit', (t) => {
  const ledger = tempLedger(t);
  const { sql, params } = compileQuery({ limit: 5 });
  const details = plan(ledger, sql, params);
  assert.deepEqual(details, ['SCAN entries'], 'rowid order, no sort: LIMIT stops the walk after 5 rows');
});

test('queries return the matching entries, newest first by default, limited', (t) => {
  const ledger = tempLedger(t);
  const all = conversation(ledger);
  const ids = (entries: LedgerEntry[]): string[] => entries.map((e) => e.id);
  const sessionA = all.filter((e) => e.metadata.session_id === 'S-A');
  assert.deepEqual(ids(ledger.query({ session_id: 'S-A' })), ids([...sessionA].reverse()));
  assert.deepEqual(ids(ledger.query({ session_id: 'S-A', order: 'oldest', limit: 3 })), ids(sessionA.slice(0, 3)));
  assert.deepEqual(
    ids(ledger.query({ event_type: 'EXCHANGE', session_id: 'S-B', limit: 2 })),
    ids(
      all
        .filter((e) => e.event_type === 'EXCHANGE' && e.metadata.session_id === 'S-B')
        .reverse()
        .slice(0, 2),
    ),
  );
  assert.deepEqual(
    ids(ledger.query({ work_order_id: 'WO-1' })),
    ids(all.filter((e) => e.metadata.work_order_id === 'WO-1').reverse()),
  );
  assert.deepEqual(
    ids(ledger.query({ agent_id: 'agent-S-B', event_type: 'DISPATCH' })),
    ids(all.filter((e) => e.metadata.agent_id === 'agent-S-B' && e.event_type === 'DISPATCH').reverse()),
  );
  assert.deepEqual(
    ids(ledger.query({ since: all[2]?.timestamp as string, until: all[4]?.timestamp as string, order: 'oldest' })),
    ids(all.slice(2, 5)),
  );
  assert.deepEqual(ids(ledger.query({ limit: 2 })), ids(all.slice(-2).reverse()));
  assert.equal(ledger.query({ submission_id: 'nobody' }).length, 0);
});

test('malformed queries are refused with a coded error', (t) => {
  const ledger = tempLedger(t);
  for (const bad of [
    { limit: 0 },
    { limit: 1.5 },
    { since: 'yesterday' },
    { order: 'sideways' },
    { session_id: 7 },
    { work_order_id: '' },
    { colour: 'red' },
  ]) {
    assert.throws(() => ledger.query(bad as never), { code: 'ERR_LEDGER_QUERY_INVALID' }, JSON.stringify(bad));
  }
});

test('an empty identity value is not indexed: the partial indexes skip it and history finds nothing', (t) => {
  const ledger = tempLedger(t);
  ledger.append({
    event_type: 'EXCHANGE',
    submission_id: 'C',
    decision: 'OK',
    reason: 'r',
    metadata: { session_id: '', agent_id: '', work_order_id: '', dispatch_entry_id: '' },
  });
  ledger.append({
    event_type: 'EXCHANGE',
    submission_id: 'C',
    decision: 'OK',
    reason: 'r',
    metadata: { session_id: 'S', agent_id: 'A', work_order_id: 'W', dispatch_entry_id: 'LED-00000001' },
  });
  for (const index of ['entries_session', 'entries_agent', 'entries_work_order', 'entries_dispatch_link']) {
    const column = index === 'entries_dispatch_link' ? 'dispatch_entry_id' : `${index.slice('entries_'.length)}_id`;
    assert.equal(
      ledger.db.prepare(`SELECT count(*) FROM entries INDEXED BY ${index} WHERE ${column} IS NOT NULL`).pluck().get(),
      1,
      index,
    );
  }
  assert.deepEqual(ledger.history(''), []);
  assert.equal(ledger.query({ session_id: 'S' }).length, 1);
});

const BASE = Date.parse('2026-01-01T00:00:00Z');
const at = (second: number): string => new Date(BASE + second * 1000).toISOString();

/** Every since/until pair over times before, on, between and after the entries' own: each must select exactly what a scan would. */
function assertTimeRangesExact(ledger: Ledger, all: LedgerEntry[]): void {
  const times = [undefined, ...[0, 3, 4, 5, 6, 9, 10, 12, 15, 20, 25].map(at)];
  for (const since of times) {
    for (const until of times) {
      if (since === undefined && until === undefined) continue;
      const expected = all
        .filter((e) => (since === undefined || e.timestamp >= since) && (until === undefined || e.timestamp <= until))
        .map((e) => e.id);
      const query = { ...(since ? { since } : {}), ...(until ? { until } : {}), order: 'oldest' as const };
      assert.deepEqual(
        ledger.query(query).map((e) => e.id),
        expected,
        JSON.stringify(query),
      );
    }
  }
}

test('timestamps never go backwards along the chain, so a time range is a seq range, found exactly', (t) => {
  const seconds = [5, 3, 3, 9, 1, 12, 12, 20];
  let tick = 0;
  const ledger = tempLedger(t, { clock: () => BASE + 1000 * (seconds[tick++] as number) });
  const append = (): LedgerEntry =>
    ledger.append({ event_type: 'TEST', submission_id: 'S', decision: 'OK', reason: 'r' });
  const all = [
    append(),
    append(),
    ...ledger.appendBatch(
      [1, 2, 3].map(() => ({ event_type: 'TEST', submission_id: 'S', decision: 'OK', reason: 'r' })),
    ),
    append(),
    append(),
    append(),
  ];
  assert.deepEqual(
    all.map((e) => e.timestamp),
    [5, 5, 5, 9, 9, 12, 12, 20].map(at),
    "a clock that steps back gives the head's time",
  );
  assertTimeRangesExact(ledger, all);
  assert.equal(
    ledger.db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'entries_timestamp'").pluck().get(),
    0,
    'no timestamp index to write',
  );
});

test('a chain imported with timestamps out of order gets a timestamp index, and time ranges stay exact', (t) => {
  let previous = GENESIS_HASH;
  const entries = [5, 3, 9, 4, 12].map((second, index) => {
    const body = {
      id: `LED-0000000${index + 1}`,
      event_type: 'TEST',
      submission_id: 'S',
      decision: 'OK',
      reason: 'r',
      metadata: {},
      timestamp: at(second),
      previous_hash: previous,
    };
    const entry = { ...body, entry_hash: computeEntryHash(body) };
    previous = entry.entry_hash;
    return entry;
  });
  const file = join(tempDir(t), 'skewed.jsonl');
  writeFileSync(file, entries.map((e) => `${canonicalJson(e)}\n`).join(''));
  const ledger = tempLedger(t);
  importLedger(ledger, file);
  assertTimeRangesExact(ledger, entries);
  const { sql, params } = ledger.compile({ since: at(4), until: at(9) });
  assert.ok(
    plan(ledger, sql, params).some((d) => /USING INDEX entries_timestamp/.test(d)),
    sql,
  );
});

test("history(session) is that session's EXCHANGE records in order", (t) => {
  const ledger = tempLedger(t);
  const all = conversation(ledger);
  const history = ledger.history('S-B');
  assert.deepEqual(
    history.map((e) => e.metadata.prompt),
    ['q0', 'q1', 'q2', 'q3'],
  );
  assert.deepEqual(
    history.map((e) => e.id),
    all.filter((e) => e.event_type === 'EXCHANGE' && e.metadata.session_id === 'S-B').map((e) => e.id),
  );
  assert.deepEqual(ledger.history('S-none'), []);
});

test('orphans: DISPATCH markers with no linking EXCHANGE after the timeout', (t) => {
  let now = Date.parse('2026-01-01T00:00:00Z');
  const ledger = tempLedger(t, { clock: () => now });
  const meta = { contract_id: 'C-1', agent_id: 'A', session_id: 'S' };
  const dispatch = (): LedgerEntry =>
    ledger.append({
      event_type: 'DISPATCH',
      submission_id: 'C-1',
      decision: 'DISPATCHED',
      reason: 'r',
      metadata: meta,
    });
  const answered = dispatch();
  ledger.append({
    event_type: 'EXCHANGE',
    submission_id: 'C-1',
    decision: 'ERROR',
    reason: 'provider failed',
    metadata: { ...meta, outcome: 'error', dispatch_entry_id: answered.id },
  });
  const lost = dispatch();
  // A non-EXCHANGE entry that mentions the dispatch does not complete it.
  ledger.append({
    event_type: 'NOTE',
    submission_id: 'C-1',
    decision: 'OK',
    reason: 'r',
    metadata: { dispatch_entry_id: lost.id },
  });
  now += 60_000;
  const recent = dispatch();
  const at = now + 1000;
  assert.deepEqual(
    listOrphans(ledger, { timeoutMs: 30_000, now: at }).map((e) => e.id),
    [lost.id],
  );
  assert.deepEqual(
    listOrphans(ledger, { timeoutMs: 0, now: at }).map((e) => e.id),
    [lost.id, recent.id],
  );
  assert.deepEqual(listOrphans(ledger, { timeoutMs: 120_000, now: at }), []);
  assert.ok(
    listOrphans(ledger).some((e) => e.id === lost.id),
    'defaults: 5 minutes before the wall clock',
  );
  assert.throws(() => listOrphans(ledger, { timeoutMs: -1 }), { code: 'ERR_LEDGER_QUERY_INVALID' });
  assert.throws(() => listOrphans(ledger, { now: Number.NaN }), { code: 'ERR_LEDGER_QUERY_INVALID' });
});
