import type { BudgetConfig, ScopeKind } from './config.js';
import type { Scope } from './scopes.js';
import type { BudgetState, WindowRow } from './store.js';

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
function currentWindow(store: BudgetState, scope: Scope, windowMs: number, now: number): WindowRow {
  const start = Math.floor(now / windowMs) * windowMs;
  const row = store.window(scope.key);
  return row && row.window_start === start ? row : { window_start: start, requests: 0, tokens: 0 };
}

/** The current window of every rate-limited scope, read once per transaction. */
export interface ScopeWindow {
  scope: Scope;
  windowMs: number;
  window: WindowRow;
}

export function readWindows(
  config: BudgetConfig,
  store: BudgetState,
  scopes: readonly Scope[],
  now: number,
): ScopeWindow[] {
  const out: ScopeWindow[] = [];
  for (const scope of scopes) {
    const rate = config.rate_limits[scope.key.kind];
    if (rate) out.push({ scope, windowMs: rate.window_ms, window: currentWindow(store, scope, rate.window_ms, now) });
  }
  return out;
}

export function rateViolations(
  config: BudgetConfig,
  windows: readonly ScopeWindow[],
  tokens: number,
  now: number,
): RateViolation[] {
  const out: RateViolation[] = [];
  for (const { scope, window } of windows) {
    const rate = config.rate_limits[scope.key.kind];
    if (!rate) continue;
    const base = {
      code: 'RATE_LIMITED' as const,
      scope: scope.key.kind,
      scope_id: scope.id,
      window_ms: rate.window_ms,
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
export function chargeRate(store: BudgetState, windows: readonly ScopeWindow[], tokens: number): void {
  for (const { scope, window } of windows) {
    store.putWindow(scope.key, {
      window_start: window.window_start,
      requests: window.requests + 1,
      tokens: window.tokens + tokens,
    });
  }
}

/** Give back a released request's share of the window it was counted in, if that window is still current. */
export function refundRate(
  config: BudgetConfig,
  store: BudgetState,
  scopes: readonly Scope[],
  tokens: number,
  chargedAt: number,
): void {
  adjustWindows(config, store, scopes, chargedAt, -1, -tokens);
}

/**
 * A settled request's window holds what it used, not its reservation: the reservation's upper bound is replaced by
 * the charged tokens (the settled usage; unknown usage is charged as the reservation, so it stays in full), if the
 * window it was counted in is still current. A window since rolled over was never charged for it.
 */
export function settleRate(
  config: BudgetConfig,
  store: BudgetState,
  scopes: readonly Scope[],
  reservedTokens: number,
  chargedTokens: number,
  chargedAt: number,
): void {
  if (chargedTokens !== reservedTokens)
    adjustWindows(config, store, scopes, chargedAt, 0, chargedTokens - reservedTokens);
}

function adjustWindows(
  config: BudgetConfig,
  store: BudgetState,
  scopes: readonly Scope[],
  chargedAt: number,
  requests: number,
  tokens: number,
): void {
  for (const scope of scopes) {
    const rate = config.rate_limits[scope.key.kind];
    if (!rate) continue;
    const row = store.window(scope.key);
    if (!row || row.window_start !== Math.floor(chargedAt / rate.window_ms) * rate.window_ms) continue;
    store.putWindow(scope.key, {
      window_start: row.window_start,
      requests: Math.max(0, row.requests + requests),
      tokens: Math.max(0, row.tokens + tokens),
    });
  }
}
