import type { AppendInput } from '../kernel/ledger/index.js';
import type { Budgeter } from '../budgeter/index.js';
import { uncachedInputTokens, type Usage } from '../providers/spec.js';

/**
 * The router's side of the budgeter. The budgeter is opened without a ledger, so each step hands back its
 * ledger records and the router appends them in the same batch as its own DISPATCH / EXCHANGE /
 * PROMPT_REJECTED record: budgets cost no extra fsync.
 */
export interface BudgetStep {
  records: AppendInput[];
}

/** Provider usage counts every prompt token in input_tokens; the budgeter prices uncached input separately. */
export function budgetUsage(usage: Usage): Record<string, number | null> {
  return {
    input_tokens: uncachedInputTokens(usage),
    output_tokens: usage.output_tokens,
    cache_read_tokens: usage.cache_read_tokens,
    cache_write_tokens: usage.cache_write_tokens,
  };
}

export type Reserved =
  | { ok: true; records: AppendInput[]; remaining_tokens: number | null }
  | { ok: false; code: string; message: string; records: AppendInput[] };

export function reserve(budget: Budgeter | null, request: Parameters<Budgeter['reserve']>[0]): Reserved {
  if (!budget) return { ok: true, records: [], remaining_tokens: null };
  try {
    const outcome = budget.reserve(request);
    return outcome.ok
      ? { ok: true, records: outcome.records, remaining_tokens: outcome.remaining_tokens }
      : { ok: false, code: outcome.code, message: outcome.message, records: outcome.records };
  } catch (error) {
    return { ok: false, code: 'BUDGET_ERROR', message: error instanceof Error ? error.message : String(error), records: [] };
  }
}

/** Give the reservation back; a failure here is reported by the caller, never thrown past the exchange. */
export function release(budget: Budgeter | null, requestId: string, warnings: string[]): AppendInput[] {
  if (!budget) return [];
  try {
    return budget.release(requestId).records;
  } catch (error) {
    warnings.push(`BUDGET_RELEASE_FAILED: ${error instanceof Error ? error.message : String(error)}`);
    return [];
  }
}

export function settle(budget: Budgeter | null, requestId: string, usage: Usage, warnings: string[]):
  { records: AppendInput[]; cost: number | null; remaining_tokens: number | null } {
  if (!budget) return { records: [], cost: null, remaining_tokens: null };
  try {
    const settled = budget.settle({ request_id: requestId, usage: budgetUsage(usage) });
    if (!settled.usage_known) warnings.push(`BUDGET_USAGE_UNKNOWN: ${settled.usage_problems.join('; ')} (the reservation stays charged)`);
    return { records: settled.records, cost: settled.cost, remaining_tokens: settled.remaining_tokens };
  } catch (error) {
    warnings.push(`BUDGET_SETTLE_FAILED: ${error instanceof Error ? error.message : String(error)}`);
    return { records: [], cost: null, remaining_tokens: null };
  }
}
