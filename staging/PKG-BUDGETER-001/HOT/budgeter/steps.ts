import type { AppendInput } from '#kernel/ledger/index.js';
import type { BudgetCrossing } from './crossings.js';
import { type ReserveInput, parseModelId, parseRequestId } from './input.js';
import { type TxContext, releaseTx, reserveTx, settleTx } from './operations.js';
import { toMoney } from './pricing.js';
import { type RecordContext, allocationRecord, exceededRecord, releaseRecord, settlementRecord } from './records.js';
import {
  type BudgetViolation,
  type Refused,
  type Released,
  type ReserveOutcome,
  type Settled,
  toReservation,
} from './results.js';
import type { Remaining } from './scopes.js';

/**
 * One budget step's outcome, built inside its transaction over whichever state the backend gives (the SQLite
 * store, or a PostgreSQL snapshot): both backends answer with the same values because they run this code.
 * `ledger_entry_ids` is empty here; a budgeter with its own ledger fills it in the same transaction.
 */
export interface StepContext extends TxContext {
  records: RecordContext;
}

export function reserveStep(ctx: StepContext, input: ReserveInput): ReserveOutcome {
  const decision = reserveTx(ctx, input);
  if (decision.kind === 'refused')
    return { ...refusal(input, decision.violations, decision.message, ctx.records), ...crossedOf(decision.crossed) };
  const reservation = toReservation(decision.row);
  const records: AppendInput[] = decision.replayed
    ? []
    : [
        ...(decision.warnings.length > 0
          ? [exceededRecord(reservation, 'WARNED', decision.warnings, ctx.records)]
          : []),
        allocationRecord(reservation, decision.warnings, ctx.records),
      ];
  return {
    ok: true,
    replayed: decision.replayed,
    reservation,
    ...remainingMoney(decision.remaining),
    warnings: decision.warnings,
    records,
    ledger_entry_ids: [],
    ...crossedOf(decision.crossed),
  };
}

/** Present only when a scope crossed a mark: the outcomes of most steps keep their shape. */
function crossedOf(crossed: BudgetCrossing[]): { crossed?: BudgetCrossing[] } {
  return crossed.length === 0 ? {} : { crossed };
}

/**
 * A settle request's id (validated), its usage (untrusted: anything malformed makes it unknown), and the model to
 * price it at when not the reservation's (null: the reservation's).
 */
export function readSettleRequest(request: unknown): { requestId: string; usage: unknown; model: string | null } {
  const record = (typeof request === 'object' && request !== null ? request : {}) as {
    request_id?: unknown;
    usage?: unknown;
    model?: unknown;
  };
  const model = record.model === undefined || record.model === null ? null : parseModelId(record.model);
  return { requestId: parseRequestId(record.request_id), usage: record.usage, model };
}

export function settleStep(ctx: StepContext, requestId: string, usage: unknown, model: string | null = null): Settled {
  const decision = settleTx(ctx, requestId, usage, undefined, model);
  const reservation = toReservation(decision.row, decision.usage);
  const records: AppendInput[] = decision.replayed
    ? []
    : [
        settlementRecord(reservation, decision.usageProblems, ctx.records),
        ...(decision.exceeded.length > 0
          ? [exceededRecord(reservation, 'OVERSPENT', decision.exceeded, ctx.records)]
          : []),
      ];
  return {
    replayed: decision.replayed,
    reservation,
    usage_known: reservation.usage !== null,
    usage_problems: decision.usageProblems,
    cost: reservation.cost,
    ...remainingMoney(decision.remaining),
    exceeded: decision.exceeded,
    records,
    ledger_entry_ids: [],
    ...crossedOf(decision.crossed),
  };
}

/** Null when the request is not pending (settled or released meanwhile). */
export function chargeUnknownStep(
  ctx: StepContext,
  requestId: string,
  reason: string,
  metadata: Record<string, unknown>,
): Settled | null {
  if (ctx.store.getReservation(requestId)?.state !== 'reserved') return null;
  const decision = settleTx(ctx, requestId, null, reason);
  const reservation = toReservation(decision.row, decision.usage);
  const record = settlementRecord(reservation, decision.usageProblems, ctx.records);
  return {
    replayed: false,
    reservation,
    usage_known: false,
    usage_problems: decision.usageProblems,
    cost: null,
    ...remainingMoney(decision.remaining),
    exceeded: decision.exceeded,
    records: [{ ...record, metadata: { ...record.metadata, ...metadata } }],
    ledger_entry_ids: [],
    ...crossedOf(decision.crossed),
  };
}

export function releaseStep(ctx: StepContext, requestId: string): Released {
  const decision = releaseTx(ctx, requestId);
  const reservation = toReservation(decision.row);
  return {
    replayed: decision.replayed,
    reservation,
    records: decision.replayed ? [] : [releaseRecord(reservation, ctx.records)],
    ledger_entry_ids: [],
  };
}

function remainingMoney(left: Remaining): { remaining_tokens: number | null; remaining_cost: number | null } {
  return { remaining_tokens: left.tokens, remaining_cost: toMoney(left.cost) };
}

function refusal(input: ReserveInput, violations: BudgetViolation[], message: string, ctx: RecordContext): Refused {
  const identity = { ...input, work_order_id: input.work_order_id ?? null, agent_id: input.agent_id ?? null };
  // Only a pure rate refusal has a time after which the same call can succeed.
  const rateOnly = violations.every((v) => v.code === 'RATE_LIMITED');
  return {
    ok: false,
    code: violations[0]?.code ?? 'BUDGET_EXHAUSTED',
    message,
    violations,
    retry_after_ms: rateOnly ? Math.max(...violations.map((v) => v.retry_after_ms ?? 0)) : null,
    records: [exceededRecord(identity, 'REFUSED', violations, ctx)],
    ledger_entry_ids: [],
  };
}
