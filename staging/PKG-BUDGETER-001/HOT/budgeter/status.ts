import { type BudgetConfig, type BudgetMode, type Limit, limitFor, periodFor } from './config.js';
import { periodAt, periodLabelOf, periodView } from './periods.js';
import { fromMoney, toMoney } from './pricing.js';
import type { BudgetStore, TotalsRow } from './store.js';

export interface ScopeStatus {
  scope: string;
  scope_id: string;
  session_id: string;
  work_order_id: string | null;
  agent_id: string | null;
  requests: number;
  reserved_tokens: number;
  settled_tokens: number;
  reserved_cost: number;
  settled_cost: number;
  /** Settled requests whose real cost is unknown (not included in settled_cost beyond their reservation). */
  unknown_cost_requests: number;
  limit: Limit | null;
  /** The current period of a limit that resets (the figures are this period's); null for a lifetime limit. */
  period: { every: string; start: string; end: string } | null;
  /** Largest used/limit fraction over the scope's limits; null when unlimited. */
  used_fraction: number | null;
  state: 'ok' | 'near_limit' | 'exhausted' | 'unlimited';
}

export interface BudgetStatus {
  mode: BudgetMode;
  currency: string;
  db_path: string;
  session_id: string | null;
  /** Reservations not yet settled or released: in this session, or in the whole database. */
  pending_reservations: number;
  scopes: ScopeStatus[];
}

function ownId(row: TotalsRow): string {
  if (row.kind === 'agent' || row.kind === 'key') return row.agent_id;
  return row.kind === 'work_order' ? row.work_order_id : row.session_id;
}

function fraction(used: number, max: number): number {
  // A zero limit has no room at all, used or not.
  return max === 0 ? 1 : used / max;
}

/**
 * A scope's figures in its current period: `row` is its latest period's totals (the stores' status queries read
 * the latest row of each scope), which count for nothing once that period has ended.
 */
function scopeStatus(config: BudgetConfig, latest: TotalsRow, now: number): ScopeStatus {
  const id = ownId(latest);
  const limit = limitFor(config, latest.kind, id);
  const every = periodFor(config, latest.kind, id);
  const period = every === null ? null : periodAt(every, now);
  const row = period === null || periodLabelOf(latest.scope) === period.label ? latest : emptied(latest);
  const fractions: number[] = [];
  if (limit?.max_tokens !== undefined)
    fractions.push(fraction(row.reserved_tokens + row.settled_tokens, limit.max_tokens));
  if (limit?.max_cost !== undefined)
    fractions.push(fraction(row.reserved_cost + row.settled_cost, fromMoney(limit.max_cost)));
  const used = fractions.length === 0 ? null : Math.max(...fractions);
  const warnAt = config.warn_at_fraction ?? 0.8;
  const state = used === null ? 'unlimited' : used >= 1 ? 'exhausted' : used >= warnAt ? 'near_limit' : 'ok';
  return {
    scope: row.kind,
    scope_id: id,
    session_id: row.session_id,
    work_order_id: row.work_order_id === '' ? null : row.work_order_id,
    agent_id: row.agent_id === '' ? null : row.agent_id,
    requests: row.requests,
    reserved_tokens: row.reserved_tokens,
    settled_tokens: row.settled_tokens,
    reserved_cost: toMoney(row.reserved_cost) as number,
    settled_cost: toMoney(row.settled_cost) as number,
    unknown_cost_requests: row.unknown_cost_requests,
    limit,
    period: period === null ? null : periodView(period),
    used_fraction: used,
    state,
  };
}

/** One session's scopes (session, its work orders, its agents), or every session's own scope and every key's. */
export function statusOf(
  config: BudgetConfig,
  store: BudgetStore,
  dbPath: string,
  options: { session_id?: string | undefined; limit?: number },
  now: number,
): BudgetStatus {
  const session = options.session_id ?? null;
  const rows = session === null ? store.sessions(options.limit ?? 100) : store.sessionTotals(session);
  return statusFromRows(config, dbPath, session, rows, store.pendingCount(session), now);
}

function emptied(row: TotalsRow): TotalsRow {
  return {
    ...row,
    reserved_tokens: 0,
    reserved_cost: 0,
    settled_tokens: 0,
    settled_cost: 0,
    requests: 0,
    unknown_cost_requests: 0,
  };
}

/** The status of rows read from either store (SQLite here, PostgreSQL in pg/pg-status.ts): one shape for both. */
export function statusFromRows(
  config: BudgetConfig,
  dbPath: string,
  session: string | null,
  rows: readonly TotalsRow[],
  pending: number,
  now: number,
): BudgetStatus {
  return {
    mode: config.mode,
    currency: config.currency,
    db_path: dbPath,
    session_id: session,
    pending_reservations: pending,
    scopes: rows.map((row) => scopeStatus(config, row, now)),
  };
}
