import type { BudgetConfig, ScopeKind } from './config.js';
import { periodView } from './periods.js';
import { fromMoney } from './pricing.js';
import type { LimitViolation, ScopeUse } from './scopes.js';

/**
 * A scope that crossed its warn fraction or reached its limit in one step: what an alert tells the operator.
 * `dedupe_key` names the scope and its period (the totals key), so an alert is sent once per scope per period
 * however many steps (or hosts) see the same crossing.
 */
export interface BudgetCrossing {
  alert: 'budget_warn' | 'budget_exhausted';
  scope: ScopeKind;
  scope_id: string;
  period: { every: string; start: string; end: string } | null;
  /** The largest used/limit fraction over the scope's limits after the step (a refused call: before it). */
  used_fraction: number;
  dedupe_key: string;
}

/** Largest used/limit fraction of a scope's limits; null when it has none. */
export function usedFraction(use: ScopeUse): number | null {
  const limit = use.scope.limit;
  let most: number | null = null;
  const take = (used: number, max: number): void => {
    // A zero limit has no room at all, used or not.
    const f = max === 0 ? 1 : used / max;
    most = most === null ? f : Math.max(most, f);
  };
  if (limit?.max_tokens !== undefined) take(use.tokens, limit.max_tokens);
  if (limit?.max_cost !== undefined) take(use.cost, fromMoney(limit.max_cost));
  return most;
}

function crossing(alert: BudgetCrossing['alert'], use: ScopeUse, fraction: number): BudgetCrossing {
  const { scope } = use;
  return {
    alert,
    scope: scope.key.kind,
    scope_id: scope.id,
    period: scope.period === null ? null : periodView(scope.period),
    used_fraction: fraction,
    dedupe_key: `${alert}/${scope.totals.scope.replaceAll('\u001f', '/')}`,
  };
}

/** The scopes a charge moved from below to at or past the warn fraction, or to at or past their limit. */
export function crossingsOf(
  config: BudgetConfig,
  before: readonly ScopeUse[],
  after: readonly ScopeUse[],
): BudgetCrossing[] {
  if (config.mode === 'off') return [];
  const warnAt = config.warn_at_fraction ?? 0.8;
  const out: BudgetCrossing[] = [];
  after.forEach((use, i) => {
    const now = usedFraction(use);
    const was = usedFraction(before[i] as ScopeUse) ?? 0;
    if (now === null) return;
    if (was < warnAt && now >= warnAt) out.push(crossing('budget_warn', use, now));
    if (was < 1 && now >= 1) out.push(crossing('budget_exhausted', use, now));
  });
  return out;
}

/** A refused call's exhausted scopes: each is reported as exhausted (once per period, by its dedupe key). */
export function exhaustedBy(
  config: BudgetConfig,
  uses: readonly ScopeUse[],
  violations: readonly LimitViolation[],
): BudgetCrossing[] {
  if (config.mode === 'off') return [];
  return uses
    .filter((u) =>
      violations.some(
        (v) => v.code === 'BUDGET_EXHAUSTED' && v.scope === u.scope.key.kind && v.scope_id === u.scope.id,
      ),
    )
    .map((u) => crossing('budget_exhausted', u, usedFraction(u) ?? 1));
}
