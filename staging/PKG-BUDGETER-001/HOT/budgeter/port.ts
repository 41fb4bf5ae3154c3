import type { Budgeter } from './budgeter.js';
import type { Released, ReserveOutcome, Settled } from './results.js';

/**
 * The budgeter as a router on any store uses it: the SQLite file (one process's synchronous transactions, wrapped)
 * or PostgreSQL (several hosts, one database). Outcomes are the same values; records are handed back for the
 * caller to batch with its own, never appended here.
 */
export interface BudgetPort {
  readonly backend: 'sqlite' | 'postgres';
  reserve(request: unknown): Promise<ReserveOutcome>;
  settle(request: { request_id: string; usage: unknown }): Promise<Settled>;
  release(requestId: unknown): Promise<Released>;
  /** A pending reservation settled as unknown usage (stays charged); null when it is no longer pending. */
  chargeUnknown(requestId: unknown, reason: string, metadata?: Record<string, unknown>): Promise<Settled | null>;
  /** Pending reservations made at or before `cutoffMs`, oldest first. */
  stalePending(cutoffMs: number, limit?: number): Promise<string[]>;
  close(): Promise<void>;
}

export function sqliteBudgetPort(budgeter: Budgeter): BudgetPort {
  return {
    backend: 'sqlite',
    reserve: async (request) => budgeter.reserve(request),
    settle: async (request) => budgeter.settle(request),
    release: async (requestId) => budgeter.release(requestId),
    chargeUnknown: async (requestId, reason, metadata = {}) =>
      budgeter.chargeUnknown(requestId, reason, metadata, null),
    stalePending: async (cutoffMs, limit) => budgeter.stalePending(cutoffMs, limit),
    close: async () => budgeter.close(),
  };
}
