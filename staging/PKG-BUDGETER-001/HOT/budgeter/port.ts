import type { CommitCount } from '#kernel/ledger/index.js';
import type { Budgeter } from './budgeter.js';
import type { Released, ReserveOutcome, Settled } from './results.js';
import type { OutboxRow } from './kept-records.js';
import { StepGroup } from './step-group.js';
import type { BudgetStatus } from './status.js';
import type { BudgetCrossing } from './crossings.js';

/**
 * The budgeter as a router on any store uses it: the SQLite file (one process's transactions, shared by the steps of
 * the calls in flight: step-group.ts) or PostgreSQL (several hosts, one database). Outcomes are the same values;
 * records are handed back for the caller to batch with its own, never appended here.
 */
export interface BudgetPort {
  readonly backend: 'sqlite' | 'postgres';
  reserve(request: unknown): Promise<ReserveOutcome>;
  /** `model`: price the usage at this model rather than the reservation's (a routed call's answering target). */
  settle(request: { request_id: string; usage: unknown; model?: string | null }): Promise<Settled>;
  release(requestId: unknown): Promise<Released>;
  /** A pending reservation settled as unknown usage (stays charged); null when it is no longer pending. */
  chargeUnknown(requestId: unknown, reason: string, metadata?: Record<string, unknown>): Promise<Settled | null>;
  /** Pending reservations made at or before `cutoffMs`, oldest first. */
  stalePending(cutoffMs: number, limit?: number): Promise<string[]>;
  /**
   * The records of settle, release and chargeUnknown are kept in the budget store, in the step's transaction, until
   * the caller reports them appended here (dropped with a later step's transaction: no extra commit per call).
   */
  recorded(requestIds: readonly string[]): void;
  /** Kept records older than `cutoffMs`: their caller never reported them appended (it died, or spooled them). */
  recordsDue(cutoffMs: number, limit?: number): Promise<OutboxRow[]>;
  /** Drops kept records now (a reconciliation pass that delivered them). */
  forgetRecords(requestIds: readonly string[]): Promise<void>;
  /** Every session's own scope and every key's, or one session's scopes, in their current periods. */
  status(options?: { session_id?: string | undefined; limit?: number }): Promise<BudgetStatus>;
  /** Transactions this process committed, fsynced (the config's durability "full") or not. */
  commitCount(): Readonly<CommitCount>;
  close(): Promise<void>;
}

/** The SQLite budgeter as a port: the steps of calls in flight share transactions (step-group.ts). */
export function sqliteBudgetPort(budgeter: Budgeter): BudgetPort {
  const steps = new StepGroup(budgeter);
  return {
    backend: 'sqlite',
    reserve: (request) => steps.reserve(() => budgeter.reserve(request)),
    settle: (request) => steps.finish(() => budgeter.settle(request)),
    release: (requestId) => steps.finish(() => budgeter.release(requestId)),
    chargeUnknown: (requestId, reason, metadata = {}) =>
      steps.finish(() => budgeter.chargeUnknown(requestId, reason, metadata, null)),
    stalePending: async (cutoffMs, limit) => budgeter.stalePending(cutoffMs, limit),
    recorded: (requestIds) => budgeter.recorded(requestIds),
    recordsDue: async (cutoffMs, limit) => budgeter.recordsDue(cutoffMs, limit),
    forgetRecords: async (requestIds) => budgeter.forgetRecords(requestIds),
    status: async (options) => budgeter.status(options),
    commitCount: () => budgeter.commitCount,
    close: async () => budgeter.close(),
  };
}

/**
 * The port with every step's crossings (a scope past its warn fraction or at its limit) handed to `watch` once the
 * step has committed: what alerts are made of. `watch` runs on the call path, so it only queues (and its throw is
 * dropped, never failing the call).
 */
export function watchBudget(port: BudgetPort, watch: (crossed: readonly BudgetCrossing[]) => void): BudgetPort {
  const seen = <T extends { crossed?: BudgetCrossing[] } | null>(outcome: T): T => {
    if (outcome?.crossed !== undefined)
      try {
        watch(outcome.crossed);
      } catch {
        // A watcher's fault is its own.
      }
    return outcome;
  };
  return {
    backend: port.backend,
    reserve: async (request) => seen(await port.reserve(request)),
    settle: async (request) => seen(await port.settle(request)),
    release: (requestId) => port.release(requestId),
    chargeUnknown: async (requestId, reason, metadata) => seen(await port.chargeUnknown(requestId, reason, metadata)),
    stalePending: (cutoffMs, limit) => port.stalePending(cutoffMs, limit),
    recorded: (requestIds) => port.recorded(requestIds),
    recordsDue: (cutoffMs, limit) => port.recordsDue(cutoffMs, limit),
    forgetRecords: (requestIds) => port.forgetRecords(requestIds),
    status: (options) => port.status(options),
    commitCount: () => port.commitCount(),
    close: () => port.close(),
  };
}
