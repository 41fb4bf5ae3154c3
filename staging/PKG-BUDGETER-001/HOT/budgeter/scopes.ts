import { type BudgetConfig, type Limit, type ScopeKind, limitFor, periodFor } from './config.js';
import { type PeriodSpan, periodAt } from './periods.js';
import { fromMoney } from './pricing.js';
import { type BudgetState, type ScopeKey, type TotalsRow, scopeKeyOf } from './store.js';

/**
 * One scope a request is charged to: its key in the store (its rate window and calls in flight), the key of its
 * totals (the key with the period of a limit that resets), its own id, its configured limit and that period.
 */
export interface Scope {
  key: ScopeKey;
  totals: ScopeKey;
  id: string;
  limit: Limit | null;
  period: PeriodSpan | null;
}

export interface ScopeIds {
  session_id: string;
  work_order_id?: string | undefined;
  agent_id?: string | undefined;
  budget_scope?: string | undefined;
}

/**
 * The nested scopes of a request made at `at` (epoch ms): its session, its work order within the session (when
 * given), and its agent within that work order (or directly within the session when there is no work order); and,
 * for a call made with a key that names a budget scope, that key scope. A step on a reservation passes the time it
 * was made, so its settlement counts in the period it was reserved in.
 */
export function scopesFor(config: BudgetConfig, ids: ScopeIds, at: number): Scope[] {
  const session = ids.session_id;
  const workOrder = ids.work_order_id ?? '';
  const out: Scope[] = [scope(config, 'session', session, session, '', '', at)];
  if (ids.work_order_id !== undefined) out.push(scope(config, 'work_order', workOrder, session, workOrder, '', at));
  if (ids.agent_id !== undefined) out.push(scope(config, 'agent', ids.agent_id, session, workOrder, ids.agent_id, at));
  if (ids.budget_scope !== undefined) {
    // Not nested in the session: a key's budget spans every session it is used in.
    out.push(scope(config, 'key', ids.budget_scope, '', '', ids.budget_scope, at));
  }
  return out;
}

function scope(
  config: BudgetConfig,
  kind: ScopeKind,
  id: string,
  session: string,
  workOrder: string,
  agent: string,
  at: number,
): Scope {
  const every = periodFor(config, kind, id);
  const period = every === null ? null : periodAt(every, at);
  const base = key(kind, session, workOrder, agent);
  return {
    key: base,
    totals: period === null ? base : key(kind, session, workOrder, agent, period.label),
    id,
    limit: limitFor(config, kind, id),
    period,
  };
}

const key = scopeKeyOf;

export interface LimitViolation {
  code: 'BUDGET_EXHAUSTED' | 'BUDGET_PRICE_UNKNOWN';
  scope: ScopeKind;
  scope_id: string;
  limit: 'max_tokens' | 'max_cost';
  /** Limit, usage and request in tokens, or in nano-units of cost (converted for reports). */
  limit_value: number;
  used: number;
  requested: number | null;
}

/** A scope with what it has used so far (reserved + settled), in tokens and nano-units. */
export interface ScopeUse {
  scope: Scope;
  tokens: number;
  cost: number;
}

/** Read each scope's totals once per transaction; checks and "remaining" work on this snapshot. */
export function readUse(store: BudgetState, scopes: readonly Scope[]): ScopeUse[] {
  const totals: TotalsRow[] = store.totals(scopes.map((s) => s.totals));
  return scopes.map((scope, i) => {
    const t = totals[i] as TotalsRow;
    return { scope, tokens: t.reserved_tokens + t.settled_tokens, cost: t.reserved_cost + t.settled_cost };
  });
}

export function addUse(uses: readonly ScopeUse[], tokens: number, cost: number): ScopeUse[] {
  return uses.map((u) => ({ scope: u.scope, tokens: u.tokens + tokens, cost: u.cost + cost }));
}

/** Which limits a charge of `tokens` and `cost` (nano-units, null = unknown) would break; an unknown cost never fits a cost limit. */
export function limitViolations(uses: readonly ScopeUse[], tokens: number, cost: number | null): LimitViolation[] {
  const out: LimitViolation[] = [];
  for (const { scope, tokens: used, cost: usedCost } of uses) {
    const limit = scope.limit;
    if (!limit) continue;
    const base = { scope: scope.key.kind, scope_id: scope.id };
    if (limit.max_tokens !== undefined && used + tokens > limit.max_tokens) {
      out.push({
        ...base,
        code: 'BUDGET_EXHAUSTED',
        limit: 'max_tokens',
        limit_value: limit.max_tokens,
        used,
        requested: tokens,
      });
    }
    if (limit.max_cost !== undefined) {
      const max = fromMoney(limit.max_cost);
      if (cost === null) {
        out.push({
          ...base,
          code: 'BUDGET_PRICE_UNKNOWN',
          limit: 'max_cost',
          limit_value: max,
          used: usedCost,
          requested: null,
        });
      } else if (usedCost + cost > max) {
        out.push({
          ...base,
          code: 'BUDGET_EXHAUSTED',
          limit: 'max_cost',
          limit_value: max,
          used: usedCost,
          requested: cost,
        });
      }
    }
  }
  return out;
}

export interface Remaining {
  tokens: number | null;
  cost: number | null;
}

/** Room left in the tightest limited scope, in tokens and nano-units; null where no scope has such a limit. */
export function remainingOf(uses: readonly ScopeUse[]): Remaining {
  let tokens: number | null = null;
  let cost: number | null = null;
  for (const { scope, tokens: used, cost: usedCost } of uses) {
    if (scope.limit?.max_tokens !== undefined) {
      const left = Math.max(0, scope.limit.max_tokens - used);
      tokens = tokens === null ? left : Math.min(tokens, left);
    }
    if (scope.limit?.max_cost !== undefined) {
      const left = Math.max(0, fromMoney(scope.limit.max_cost) - usedCost);
      cost = cost === null ? left : Math.min(cost, left);
    }
  }
  return { tokens, cost };
}
