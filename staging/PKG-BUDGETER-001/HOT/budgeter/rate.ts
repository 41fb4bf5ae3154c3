import type { BudgetConfig, ScopeKind } from './config.js';
import type { Scope } from './scopes.js';
import type { BudgetStore, WindowRow } from './store.js';

export interface RateViolation {
  code: 'RATE_LIMITED';
  scope: ScopeKind;
  scope_id: string;
  limit: 'max_requests' | 'max_tokens';
  limit_value: number;
  used: number;
  requested: number;
  window_ms: number;
  retry_after_ms: number;
}

/** Fixed windows aligned to the epoch: `floor(now / window_ms)`; the window row resets when a new window starts. */
function currentWindow(store: BudgetStore, scope: Scope, windowMs: number, now: number): WindowRow {
  const start = Math.floor(now / windowMs) * windowMs;
  const row = store.window(scope.key);
  return row && row.window_start === start ? row : { window_start: start, requests: 0, tokens: 0 };
}

export function rateViolations(config: BudgetConfig, store: BudgetStore, scopes: readonly Scope[], tokens: number, now: number): RateViolation[] {
  const out: RateViolation[] = [];
  for (const scope of scopes) {
    const rate = config.rate_limits[scope.key.kind];
    if (!rate) continue;
    const window = currentWindow(store, scope, rate.window_ms, now);
    const base = {
      code: 'RATE_LIMITED' as const, scope: scope.key.kind, scope_id: scope.id, window_ms: rate.window_ms,
      retry_after_ms: window.window_start + rate.window_ms - now,
    };
    if (rate.max_requests !== undefined && window.requests + 1 > rate.max_requests) {
      out.push({ ...base, limit: 'max_requests', limit_value: rate.max_requests, used: window.requests, requested: 1 });
    }
    if (rate.max_tokens !== undefined && window.tokens + tokens > rate.max_tokens) {
      out.push({ ...base, limit: 'max_tokens', limit_value: rate.max_tokens, used: window.tokens, requested: tokens });
    }
  }
  return out;
}

/** Count one request of `tokens` in every rate-limited scope's current window. */
export function chargeRate(config: BudgetConfig, store: BudgetStore, scopes: readonly Scope[], tokens: number, now: number): void {
  for (const scope of scopes) {
    const rate = config.rate_limits[scope.key.kind];
    if (!rate) continue;
    const window = currentWindow(store, scope, rate.window_ms, now);
    store.putWindow(scope.key, { window_start: window.window_start, requests: window.requests + 1, tokens: window.tokens + tokens });
  }
}
