import type { AppendInput } from '#kernel/ledger/index.js';
import type { BudgetMode } from './config.js';
import type { BudgetViolation, Reservation } from './results.js';

/**
 * Ledger records of the budgeter. submission_id is the request id; metadata is snake_case and carries
 * session_id / work_order_id / agent_id so the ledger's indexed queries find them.
 */
export const BUDGET_EVENTS = {
  allocated: 'BUDGET_ALLOCATED',
  settled: 'BUDGET_SETTLED',
  released: 'BUDGET_RELEASED',
  exceeded: 'BUDGET_EXCEEDED',
} as const;

/**
 * The kinds a step hands its caller to append after its transaction (kept in the outbox meanwhile): delivered with
 * the ledger's `once`, so a record that did land (or lands from a spool) is never appended twice.
 */
export const DELIVERED_ONCE: readonly string[] = [
  BUDGET_EVENTS.settled,
  BUDGET_EVENTS.released,
  BUDGET_EVENTS.exceeded,
];

export interface RecordContext {
  mode: BudgetMode;
  currency: string;
}

function identity(
  r: Pick<Reservation, 'request_id' | 'session_id' | 'work_order_id' | 'agent_id' | 'model'>,
  ctx: RecordContext,
) {
  return {
    request_id: r.request_id,
    session_id: r.session_id,
    work_order_id: r.work_order_id,
    agent_id: r.agent_id,
    model: r.model,
    mode: ctx.mode,
    currency: ctx.currency,
  };
}

export function allocationRecord(
  r: Reservation,
  warnings: readonly BudgetViolation[],
  ctx: RecordContext,
): AppendInput {
  return {
    event_type: BUDGET_EVENTS.allocated,
    submission_id: r.request_id,
    decision: r.over_budget ? 'RESERVED_OVER_BUDGET' : 'RESERVED',
    reason: `reserved ${r.reserved_tokens} tokens for ${r.model}`,
    metadata: {
      ...identity(r, ctx),
      reserved_tokens: r.reserved_tokens,
      reserved_cost: r.reserved_cost,
      warnings: [...warnings],
    },
  };
}

/** A refusal (enforce), an allowed overrun (warn) or a settlement that went past a limit (overspent). */
export function exceededRecord(
  r: Pick<Reservation, 'request_id' | 'session_id' | 'work_order_id' | 'agent_id' | 'model'>,
  decision: 'REFUSED' | 'WARNED' | 'OVERSPENT',
  violations: readonly BudgetViolation[],
  ctx: RecordContext,
): AppendInput {
  const first = violations[0] as BudgetViolation;
  return {
    event_type: BUDGET_EVENTS.exceeded,
    submission_id: r.request_id,
    decision,
    reason: `${first.code}: ${first.scope} ${first.scope_id} ${first.limit} ${first.limit_value}`,
    metadata: { ...identity(r, ctx), code: first.code, violations: [...violations] },
  };
}

export function settlementRecord(r: Reservation, usageProblems: readonly string[], ctx: RecordContext): AppendInput {
  const usage = r.usage;
  return {
    event_type: BUDGET_EVENTS.settled,
    submission_id: r.request_id,
    decision: usage === null ? 'SETTLED_USAGE_UNKNOWN' : 'SETTLED',
    reason:
      usage === null
        ? `usage unknown (${usageProblems.join('; ')}); reservation kept charged`
        : `settled ${r.actual_tokens} tokens for ${r.model}`,
    metadata: {
      ...identity(r, ctx),
      input_tokens: usage?.input_tokens ?? null,
      output_tokens: usage?.output_tokens ?? null,
      cache_read_tokens: usage?.cache_read_tokens ?? null,
      cache_write_5m_tokens: usage?.cache_write_5m_tokens ?? null,
      cache_write_1h_tokens: usage?.cache_write_1h_tokens ?? null,
      tokens: r.actual_tokens,
      cost: r.cost,
      usage_problems: [...usageProblems],
      reserved_tokens: r.reserved_tokens,
      reserved_cost: r.reserved_cost,
      charged_tokens: r.charged_tokens,
      charged_cost: r.charged_cost,
    },
  };
}

export function releaseRecord(r: Reservation, ctx: RecordContext): AppendInput {
  return {
    event_type: BUDGET_EVENTS.released,
    submission_id: r.request_id,
    decision: 'RELEASED',
    reason: `released ${r.reserved_tokens} reserved tokens: the call never happened`,
    metadata: { ...identity(r, ctx), reserved_tokens: r.reserved_tokens, reserved_cost: r.reserved_cost },
  };
}
