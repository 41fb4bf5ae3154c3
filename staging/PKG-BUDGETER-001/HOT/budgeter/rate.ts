import type { BudgetConfig, RateLimit, ScopeKind } from './config.js';
import type { Scope } from './scopes.js';
import type { BudgetState, ScopeKey, WindowRow } from './store.js';

export interface RateViolation {
  code: 'RATE_LIMITED';
  scope: ScopeKind;
  scope_id: string;
  limit: 'max_requests' | 'max_tokens' | 'max_in_flight';
  limit_value: number;
  used: number;
  requested: number;
  window_ms: number;
  retry_after_ms: number;
}

/**
 * A scope's rate limit: its kind's, with the values its own id overrides (`by_id`: this key, this team). The window
 * length is the kind's, so every id's windows stay aligned.
 */
export function rateFor(config: BudgetConfig, scope: Scope): RateLimit | undefined {
  const base = config.rate_limits[scope.key.kind];
  // The id's own entry only: an id of "__proto__" or "constructor" must not reach Object.prototype.
  const own = base?.by_id !== undefined && Object.hasOwn(base.by_id, scope.id) ? base.by_id[scope.id] : undefined;
  return own === undefined ? base : { ...base, ...own, window_ms: (base as RateLimit).window_ms };
}

/** Whether a kind's rate limit caps calls in flight, by default or for some id. */
function capsInFlight(rate: RateLimit | undefined): boolean {
  if (rate === undefined) return false;
  if (rate.max_in_flight !== undefined) return true;
  return Object.values(rate.by_id ?? {}).some((own) => own.max_in_flight !== undefined);
}

/** When a call refused for `max_in_flight` is told to try again: a call in flight may end any moment. */
export const IN_FLIGHT_RETRY_MS = 1000;

/**
 * A scope's count of calls in flight is kept beside its rate window, in the same table, under the scope's key with a
 * suffix: each store (SQLite, and PostgreSQL under the step's scope locks) reads and writes it like a window.
 */
export function inFlightKey(key: ScopeKey): ScopeKey {
  return { ...key, scope: `${key.scope}\u001fin_flight` };
}

/** The in-flight counters a step on these scopes touches (the scopes whose kind caps calls in flight). */
export function inFlightKeys(config: BudgetConfig, keys: readonly ScopeKey[]): ScopeKey[] {
  return keys.filter((key) => capsInFlight(config.rate_limits[key.kind])).map(inFlightKey);
}

/** The scopes whose kind caps calls in flight, with how many are in flight now. */
export function readInFlight(
  config: BudgetConfig,
  store: BudgetState,
  scopes: readonly Scope[],
): { scope: Scope; max: number; count: number }[] {
  const out: { scope: Scope; max: number; count: number }[] = [];
  for (const scope of scopes) {
    const max = rateFor(config, scope)?.max_in_flight;
    if (max !== undefined) out.push({ scope, max, count: store.window(inFlightKey(scope.key))?.requests ?? 0 });
  }
  return out;
}

export function inFlightViolations(
  counts: ReturnType<typeof readInFlight>,
  windowMs: (s: Scope) => number,
): RateViolation[] {
  return counts
    .filter(({ max, count }) => count + 1 > max)
    .map(({ scope, max, count }) => ({
      code: 'RATE_LIMITED' as const,
      scope: scope.key.kind,
      scope_id: scope.id,
      limit: 'max_in_flight' as const,
      limit_value: max,
      used: count,
      requested: 1,
      window_ms: windowMs(scope),
      retry_after_ms: IN_FLIGHT_RETRY_MS,
    }));
}

/** One more (or, `by` -1, one fewer) call in flight in each capped scope. */
export function addInFlight(config: BudgetConfig, store: BudgetState, scopes: readonly Scope[], by: number): void {
  for (const { scope, count } of readInFlight(config, store, scopes))
    store.putWindow(inFlightKey(scope.key), { window_start: 0, requests: Math.max(0, count + by), tokens: 0 });
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
    const rate = rateFor(config, scope);
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
    const rate = rateFor(config, scope);
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
    const rate = rateFor(config, scope);
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
