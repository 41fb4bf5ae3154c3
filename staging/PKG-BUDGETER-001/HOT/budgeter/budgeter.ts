import { CpError } from '#kernel/errors.js';
import type { AppendInput, CommitCount, Ledger } from '#kernel/ledger/index.js';
import type { WalCheckpointer } from '#kernel/ledger/wal-checkpointer.js';
import { type BudgetConfig, budgetDbPathForRoot, loadBudgetConfigForRoot, parseBudgetConfig } from './config.js';
import { parseRequestId, parseReserveInput } from './input.js';
import { isoTime } from './iso-time.js';
import type { RecordContext } from './records.js';
import type { Released, ReserveOutcome, Settled } from './results.js';
import {
  type StepContext,
  chargeUnknownStep,
  readSettleRequest,
  releaseStep,
  reserveStep,
  settleStep,
} from './steps.js';
import { type BudgetStatus, statusOf } from './status.js';
import type { OutboxRow } from './kept-records.js';
import { BudgetStore } from './store.js';

/**
 * Landed requests whose kept records one step's transaction drops together. Few: a kept row is most of a kilobyte,
 * and while open_requests holds only a handful, the step's own pending row shares their page, so the drop writes no
 * page of its own; 32 of them spread the table over several pages that split and merge as rows come and go.
 */
const LANDED_BATCH = 4;

export interface BudgeterOptions {
  /** A cplane root: state in ROOT/HOT/registries/budget.sqlite, config from ROOT/HOT/config/budget.json. */
  root?: string;
  /** The budget database, when not the root's. */
  dbPath?: string;
  /** A config object (validated here) instead of the root's config file. */
  config?: unknown;
  clock?: () => number;
  /**
   * When given, every allocation/settlement record is appended here inside its budget transaction.
   * When absent, outcomes carry the records for the caller to batch with its own appends (one fsync, not two).
   */
  ledger?: Ledger | null;
  readonly?: boolean;
  /** Where the budget file's WAL is checkpointed (StoreOptions.walCheckpoints): 'background' for a server. */
  walCheckpoints?: 'inline' | 'background';
  /** WAL frames between background checkpoints (StoreOptions.checkpointFrames). */
  checkpointFrames?: number;
}

/** A grouped step's outcome (runGrouped): its value, or what it threw. */
export type StepResult = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * Token and cost budgets per session → work order → agent, shared by processes through one SQLite file.
 * Every state change is one BEGIN IMMEDIATE transaction and is idempotent per request_id.
 */
export class Budgeter {
  readonly config: BudgetConfig;
  readonly dbPath: string;
  private readonly store: BudgetStore;
  private readonly clock: () => number;
  private readonly ledger: Ledger | null;
  private readonly recordCtx: RecordContext;

  private constructor(
    config: BudgetConfig,
    dbPath: string,
    store: BudgetStore,
    clock: () => number,
    ledger: Ledger | null,
  ) {
    this.config = config;
    this.dbPath = dbPath;
    this.store = store;
    this.clock = clock;
    this.ledger = ledger;
    this.recordCtx = { mode: config.mode, currency: config.currency };
  }

  static open(options: BudgeterOptions): Budgeter {
    const dbPath = options.dbPath ?? (options.root === undefined ? undefined : budgetDbPathForRoot(options.root));
    if (dbPath === undefined) {
      throw new CpError('ERR_USAGE', 'Budgeter.open needs root or dbPath', {
        hint: 'pass {root} for a cplane root or {dbPath} for a database file',
      });
    }
    let config: BudgetConfig;
    if (options.config !== undefined) config = parseBudgetConfig(options.config);
    else if (options.root !== undefined) config = loadBudgetConfigForRoot(options.root);
    else
      throw new CpError('ERR_USAGE', 'Budgeter.open needs a config when no root is given', {
        hint: 'pass {config} or {root}',
      });
    const store = BudgetStore.open(dbPath, {
      synchronous: config.durability === 'full' ? 'FULL' : 'NORMAL',
      busyTimeoutMs: config.busy_timeout_ms ?? 10_000,
      readonly: options.readonly ?? false,
      walCheckpoints: options.walCheckpoints ?? 'inline',
      ...(options.checkpointFrames === undefined ? {} : { checkpointFrames: options.checkpointFrames }),
    });
    return new Budgeter(config, dbPath, store, options.clock ?? Date.now, options.ledger ?? null);
  }

  /** The worker thread checkpointing the budget file's WAL (walCheckpoints 'background'), or null. */
  get walCheckpointer(): WalCheckpointer | null {
    return this.store.walCheckpointer;
  }

  /** Requests whose records their caller reported in the ledger: forgotten by the next transaction (recorded()). */
  private landed: string[] = [];

  private tx(): StepContext {
    if (this.landed.length >= LANDED_BATCH) {
      // Inside the step's transaction, a batch at a time (one delete per call cost a sixth of a reserve+settle).
      // Rolled back with it, the rows stay for reconciliation, which finds their records in the chain and only
      // drops them.
      this.store.dropOutbox(this.landed);
      this.landed = [];
    }
    return { config: this.config, store: this.store, now: this.clock(), records: this.recordCtx };
  }

  /**
   * A step's records that no ledger took inside its transaction are kept in the budget database with it, until
   * the caller reports them appended (recorded) or a reconciliation pass delivers them (deliverRecords).
   */
  private keep(requestId: string, records: readonly AppendInput[], ledger: Ledger | null): void {
    if (ledger === null && records.length > 0) this.store.putOutbox(requestId, isoTime(this.clock()), records);
  }

  /**
   * These requests' records are in the ledger: their kept copies are dropped with the next step's transaction
   * (no transaction of their own on the hot path). A process that dies first leaves them for deliverRecords,
   * which finds them in the chain and only drops them.
   */
  recorded(requestIds: readonly string[]): void {
    this.landed.push(...requestIds);
  }

  /** Kept records older than `cutoffMs` (epoch ms): their caller never reported them appended. */
  recordsDue(cutoffMs: number, limit = 1000): OutboxRow[] {
    return this.store.outboxDue(new Date(cutoffMs).toISOString(), limit);
  }

  /** Drops kept records now, in a transaction of their own (a reconciliation pass that appended them). */
  forgetRecords(requestIds: readonly string[]): void {
    this.store.immediate(() => this.store.dropOutbox(requestIds));
  }

  /** Reserve estimated input + max output in every scope of the request, or refuse with BUDGET_EXHAUSTED / RATE_LIMITED. */
  reserve(request: unknown): ReserveOutcome {
    const input = parseReserveInput(request);
    return this.store.immediate((): ReserveOutcome => {
      // A step's outcome is a new object of its own: its ledger ids are set in place, not copied into another.
      const outcome = reserveStep(this.tx(), input);
      outcome.ledger_entry_ids = outcome.ok
        ? this.publish(outcome.records, 'allocation', outcome.reservation.request_id)
        : this.publish(outcome.records);
      return outcome;
    });
  }

  /** Replace the reservation by the real usage's cost. Usage is untrusted: anything malformed makes it unknown. */
  settle(request: { request_id: string; usage: unknown; model?: string | null }): Settled {
    const { requestId, usage, model } = readSettleRequest(request);
    return this.store.immediate((): Settled => {
      const outcome = settleStep(this.tx(), requestId, usage, model);
      this.keep(requestId, outcome.records, this.ledger);
      outcome.ledger_entry_ids = this.publish(outcome.records, 'settlement', requestId);
      return outcome;
    });
  }

  /** Pending reservations made at or before `cutoffMs` (epoch ms): calls that outlived the orphan timeout, oldest first. */
  stalePending(cutoffMs: number, limit = 1000): string[] {
    return this.store.stalePending(new Date(cutoffMs).toISOString(), limit);
  }

  /** The session a reservation was made under, or null when the budget holds no such request. */
  sessionOf(requestId: string): string | null {
    return this.store.getReservation(requestId)?.session_id ?? null;
  }

  /**
   * Settle a pending reservation whose real usage will never be known (its process died mid-call) as unknown
   * usage: it stays charged, never released. `ledger` records it when the budgeter has none of its own, inside
   * the budget transaction as always. Null when the request is not pending (settled or released meanwhile).
   */
  chargeUnknown(
    requestIdInput: unknown,
    reason: string,
    metadata: Record<string, unknown> = {},
    ledger: Ledger | null = this.ledger,
  ): Settled | null {
    const requestId = parseRequestId(requestIdInput);
    return this.store.immediate((): Settled | null => {
      const outcome = chargeUnknownStep(this.tx(), requestId, reason, metadata);
      if (!outcome) return null;
      this.keep(requestId, outcome.records, ledger);
      return { ...outcome, ledger_entry_ids: this.publish(outcome.records, 'settlement', requestId, ledger) };
    });
  }

  /** Give a reservation back when the call never reached the provider. */
  release(requestIdInput: unknown): Released {
    const requestId = parseRequestId(requestIdInput);
    return this.store.immediate((): Released => {
      const outcome = releaseStep(this.tx(), requestId);
      this.keep(requestId, outcome.records, this.ledger);
      return { ...outcome, ledger_entry_ids: this.publish(outcome.records, 'settlement', requestId) };
    });
  }

  /**
   * Steps in one BEGIN IMMEDIATE transaction (one commit), in the order given. A step is one of this budgeter's own
   * (reserve, settle, release, chargeUnknown), whose transaction becomes a savepoint inside this one: it runs over the
   * state the steps before it left, as it would alone in that order, and one that throws rolls back only itself.
   * Throws (everything rolled back) when the transaction cannot be begun or committed, or when a step's failure ended
   * the transaction itself. Only for a budgeter without a ledger of its own (grouped): records a step appended to a
   * ledger could not be taken back with a group that fails to commit.
   */
  runGrouped(steps: readonly (() => unknown)[]): StepResult[] {
    if (!this.grouped) throw new CpError('ERR_INTERNAL', 'a budgeter with a ledger of its own runs its steps alone');
    return this.store.group(() => {
      const results: StepResult[] = [];
      for (const step of steps) {
        try {
          results.push({ ok: true, value: step() });
        } catch (error) {
          // SQLite ends the whole transaction on some faults (a full disk): the steps before this one went with it.
          if (!this.store.db.inTransaction) throw error;
          results.push({ ok: false, error });
        }
      }
      return results;
    });
  }

  /** Whether steps may share a transaction (runGrouped): the budgeter appends to no ledger of its own. */
  get grouped(): boolean {
    return this.ledger === null;
  }

  status(options: { session_id?: string | undefined; limit?: number } = {}): BudgetStatus {
    return statusOf(this.config, this.store, this.dbPath, options, this.clock());
  }

  /** This process's transactions on the budget database, fsynced or not (the config's durability). */
  get commitCount(): Readonly<CommitCount> {
    return this.store.commits;
  }

  close(): void {
    if (this.landed.length > 0 && this.store.db.open && !this.store.db.readonly) {
      try {
        this.forgetRecords(this.landed);
      } catch {
        // A budget database that refuses the write now keeps the rows for reconciliation to drop.
      }
      this.landed = [];
    }
    this.store.close();
  }

  /**
   * Append inside the budget transaction: the ledger commits first, then the budget state with the entry id.
   * A failed append rolls the budget change back, so a state change and its record exist together or not at all
   * (the only gap is a budget COMMIT failing after the ledger committed, which SQLite reports as an I/O error).
   */
  private publish(
    records: AppendInput[],
    which?: 'allocation' | 'settlement',
    requestId?: string,
    ledger: Ledger | null = this.ledger,
  ): string[] {
    if (!ledger || records.length === 0) return [];
    // The step's scope rows are written before its records reach the ledger: a write failing after the append
    // would roll the budget back under a record the ledger already holds.
    this.store.writeStep();
    let ids: string[];
    try {
      ids = ledger.appendBatch(records).map((entry) => entry.id);
    } catch (cause) {
      throw new CpError(
        'ERR_BUDGET_LEDGER',
        `ledger record ${records[0]?.event_type} for request ${records[0]?.submission_id} failed, budget unchanged: ${(cause as Error).message}`,
        {
          hint: 'fix the ledger (see the cause) and repeat the call; nothing was charged',
          cause,
        },
      );
    }
    // The last record of a batch is the allocation/settlement itself (a WARNED record comes first).
    if (which && requestId)
      this.store.setEntryId(which, requestId, ids[which === 'allocation' ? ids.length - 1 : 0] as string);
    return ids;
  }
}
