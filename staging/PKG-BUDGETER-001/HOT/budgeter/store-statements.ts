import type Database from 'better-sqlite3';
import type { ReservationRow, ScopeKey, TotalsRow } from './store.js';

/** Whether the file keeps open requests in their own table (version 3 on); an older one is read as it is. */
function hasOpenRequests(db: Database.Database): boolean {
  return db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'open_requests'").pluck().get() !== 0;
}

export function hasBudgetScope(db: Database.Database): boolean {
  return (db.prepare('PRAGMA table_info(reservations)').all() as { name: string }[]).some(
    (c) => c.name === 'budget_scope',
  );
}

/**
 * The hot reads return one JSON array (json_array, parsed here) made into an object of a fixed shape: the driver
 * hands each value of a row to JavaScript through a call of its own (~1,200 instructions a value, measured with
 * callgrind: a reservation's 21 read as a row 36K, as one JSON text 23K), and builds a row object property by
 * property at several times that.
 */
const RESERVATION_COLUMNS = [
  'request_id',
  'session_id',
  'work_order_id',
  'agent_id',
  'budget_scope',
  'model',
  'params_key',
  'state',
  'reserved_tokens',
  'reserved_cost',
  'charged_tokens',
  'charged_cost',
  'actual_tokens',
  'actual_cost',
  'usage',
  'usage_key',
  'over_budget',
  'created_at',
  'finished_at',
  'allocation_entry_id',
  'settlement_entry_id',
] as const;

export function reservationOf(r: unknown[]): ReservationRow {
  return {
    request_id: r[0] as string,
    session_id: r[1] as string,
    work_order_id: r[2] as string,
    agent_id: r[3] as string,
    budget_scope: r[4] as string,
    model: r[5] as string,
    params_key: r[6] as string,
    state: r[7] as ReservationRow['state'],
    reserved_tokens: r[8] as number,
    reserved_cost: r[9] as number | null,
    charged_tokens: r[10] as number | null,
    charged_cost: r[11] as number | null,
    actual_tokens: r[12] as number | null,
    actual_cost: r[13] as number | null,
    usage: r[14] as string | null,
    usage_key: r[15] as string | null,
    over_budget: r[16] as number,
    created_at: r[17] as string,
    finished_at: r[18] as string | null,
    allocation_entry_id: r[19] as string | null,
    settlement_entry_id: r[20] as string | null,
  };
}

/** A totals row read as [reserved_tokens, reserved_cost, settled_tokens, settled_cost, requests, unknown_cost_requests]. */
export function totalsOf(key: ScopeKey, r: unknown[]): TotalsRow {
  return {
    scope: key.scope,
    kind: key.kind,
    session_id: key.session_id,
    work_order_id: key.work_order_id,
    agent_id: key.agent_id,
    reserved_tokens: r[0] as number,
    reserved_cost: r[1] as number,
    settled_tokens: r[2] as number,
    settled_cost: r[3] as number,
    requests: r[4] as number,
    unknown_cost_requests: r[5] as number,
  };
}

/** Whether rate windows are kept in their scope's row (version 4 on); an older file is read as it is. */
export function hasMergedWindows(db: Database.Database): boolean {
  return db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'scope_rows'").pluck().get() !== 0;
}

export function budgetStatements(db: Database.Database) {
  const merged = hasMergedWindows(db);
  // A version 1 file (read-only openers read it as it is) has no budget_scope column: it reads as ''.
  const columns = RESERVATION_COLUMNS.map((c) => (c === 'budget_scope' && !hasBudgetScope(db) ? "''" : c)).join(', ');
  return {
    getReservation: db.prepare(`SELECT json_array(${columns}) FROM reservations WHERE request_id = ?`).pluck(),
    // A step's reads of scope rows are step-rows.ts's; these read an older file opened read-only.
    getTotals: db
      .prepare(
        `SELECT reserved_tokens, reserved_cost, settled_tokens, settled_cost, requests, unknown_cost_requests
         FROM ${merged ? 'scope_rows' : 'scope_totals'} WHERE scope = ?`,
      )
      .raw(),
    setAllocationEntry: db.prepare('UPDATE reservations SET allocation_entry_id = ? WHERE request_id = ?'),
    setSettlementEntry: db.prepare('UPDATE reservations SET settlement_entry_id = ? WHERE request_id = ?'),
    // Each scope's latest period (a limit that resets has a row per period; its key sorts after the lifetime one).
    sessionTotals: db.prepare(
      `SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY kind, work_order_id, agent_id ORDER BY scope DESC) AS latest
       FROM scope_totals WHERE session_id = ?) WHERE latest = 1
       ORDER BY kind = 'agent', kind = 'work_order', work_order_id, agent_id`,
    ),
    // Every session's own scope, then every key's (a key spans sessions).
    sessionList: db.prepare(
      `SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY kind, session_id, agent_id ORDER BY scope DESC) AS latest
       FROM scope_totals WHERE kind IN ('session', 'key')) WHERE latest = 1
       ORDER BY kind = 'key', session_id, agent_id LIMIT ?`,
    ),
    ...openStatements(db),
    getWindow: db
      .prepare(
        merged
          ? 'SELECT window_start, window_requests, window_tokens FROM scope_rows WHERE scope = ? AND window_start IS NOT NULL'
          : 'SELECT window_start, requests, tokens FROM rate_windows WHERE scope = ?',
      )
      .raw(),
  };
}

/** The reads of open requests: pending reservations and kept records (see store-layout.ts OPEN_DDL). */
function openStatements(db: Database.Database) {
  if (!hasOpenRequests(db)) {
    // An older file opened read-only (status): pending reservations by their state, kept records in their table.
    return {
      pendingCount: db.prepare(`SELECT COUNT(*) FROM reservations WHERE state = 'reserved' AND session_id = ?`).pluck(),
      pendingTotal: db.prepare(`SELECT COUNT(*) FROM reservations WHERE state = 'reserved'`).pluck(),
      stalePending: db
        .prepare(
          `SELECT request_id FROM reservations WHERE state = 'reserved' AND created_at <= ? ORDER BY created_at LIMIT ?`,
        )
        .pluck(),
      outboxDue: db.prepare(
        'SELECT request_id, records FROM record_outbox WHERE finished_at <= ? ORDER BY finished_at, request_id LIMIT ?',
      ),
    };
  }
  return {
    pendingCount: db
      .prepare(
        `SELECT COUNT(*) FROM open_requests o JOIN reservations r ON r.request_id = o.request_id
         WHERE o.records IS NULL AND r.session_id = ?`,
      )
      .pluck(),
    pendingTotal: db.prepare('SELECT COUNT(*) FROM open_requests WHERE records IS NULL').pluck(),
    stalePending: db
      .prepare('SELECT request_id FROM open_requests WHERE records IS NULL AND since <= ? ORDER BY since LIMIT ?')
      .pluck(),
    outboxDue: db.prepare(
      `SELECT request_id, records FROM open_requests WHERE records IS NOT NULL AND since <= ?
       ORDER BY since, request_id LIMIT ?`,
    ),
  };
}

/** What only a writer runs: prepared on its first write, when the file is of the current version. */
export function writeStatements(db: Database.Database) {
  return {
    insertReservation: db.prepare(`INSERT INTO reservations (request_id, session_id, work_order_id, agent_id,
      budget_scope, model, params_key, state, reserved_tokens, reserved_cost, over_budget, created_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, 'reserved', ?, ?, ?, ?)`),
    finishReservation:
      db.prepare(`UPDATE reservations SET state = ?, charged_tokens = ?, charged_cost = ?, actual_tokens = ?,
      actual_cost = ?, usage = ?, usage_key = ?, over_budget = ?, finished_at = ? WHERE request_id = ? AND state = 'reserved'`),
    putOutbox: db.prepare(
      'INSERT INTO open_requests (request_id, since, records) VALUES (?, ?, ?) ON CONFLICT (request_id) DO NOTHING',
    ),
    dropOutbox: db.prepare('DELETE FROM open_requests WHERE request_id = ? AND records IS NOT NULL'),
    // A new row holds only the window (counted 0) until a step adds to its totals.
    putWindow: db.prepare(`INSERT INTO scope_rows (scope, kind, session_id, work_order_id, agent_id, counted,
      window_start, window_requests, window_tokens) VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?)
      ON CONFLICT (scope) DO UPDATE SET window_start = excluded.window_start, window_requests = excluded.window_requests,
        window_tokens = excluded.window_tokens`),
  };
}
