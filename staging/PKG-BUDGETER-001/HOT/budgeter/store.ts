import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { CpError, show } from '#kernel/errors.js';
import { envError } from '#kernel/env-errors.js';
import { type AppendInput, commitCount } from '#kernel/ledger/index.js';
import type { ScopeKind } from './config.js';
import { type OutboxRow, outboxRow } from './kept-records.js';
import {
  addTotalsStatement,
  budgetStatements,
  hasBudgetScope,
  reservationOf,
  totalsOf,
  writeStatements,
} from './store-statements.js';

export const BUDGET_DB_FORMAT = 'cplane-budget';
export const BUDGET_DB_VERSION = '4';

/**
 * The requests still open in the budget: a reservation pending (`records` null, `since` its created_at), or a
 * finished step's records whose caller appends them to the ledger after the transaction commits (the router batches
 * them with its EXCHANGE), kept here in the same transaction until the caller reports them appended (`since` the
 * step's finished_at), so a process that dies in between leaves them to be delivered (reconcile.ts), not lost.
 *
 * One small table for both, keyed by request id: a settlement turns the request's pending row into its kept row, one
 * b-tree page written where a partial index on reservations and a table of its own wrote two, and a reservation adds
 * one row here instead of one index entry. Triggers open and close a reservation's row inside the statement that
 * changes the reservation (a statement of its own costs a step more than the row). It holds only the calls in flight
 * (and what a crash left), so the orphan and delivery passes scan it; no index to keep on the hot path.
 * `record_outbox` is its kept rows, as a view.
 */
const OPEN_DDL = `
CREATE TABLE IF NOT EXISTS open_requests (
  request_id TEXT PRIMARY KEY,
  since TEXT NOT NULL,
  records TEXT
) STRICT, WITHOUT ROWID;
CREATE VIEW IF NOT EXISTS record_outbox AS
  SELECT request_id, since AS finished_at, records FROM open_requests WHERE records IS NOT NULL;
CREATE TRIGGER IF NOT EXISTS reservation_opens AFTER INSERT ON reservations WHEN new.state = 'reserved'
BEGIN
  INSERT INTO open_requests (request_id, since, records) VALUES (new.request_id, new.created_at, NULL);
END;
CREATE TRIGGER IF NOT EXISTS reservation_closes AFTER UPDATE OF state ON reservations
  WHEN old.state = 'reserved' AND new.state <> 'reserved'
BEGIN
  DELETE FROM open_requests WHERE request_id = new.request_id AND records IS NULL;
END;
`;

/**
 * A scope's rate window (and a count of calls in flight, under its own key: rate.ts inFlightKey) is kept in the row
 * of its totals: a step that charges both rewrites one row, one b-tree page, where a table of windows wrote a second.
 * `counted` is 0 for a row that holds only a window (a count in flight, or the window of a scope whose totals are
 * kept per period): such a row is no scope's totals. `scope_totals` is the counted rows with their totals, as a view
 * (what status and a copy to PostgreSQL read, as they read the table of totals before).
 */
const TOTALS_COLUMNS = `scope, kind, session_id, work_order_id, agent_id, reserved_tokens, reserved_cost, settled_tokens,
  settled_cost, requests, unknown_cost_requests`;
const SCOPE_DDL = `
CREATE TABLE IF NOT EXISTS scope_rows (
  scope TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  session_id TEXT NOT NULL,
  work_order_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  reserved_tokens INTEGER NOT NULL DEFAULT 0,
  reserved_cost INTEGER NOT NULL DEFAULT 0,
  settled_tokens INTEGER NOT NULL DEFAULT 0,
  settled_cost INTEGER NOT NULL DEFAULT 0,
  requests INTEGER NOT NULL DEFAULT 0,
  unknown_cost_requests INTEGER NOT NULL DEFAULT 0,
  counted INTEGER NOT NULL DEFAULT 1,
  window_start INTEGER,
  window_requests INTEGER,
  window_tokens INTEGER
) STRICT, WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS scope_rows_session ON scope_rows (session_id, kind);
CREATE VIEW IF NOT EXISTS scope_totals AS SELECT ${TOTALS_COLUMNS} FROM scope_rows WHERE counted = 1;
`;

// This is on the router's hot path: WITHOUT ROWID keeps each table one b-tree, and scopes are found by one text
// key (see scopeKeyOf), which SQLite looks up several times faster than a four-column key.
// '' stands for "no work order / no agent".
const DDL = `
CREATE TABLE IF NOT EXISTS budget_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS reservations (
  request_id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  work_order_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  model TEXT NOT NULL,
  params_key TEXT NOT NULL,
  budget_scope TEXT NOT NULL DEFAULT '',
  state TEXT NOT NULL CHECK (state IN ('reserved', 'settled', 'released')),
  reserved_tokens INTEGER NOT NULL,
  reserved_cost INTEGER,
  charged_tokens INTEGER,
  charged_cost INTEGER,
  actual_tokens INTEGER,
  actual_cost INTEGER,
  usage TEXT,
  usage_key TEXT,
  over_budget INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  finished_at TEXT,
  allocation_entry_id TEXT,
  settlement_entry_id TEXT
) STRICT, WITHOUT ROWID;
${SCOPE_DDL}${OPEN_DDL}`;

export interface ScopeKey {
  /** kind, session, work order and agent joined by U+001F (ids are printable ASCII, so this is unambiguous). */
  scope: string;
  kind: ScopeKind;
  session_id: string;
  work_order_id: string;
  agent_id: string;
}

/**
 * `period`: the label of the period a limit that resets counts in (periods.ts): its totals are a row of their own,
 * found by one key like any scope's, so a new period starts at zero and an old one keeps what it spent.
 */
export function scopeKeyOf(
  kind: ScopeKind,
  session_id: string,
  work_order_id: string,
  agent_id: string,
  period = '',
): ScopeKey {
  return {
    scope: `${kind}\u001f${session_id}\u001f${work_order_id}\u001f${agent_id}${period === '' ? '' : `\u001f${period}`}`,
    kind,
    session_id,
    work_order_id,
    agent_id,
  };
}

export interface ReservationRow {
  request_id: string;
  session_id: string;
  work_order_id: string;
  agent_id: string;
  /** The key's budget scope charged with the agent's ('' none). */
  budget_scope: string;
  model: string;
  params_key: string;
  state: 'reserved' | 'settled' | 'released';
  reserved_tokens: number;
  reserved_cost: number | null;
  charged_tokens: number | null;
  charged_cost: number | null;
  actual_tokens: number | null;
  actual_cost: number | null;
  usage: string | null;
  usage_key: string | null;
  over_budget: number;
  created_at: string;
  finished_at: string | null;
  allocation_entry_id: string | null;
  settlement_entry_id: string | null;
}

export interface TotalsRow extends ScopeKey {
  reserved_tokens: number;
  reserved_cost: number;
  settled_tokens: number;
  settled_cost: number;
  requests: number;
  unknown_cost_requests: number;
}

export interface TotalsDelta {
  reserved_tokens?: number;
  reserved_cost?: number;
  settled_tokens?: number;
  settled_cost?: number;
  requests?: number;
  unknown_cost_requests?: number;
}

export interface WindowRow {
  window_start: number;
  requests: number;
  tokens: number;
}

export type NewReservation = Pick<
  ReservationRow,
  | 'request_id'
  | 'session_id'
  | 'work_order_id'
  | 'agent_id'
  | 'budget_scope'
  | 'model'
  | 'params_key'
  | 'reserved_tokens'
  | 'reserved_cost'
  | 'over_budget'
  | 'created_at'
>;

export type FinishedReservation = Pick<
  ReservationRow,
  | 'request_id'
  | 'state'
  | 'charged_tokens'
  | 'charged_cost'
  | 'actual_tokens'
  | 'actual_cost'
  | 'usage'
  | 'usage_key'
  | 'over_budget'
  | 'finished_at'
>;

/**
 * All the decision logic (operations, scopes, rate) reads and writes: one transaction's view of the budget. The
 * SQLite store is one; PostgreSQL runs the same logic over a snapshot of the rows a step locked (pg/snapshot.ts).
 */
export interface BudgetState {
  getReservation(requestId: string): ReservationRow | undefined;
  insertReservation(row: NewReservation): void;
  finishReservation(row: FinishedReservation): void;
  /** Totals of each key, in the order given; a scope never charged reads as zeros. */
  totals(keys: readonly ScopeKey[]): TotalsRow[];
  /** Add the same delta to every key's totals. */
  addTotals(keys: readonly ScopeKey[], delta: TotalsDelta): void;
  window(key: ScopeKey): WindowRow | undefined;
  putWindow(key: ScopeKey, row: WindowRow): void;
}

/** The totals of a scope never charged. */
export function zeroTotals(key: ScopeKey): TotalsRow {
  return {
    ...key,
    reserved_tokens: 0,
    reserved_cost: 0,
    settled_tokens: 0,
    settled_cost: 0,
    requests: 0,
    unknown_cost_requests: 0,
  };
}

/**
 * The WAL size, in pages, at which a commit checkpoints it (SQLite's default is 1,000). A checkpoint syncs the WAL
 * and the database file, two fsyncs inside whichever call's commit crosses the mark: at ~12 pages a call (reserve
 * and settle), the default put one in every ~80 calls, and they were most of the store's time on a call's path
 * (wall clock, even at synchronous=NORMAL). Four times the pages makes that four times rarer; the pages a
 * checkpoint copies are the distinct pages written since the last, so the few hot ones (totals, windows) are copied
 * once. More would be rarer still, but every read of a call then searches a larger WAL index: at 10,000 pages the
 * budget bench's median cycle was ~8% slower. The WAL, restarted from its start after each checkpoint, stays at
 * about 16 MiB.
 */
export const BUDGET_WAL_CHECKPOINT_PAGES = 4_000;

export interface StoreOptions {
  synchronous: 'NORMAL' | 'FULL';
  busyTimeoutMs: number;
  readonly?: boolean;
}

/** The budget database: plain SQL over one better-sqlite3 connection; transactions belong to the caller. */
export class BudgetStore implements BudgetState {
  readonly db: Database.Database;
  private readonly stmts: ReturnType<typeof budgetStatements>;
  /** Prepared on first write: an older file opened read-only has neither budget_scope nor open_requests. */
  private writes: ReturnType<typeof writeStatements> | undefined;
  private readonly addByCount: (Database.Statement | undefined)[] = [];
  // Built once: better-sqlite3 builds a wrapper per db.transaction() call, which costs more than the statements.
  private readonly runInTx: Database.Transaction<(fn: () => unknown) => unknown>;
  /** Transactions committed, fsynced (synchronous=FULL) or not (NORMAL): a call's fsyncs are counted here. */
  readonly commits = commitCount();

  private constructor(
    db: Database.Database,
    private readonly durable: boolean,
  ) {
    this.db = db;
    this.stmts = budgetStatements(db);
    this.runInTx = db.transaction((fn: () => unknown) => fn());
  }

  static open(path: string, options: StoreOptions): BudgetStore {
    let db: Database.Database | undefined;
    try {
      if (!options.readonly) mkdirSync(dirname(path), { recursive: true });
      db = new Database(path, { readonly: options.readonly ?? false, fileMustExist: options.readonly ?? false });
      db.pragma(`busy_timeout = ${options.busyTimeoutMs}`);
      if (!options.readonly) {
        db.pragma('journal_mode = WAL');
        db.pragma(`wal_autocheckpoint = ${BUDGET_WAL_CHECKPOINT_PAGES}`);
        const handle = db;
        handle
          .transaction(() => {
            handle.exec(DDL);
            initialiseMeta(handle, path);
          })
          .immediate();
      } else {
        // Read-only (status, the gates): an older file is read as it is; its first writer migrates it.
        checkMeta(db, path, ['1', '2', '3']);
      }
      db.pragma(`synchronous = ${options.synchronous}`);
      return new BudgetStore(db, options.synchronous === 'FULL');
    } catch (cause) {
      db?.close();
      if (cause instanceof CpError) throw cause;
      const env = envError(cause, path, 'opening the budget database');
      if (env && env.code !== 'ERR_DB_DAMAGED') throw env;
      throw new CpError('ERR_BUDGET_DB', `cannot open budget database ${show(path)}: ${(cause as Error).message}`, {
        hint: 'check the path and permissions; the file must be a cplane budget database',
        details: { path },
        cause,
      });
    }
  }

  /** Run `fn` in a BEGIN IMMEDIATE transaction: the write lock is taken before anything is read. */
  immediate<T>(fn: () => T): T {
    const value = this.runInTx.immediate(fn) as T;
    if (!this.db.inTransaction) {
      if (this.durable) this.commits.durable += 1;
      else this.commits.lazy += 1;
    }
    return value;
  }

  getReservation(requestId: string): ReservationRow | undefined {
    const row = this.stmts.getReservation.get(requestId) as unknown[] | undefined;
    return row === undefined ? undefined : reservationOf(row);
  }

  insertReservation(row: NewReservation): void {
    this.writeStatements().insertReservation.run(
      row.request_id,
      row.session_id,
      row.work_order_id,
      row.agent_id,
      row.budget_scope,
      row.model,
      row.params_key,
      row.reserved_tokens,
      row.reserved_cost,
      row.over_budget,
      row.created_at,
    );
  }

  finishReservation(row: FinishedReservation): void {
    this.writeStatements().finishReservation.run(
      row.state,
      row.charged_tokens,
      row.charged_cost,
      row.actual_tokens,
      row.actual_cost,
      row.usage,
      row.usage_key,
      row.over_budget,
      row.finished_at,
      row.request_id,
    );
  }

  private writeStatements(): ReturnType<typeof writeStatements> {
    this.writes ??= writeStatements(this.db);
    return this.writes;
  }

  setEntryId(which: 'allocation' | 'settlement', requestId: string, entryId: string): void {
    (which === 'allocation' ? this.stmts.setAllocationEntry : this.stmts.setSettlementEntry).run(entryId, requestId);
  }

  /** Totals of each key, in the order given; a scope never charged reads as zeros. */
  totals(keys: readonly ScopeKey[]): TotalsRow[] {
    return keys.map((key) => {
      const row = this.stmts.getTotals.get(key.scope) as unknown[] | undefined;
      return row === undefined ? zeroTotals(key) : totalsOf(key, row);
    });
  }

  /** Add the same delta to every key's totals. */
  addTotals(keys: readonly ScopeKey[], delta: TotalsDelta): void {
    if (keys.length === 0) return;
    const rt = delta.reserved_tokens ?? 0;
    const rc = delta.reserved_cost ?? 0;
    const st = delta.settled_tokens ?? 0;
    const sc = delta.settled_cost ?? 0;
    const rq = delta.requests ?? 0;
    const uc = delta.unknown_cost_requests ?? 0;
    const params: (string | number)[] = [];
    for (const k of keys)
      params.push(k.scope, k.kind, k.session_id, k.work_order_id, k.agent_id, rt, rc, st, sc, rq, uc);
    this.addStatement(keys.length).run(params);
  }

  private addStatement(n: number): Database.Statement {
    let made = this.addByCount[n];
    if (made === undefined) {
      made = addTotalsStatement(this.db, n);
      this.addByCount[n] = made;
    }
    return made;
  }

  sessionTotals(sessionId: string): TotalsRow[] {
    return this.stmts.sessionTotals.all(sessionId) as TotalsRow[];
  }

  sessions(limit: number): TotalsRow[] {
    return this.stmts.sessionList.all(limit) as TotalsRow[];
  }

  /** Pending reservations of one session, or of every session when null. */
  pendingCount(sessionId: string | null): number {
    return (sessionId === null ? this.stmts.pendingTotal.get() : this.stmts.pendingCount.get(sessionId)) as number;
  }

  /** Reservations still pending that were made at or before `cutoffIso`, oldest first. */
  stalePending(cutoffIso: string, limit: number): string[] {
    return this.stmts.stalePending.all(cutoffIso, limit) as string[];
  }

  window(key: ScopeKey): WindowRow | undefined {
    const row = this.stmts.getWindow.get(key.scope) as [number, number, number] | undefined;
    return row === undefined ? undefined : { window_start: row[0], requests: row[1], tokens: row[2] };
  }

  /** Keeps a step's records until their caller reports them in the ledger (see OPEN_DDL). */
  putOutbox(requestId: string, finishedAt: string, records: readonly AppendInput[]): void {
    this.writeStatements().putOutbox.run(requestId, finishedAt, JSON.stringify(records));
  }

  dropOutbox(requestIds: readonly string[]): void {
    const drop = this.writeStatements().dropOutbox;
    for (const id of requestIds) drop.run(id);
  }

  /** Records kept since at or before `cutoffIso`, oldest first: their caller never reported them appended. */
  outboxDue(cutoffIso: string, limit: number): OutboxRow[] {
    return (this.stmts.outboxDue.all(cutoffIso, limit) as { request_id: string; records: string }[]).map(outboxRow);
  }

  putWindow(key: ScopeKey, row: WindowRow): void {
    this.writeStatements().putWindow.run(
      key.scope,
      key.kind,
      key.session_id,
      key.work_order_id,
      key.agent_id,
      row.window_start,
      row.requests,
      row.tokens,
    );
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}

function initialiseMeta(db: Database.Database, path: string): void {
  db.prepare('INSERT OR IGNORE INTO budget_meta (key, value) VALUES (?, ?), (?, ?)').run(
    'format',
    BUDGET_DB_FORMAT,
    'format_version',
    BUDGET_DB_VERSION,
  );
  migrate(db);
  checkMeta(db, path);
}

/**
 * Each older version's layout, brought to the next one in the opener's transaction, so every process sees a file of
 * one version. Version 1 had no key scopes: its reservations gain an empty `budget_scope`.
 */
function migrate(db: Database.Database): void {
  const version = () =>
    (db.prepare("SELECT value FROM budget_meta WHERE key = 'format_version'").get() as { value: string } | undefined)
      ?.value;
  const setVersion = (to: string) =>
    db.prepare("UPDATE budget_meta SET value = ? WHERE key = 'format_version'").run(to);
  if (version() === '1') {
    if (!hasBudgetScope(db)) db.exec("ALTER TABLE reservations ADD COLUMN budget_scope TEXT NOT NULL DEFAULT ''");
    setVersion('2');
  }
  if (version() === '2') {
    openRequestsFromVersion2(db);
    setVersion('3');
  }
  if (version() === '3') {
    mergeWindows(db);
    setVersion('4');
  }
}

/**
 * Version 2 found pending reservations by a partial index on reservations and kept records in a table of their
 * own: both move into open_requests (OPEN_DDL).
 */
function openRequestsFromVersion2(db: Database.Database): void {
  db.exec(`INSERT INTO open_requests (request_id, since, records)
    SELECT request_id, created_at, NULL FROM reservations WHERE state = 'reserved' ON CONFLICT (request_id) DO NOTHING`);
  const outboxTable = db
    .prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'record_outbox'")
    .pluck()
    .get();
  if (outboxTable !== 0) {
    db.exec(`INSERT INTO open_requests (request_id, since, records)
      SELECT request_id, finished_at, records FROM record_outbox WHERE true ON CONFLICT (request_id) DO NOTHING;
      DROP TABLE record_outbox;`);
  }
  db.exec(`DROP INDEX IF EXISTS reservations_pending;${OPEN_DDL}`);
}

/**
 * Version 3 kept totals in the table scope_totals and rate windows in a table of their own: both move into
 * scope_rows (SCOPE_DDL), windows into their scope's row, and scope_totals becomes its view.
 */
function mergeWindows(db: Database.Database): void {
  const isTable = (name: string) =>
    db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?").pluck().get(name) !== 0;
  if (isTable('scope_totals')) {
    db.exec(`INSERT INTO scope_rows (${TOTALS_COLUMNS}) SELECT ${TOTALS_COLUMNS} FROM scope_totals WHERE true
      ON CONFLICT (scope) DO NOTHING;
      DROP TABLE scope_totals;${SCOPE_DDL}`);
  }
  if (!isTable('rate_windows')) return;
  const put = writeStatements(db).putWindow;
  const rows = db.prepare('SELECT scope, window_start, requests, tokens FROM rate_windows').raw().all() as [
    string,
    number,
    number,
    number,
  ][];
  // The key names its kind, session, work order and agent (scopeKeyOf), which a scope's row holds as columns.
  for (const [scope, start, requests, tokens] of rows) {
    const [kind = '', session = '', workOrder = '', agent = ''] = scope.split('\u001f');
    put.run(scope, kind, session, workOrder, agent, start, requests, tokens);
  }
  db.exec('DROP TABLE rate_windows');
}

function checkMeta(db: Database.Database, path: string, alsoReadable: readonly string[] = []): void {
  const rows = db.prepare('SELECT key, value FROM budget_meta').all() as { key: string; value: string }[];
  const meta = new Map(rows.map((r) => [r.key, r.value]));
  const version = meta.get('format_version') ?? '';
  if (meta.get('format') !== BUDGET_DB_FORMAT || (version !== BUDGET_DB_VERSION && !alsoReadable.includes(version))) {
    throw new CpError('ERR_BUDGET_DB', `${show(path)} is not a version ${BUDGET_DB_VERSION} cplane budget database`, {
      hint: 'point the budgeter at HOT/registries/budget.sqlite of a cplane root',
      details: { path, format: meta.get('format') ?? null },
    });
  }
}
