import type { AppendInput } from '#kernel/ledger/index.js';
import type { BudgetCrossing } from './crossings.js';
import type { NormalizedUsage } from './pricing.js';
import { toMoney } from './pricing.js';
import type { LimitViolation } from './scopes.js';
import type { RateViolation } from './rate.js';
import type { ReservationRow } from './store.js';

/** A reservation as callers and reports see it (snake_case: it is also ledger metadata). Costs are in currency units. */
export interface Reservation {
  request_id: string;
  session_id: string;
  work_order_id: string | null;
  agent_id: string | null;
  model: string;
  state: 'reserved' | 'settled' | 'released';
  reserved_tokens: number;
  /** null: the model has no price. */
  reserved_cost: number | null;
  /** What counts against the budgets after settlement: actual usage, or the reservation when usage is unknown. */
  charged_tokens: number | null;
  charged_cost: number | null;
  /** Real usage; null when unknown (never 0). */
  usage: NormalizedUsage | null;
  actual_tokens: number | null;
  cost: number | null;
  over_budget: boolean;
  created_at: string;
  finished_at: string | null;
}

/** One broken limit, in tokens or currency units (cost limits are converted from nano-units). */
export interface BudgetViolation {
  code: 'BUDGET_EXHAUSTED' | 'BUDGET_PRICE_UNKNOWN' | 'RATE_LIMITED';
  scope: string;
  scope_id: string;
  limit: string;
  limit_value: number;
  used: number;
  requested: number | null;
  retry_after_ms: number | null;
}

interface Outcome {
  /** Scopes this step took past their warn fraction or to their limit (absent when none): what alerts report. */
  crossed?: BudgetCrossing[];
  /** Ledger records describing this step; already appended when the budgeter has a ledger, else for the caller to batch. */
  records: AppendInput[];
  ledger_entry_ids: string[];
}

export interface Granted extends Outcome {
  ok: true;
  replayed: boolean;
  reservation: Reservation;
  remaining_tokens: number | null;
  remaining_cost: number | null;
  /** Limits broken but allowed (warn mode). */
  warnings: BudgetViolation[];
}

export interface Refused extends Outcome {
  ok: false;
  code: BudgetViolation['code'];
  message: string;
  violations: BudgetViolation[];
  retry_after_ms: number | null;
}

export type ReserveOutcome = Granted | Refused;

export interface Settled extends Outcome {
  replayed: boolean;
  reservation: Reservation;
  usage_known: boolean;
  usage_problems: string[];
  /** Actual cost in currency units; null when the usage or the model's price is unknown. */
  cost: number | null;
  remaining_tokens: number | null;
  remaining_cost: number | null;
  /** Limits found exceeded after charging the real usage (the money was already spent). */
  exceeded: BudgetViolation[];
}

export interface Released extends Outcome {
  replayed: boolean;
  reservation: Reservation;
}

/**
 * A settled row's known usage: the `usage` column on rows written before it was left out, else the five counts
 * of its settle key (a key that starts with "unknown" says the usage was not known).
 */
export function usageOfRow(row: Pick<ReservationRow, 'usage' | 'usage_key'>): NormalizedUsage | null {
  if (row.usage !== null) return JSON.parse(row.usage) as NormalizedUsage;
  if (row.usage_key === null) return null;
  const counts = JSON.parse(row.usage_key) as unknown[];
  if (counts.length !== 5 || !counts.every((n) => typeof n === 'number')) return null;
  const [input, output, cacheRead, write5m, write1h] = counts as number[];
  return {
    input_tokens: input as number,
    output_tokens: output as number,
    cache_read_tokens: cacheRead as number,
    cache_write_5m_tokens: write5m as number,
    cache_write_1h_tokens: write1h as number,
  };
}

/** `usage`: the row's usage when the caller holds it already (a settle just read it), saving the parse of its key. */
export function toReservation(row: ReservationRow, usage: NormalizedUsage | null = usageOfRow(row)): Reservation {
  return {
    request_id: row.request_id,
    session_id: row.session_id,
    work_order_id: row.work_order_id === '' ? null : row.work_order_id,
    agent_id: row.agent_id === '' ? null : row.agent_id,
    model: row.model,
    state: row.state,
    reserved_tokens: row.reserved_tokens,
    reserved_cost: toMoney(row.reserved_cost),
    charged_tokens: row.charged_tokens,
    charged_cost: toMoney(row.charged_cost),
    usage,
    actual_tokens: row.actual_tokens,
    cost: toMoney(row.actual_cost),
    over_budget: row.over_budget === 1,
    created_at: row.created_at,
    finished_at: row.finished_at,
  };
}

export function toViolation(v: LimitViolation | RateViolation): BudgetViolation {
  const money = v.limit === 'max_cost';
  return {
    code: v.code,
    scope: v.scope,
    scope_id: v.scope_id,
    limit: v.limit,
    limit_value: money ? (toMoney(v.limit_value) as number) : v.limit_value,
    used: money ? (toMoney(v.used) as number) : v.used,
    requested: money ? toMoney(v.requested) : v.requested,
    retry_after_ms: v.code === 'RATE_LIMITED' ? v.retry_after_ms : null,
  };
}

export function describeViolation(v: BudgetViolation): string {
  if (v.code === 'BUDGET_PRICE_UNKNOWN') {
    return `${v.scope} ${v.scope_id} has a cost limit (${v.limit_value}) but the model has no price, so the cost is unknown`;
  }
  const window = v.code !== 'RATE_LIMITED' ? '' : v.limit === 'max_in_flight' ? ' in flight' : ' in this window';
  return `${v.scope} ${v.scope_id} ${v.limit} ${v.limit_value}: used ${v.used}${window}, requested ${v.requested ?? 'unknown'}`;
}
