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
  DENSE_KINDS,
  exchangeOfDispatch,
  listOrphans,
  ORPHANS_SQL,
  type Ledger,
  type LedgerEntry,
  type LedgerQuery,
} from '../../../kernel/ledger/index.js';
import { RARE_KIND_SQL } from '../../../kernel/ledger/kinds.js';
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
    out.push(
      ledger.append({ event_type: 'NOTE', submission_id: 'C-1', decision: 'OK', reason: `note ${turn}`, metadata: {} }),
    );
  }
  return out;
}

const INDEXED_FORMS: [string, LedgerQuery][] = [
  ['event type (a rare kind: dense ones walk the chain, see below)', { event_type: 'NOTE' }],
  ['submission id', { submission_id: 'C-1' }],
  ['session', { session_id: 'S-A' }],
  ['agent', { agent_id: 'agent-S-A' }],
  ['work order', { work_order_id: 'WO-1' }],
  ['time range', { since: '2026-01-01T00:00:03Z', until: '2026-01-01T00:00:09Z' }],
  ['since only', { since: '2026-01-01T00:00:03Z' }],
  ['session + event type, newest first with limit', { session_id: 'S-B', event_type: 'EXCHANGE', limit: 2 }],
  ['rare event type oldest first', { event_type: 'NOTE', order: 'oldest', limit: 3 }],
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
  // DISPATCH is a dense kind: read in chain order; each one's EXCHANGE is looked up through its session's index, or
  // for a DISPATCH without a session from its own position onwards.
  const orphans = plan(ledger, ORPHANS_SQL, ['2026-01-01T00:00:00.000Z']);
  assert.ok(
    orphans.some((d) => /SEARCH e USING INDEX entries_session \(session_id=\? AND seq>\?\)/.test(d)),
    orphans.join(' | '),
  );
  assert.ok(
    orphans.some((d) => /SEARCH e USING INTEGER PRIMARY KEY \(rowid>\?\)/.test(d)),
    orphans.join(' | '),
  );
  assert.ok(!orphans.some((d) => /SCAN e\b/.test(d)), orphans.join(' | '));
});

test('dense kinds are left out of the kind index; a query by a dense kind walks the chain and returns its rows', (t) => {
  const ledger = tempLedger(t);
  const all = conversation(ledger);
  for (const kind of ['BUDGET_ALLOCATED', 'BUDGET_SETTLED']) {
    all.push(ledger.append({ event_type: kind, submission_id: 'req-1', decision: 'OK', reason: 'r', metadata: {} }));
  }
  // What the index holds, read from its own b-tree: one cell per rare entry, none for a dense one.
  const cells = ledger.db
    .prepare("SELECT sum(ncell) FROM dbstat WHERE name = 'entries_rare_kind' AND pagetype = 'leaf'")
    .pluck()
    .get();
  const dense: readonly string[] = DENSE_KINDS;
  const rare = all.filter((e) => !dense.includes(e.event_type));
  assert.equal(rare.length, 4);
  assert.equal(cells, rare.length);
  assert.deepEqual(
    ledger.db
      .prepare(`SELECT event_type FROM entries INDEXED BY entries_rare_kind WHERE ${RARE_KIND_SQL} ORDER BY seq`)
      .pluck()
      .all(),
    rare.map((e) => e.event_type),
  );
  const ids = (entries: LedgerEntry[]): string[] => entries.map((e) => e.id);
  for (const kind of DENSE_KINDS) {
    const expected = all.filter((e) => e.event_type === kind);
    assert.deepEqual(ids(ledger.query({ event_type: kind })), ids([...expected].reverse()), kind);
    assert.deepEqual(ids(ledger.query({ event_type: kind, order: 'oldest', limit: 3 })), ids(expected.slice(0, 3)));
    // Alone, a dense kind walks the primary key in the query's order (no sort), stopping at the limit.
    const { sql, params } = ledger.compile({ event_type: kind, limit: 2 });
    assert.deepEqual(plan(ledger, sql, params), ['SCAN entries'], kind);
  }
  assert.deepEqual(
    ids(ledger.query({ event_type: 'DISPATCH', session_id: 'S-A', limit: 2 })),
    ids(
      all
        .filter((e) => e.event_type === 'DISPATCH' && e.metadata.session_id === 'S-A')
        .slice(-2)
        .reverse(),
    ),
  );
  assert.deepEqual(
    ids(
      ledger.query({ event_type: 'EXCHANGE', since: all[3]?.timestamp as string, until: all[8]?.timestamp as string }),
    ),
    ids(
      all
        .slice(3, 9)
        .filter((e) => e.event_type === 'EXCHANGE')
        .reverse(),
    ),
  );
  assert.deepEqual(
    ids(ledger.query({ event_type: 'NOTE' })),
    ids(rare.filter((e) => e.event_type === 'NOTE').reverse()),
  );
  assert.deepEqual(ledger.query({ event_type: 'NOTHING' }), []);
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
  for (const index of ['entries_session', 'entries_agent', 'entries_work_order']) {
    const column = `${index.slice('entries_'.length)}_id`;
    assert.equal(
      ledger.db.prepare(`SELECT count(*) FROM entries INDEXED BY ${index} WHERE ${column} IS NOT NULL`).pluck().get(),
      1,
      index,
    );
  }
  // The link has no index: its column keeps NULL for the empty value all the same.
  assert.equal(ledger.db.prepare('SELECT count(*) FROM entries WHERE dispatch_entry_id IS NOT NULL').pluck().get(), 1);
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

test("orphans: an EXCHANGE is found through its DISPATCH's session, or after a DISPATCH without one", (t) => {
  const ledger = tempLedger(t);
  const call = (session: string | undefined, answered: boolean): LedgerEntry => {
    const meta = session === undefined ? {} : { session_id: session };
    const dispatch = ledger.append({
      event_type: 'DISPATCH',
      submission_id: 'C-1',
      decision: 'DISPATCHED',
      reason: 'r',
      metadata: meta,
    });
    if (answered)
      ledger.append({
        event_type: 'EXCHANGE',
        submission_id: 'C-1',
        decision: 'SUCCESS',
        reason: 'r',
        metadata: { ...meta, dispatch_entry_id: dispatch.id },
      });
    return dispatch;
  };
  // Interleaved: calls of two sessions and sessionless ones, some answered after other calls' records.
  const a1 = call('S-1', false);
  const none1 = call(undefined, true);
  const b1 = call('S-2', true);
  const none2 = call(undefined, false);
  const a2 = call('S-1', true);
  ledger.append({
    event_type: 'EXCHANGE',
    submission_id: 'C-1',
    decision: 'SUCCESS',
    reason: 'late',
    metadata: { session_id: 'S-1', dispatch_entry_id: a1.id },
  });
  const lostA = call('S-1', false);
  const lostNone = call(undefined, false);
  // An EXCHANGE naming the DISPATCH from another session does not answer it (the chain's calls never do that).
  ledger.append({
    event_type: 'EXCHANGE',
    submission_id: 'C-1',
    decision: 'SUCCESS',
    reason: 'r',
    metadata: { session_id: 'S-9', dispatch_entry_id: lostA.id },
  });
  const far = Date.parse('2030-01-01T00:00:00Z');
  assert.deepEqual(
    listOrphans(ledger, { timeoutMs: 0, now: far }).map((e) => e.id),
    [none2.id, lostA.id, lostNone.id],
  );
  for (const answered of [a1, none1, b1, a2]) {
    const exchange = exchangeOfDispatch(ledger, answered.id);
    assert.equal(ledger.get(exchange as string)?.metadata.dispatch_entry_id, answered.id);
  }
  for (const lost of [none2, lostA, lostNone]) assert.equal(exchangeOfDispatch(ledger, lost.id), undefined);
  assert.equal(exchangeOfDispatch(ledger, 'LED-nothing'), undefined);
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
  assert.equal(exchangeOfDispatch(ledger, answered.id), ledger.query({ event_type: 'EXCHANGE' })[0]?.id);
  assert.equal(exchangeOfDispatch(ledger, lost.id), undefined);
  assert.throws(() => listOrphans(ledger, { timeoutMs: -1 }), { code: 'ERR_LEDGER_QUERY_INVALID' });
  assert.throws(() => listOrphans(ledger, { now: Number.NaN }), { code: 'ERR_LEDGER_QUERY_INVALID' });
});
