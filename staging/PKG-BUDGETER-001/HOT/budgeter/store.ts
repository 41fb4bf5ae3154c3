import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { WalCheckpointer } from '#kernel/ledger/wal-checkpointer.js';
import { CpError, show } from '#kernel/errors.js';
import { envError } from '#kernel/env-errors.js';
import { type AppendInput, commitCount } from '#kernel/ledger/index.js';
import type { ScopeKind } from './config.js';
import { type OutboxRow, outboxRow } from './kept-records.js';
import { BUDGET_DDL, checkMeta, initialiseMeta } from './store-layout.js';
import { StepRows } from './step-rows.js';
import { budgetStatements, hasMergedWindows, reservationOf, totalsOf, writeStatements } from './store-statements.js';

export { BUDGET_DB_FORMAT, BUDGET_DB_VERSION } from './store-layout.js';

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
 * and the database file, two fsyncs inside whichever call's commit crosses the mark: at ~7 pages a call (reserve
 * and settle), the default puts one in every ~140 calls, and they are most of the store's time on a call's path
 * (wall clock, even at synchronous=NORMAL). Four times the pages makes that four times rarer; the pages a
 * checkpoint copies are the distinct pages written since the last, so the few hot ones (scope rows) are copied
 * once. More would be rarer still, but every read of a call then searches a larger WAL index: at 10,000 pages the
 * budget bench's median cycle was ~8% slower. The WAL, restarted from its start after each checkpoint, stays at
 * about 16 MiB.
 */
export const BUDGET_WAL_CHECKPOINT_PAGES = 4_000;

export interface StoreOptions {
  synchronous: 'NORMAL' | 'FULL';
  busyTimeoutMs: number;
  readonly?: boolean;
  /**
   * 'background' (a server's writer: `cplane serve`): WAL checkpoints on a worker thread every CHECKPOINT_FRAMES, as
   * the ledger's (kernel/ledger/wal-checkpointer.ts), so the copy and its two fsyncs never land in a call's step.
   * 'inline' (default): SQLite's autocheckpoint at BUDGET_WAL_CHECKPOINT_PAGES, inside the commit that crosses it.
   */
  walCheckpoints?: 'inline' | 'background';
  /** WAL frames between background checkpoints (default CHECKPOINT_FRAMES; tests ask for fewer to stay quick). */
  checkpointFrames?: number;
}

/** The budget database: plain SQL over one better-sqlite3 connection; transactions belong to the caller. */
export class BudgetStore implements BudgetState {
  readonly db: Database.Database;
  private readonly stmts: ReturnType<typeof budgetStatements>;
  /** Prepared on first write: an older file opened read-only has neither budget_scope nor open_requests. */
  private writes: ReturnType<typeof writeStatements> | undefined;
  /** A step's scope rows, read once and written together (null: an older file opened read-only, read as it is). */
  private readonly rows: StepRows | null;
  /** A step (immediate) is running: steps it calls are part of it. */
  private inStep = false;
  // Built once: better-sqlite3 builds a wrapper per db.transaction() call, which costs more than the statements.
  private readonly runInTx: Database.Transaction<(fn: () => unknown) => unknown>;
  /** Transactions committed, fsynced (synchronous=FULL) or not (NORMAL): a call's fsyncs are counted here. */
  readonly commits = commitCount();

  /** The worker thread checkpointing the WAL (walCheckpoints 'background'), or null. */
  private checkpointer: WalCheckpointer | null = null;

  private constructor(
    db: Database.Database,
    private readonly durable: boolean,
  ) {
    this.db = db;
    this.stmts = budgetStatements(db);
    this.rows = hasMergedWindows(db) ? new StepRows(db) : null;
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
            handle.exec(BUDGET_DDL);
            initialiseMeta(handle, path);
          })
          .immediate();
      } else {
        // Read-only (status, the gates): an older file is read as it is; its first writer migrates it.
        checkMeta(db, path, ['1', '2', '3']);
      }
      db.pragma(`synchronous = ${options.synchronous}`);
      const store = new BudgetStore(db, options.synchronous === 'FULL');
      if (options.walCheckpoints === 'background' && options.readonly !== true) {
        store.checkpointer = WalCheckpointer.start(db, path, options.checkpointFrames);
      }
      return store;
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

  /**
   * Run `fn` in a BEGIN IMMEDIATE transaction: the write lock is taken before anything is read. It is one step: the
   * scope rows it reads are read once, and what it adds and puts to them is written when it ends (or at writeStep).
   */
  immediate<T>(fn: () => T): T {
    // A step nested in another (a step calling a step) is part of it; one in a group (group()) is a step of its own.
    const outer = !this.inStep;
    let value: T;
    if (outer) {
      this.rows?.begin();
      this.inStep = true;
    }
    try {
      value = this.runInTx.immediate(() => {
        const result = fn();
        if (outer) this.writeStep();
        return result;
      }) as T;
    } finally {
      if (outer) {
        this.rows?.end();
        this.inStep = false;
      }
    }
    this.committed();
    return value;
  }

  /**
   * Several steps in one BEGIN IMMEDIATE transaction (Budgeter.runGrouped): each `immediate` inside is a step of its
   * own in a savepoint, its scope rows read and written within it, so one that throws takes back its writes and
   * its rows both, and the next step reads the file as the steps before it left it.
   */
  group<T>(fn: () => T): T {
    if (this.inStep) throw new CpError('ERR_INTERNAL', 'a group of budget steps cannot run inside a step');
    const value = this.runInTx.immediate(fn) as T;
    this.committed();
    return value;
  }

  /** Counts a commit when no transaction is left open (a nested step's savepoint is not one). */
  private committed(): void {
    if (this.db.inTransaction) return;
    if (this.durable) this.commits.durable += 1;
    else this.commits.lazy += 1;
    this.checkpointer?.afterCommit();
  }

  getReservation(requestId: string): ReservationRow | undefined {
    const row = this.stmts.getReservation.get(requestId) as string | undefined;
    return row === undefined ? undefined : reservationOf(JSON.parse(row) as unknown[]);
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

  /** Writes the scope rows the step in progress changed (before its records go to a ledger in its transaction). */
  writeStep(): void {
    this.rows?.flush();
  }

  /** Totals of each key, in the order given; a scope never charged reads as zeros. */
  totals(keys: readonly ScopeKey[]): TotalsRow[] {
    if (this.rows !== null) return this.rows.totals(keys);
    return keys.map((key) => {
      const row = this.stmts.getTotals.get(key.scope) as unknown[] | undefined;
      return row === undefined ? zeroTotals(key) : totalsOf(key, row);
    });
  }

  /** Add the same delta to every key's totals. */
  addTotals(keys: readonly ScopeKey[], delta: TotalsDelta): void {
    this.writableRows().addTotals(keys, delta);
  }

  private writableRows(): StepRows {
    if (this.rows === null) {
      throw new CpError('ERR_INTERNAL', 'a budget step wrote to an older budget file opened read-only', {
        hint: 'a bug: only a writer, whose opening brings the file to the current version, runs budget steps',
      });
    }
    return this.rows;
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
    if (this.rows !== null) return this.rows.window(key);
    const row = this.stmts.getWindow.get(key.scope) as [number, number, number] | undefined;
    return row === undefined ? undefined : { window_start: row[0], requests: row[1], tokens: row[2] };
  }

  /** Keeps a step's records until their caller reports them in the ledger (see store-layout.ts OPEN_DDL). */
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
    this.writableRows().putWindow(key, row);
  }

  /** The worker thread checkpointing this store's WAL (walCheckpoints 'background'), or null. */
  get walCheckpointer(): WalCheckpointer | null {
    return this.checkpointer;
  }

  close(): void {
    this.checkpointer?.stop();
    if (this.db.open) this.db.close();
  }
}
