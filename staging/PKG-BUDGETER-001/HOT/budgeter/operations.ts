import { hash } from 'node:crypto';
import { CpError, show } from '#kernel/errors.js';
import type { BudgetConfig } from './config.js';
import { type BudgetCrossing, crossingsOf, exhaustedBy } from './crossings.js';
import type { ReserveInput } from './input.js';
import { isoTime } from './iso-time.js';
import {
  MAX_USAGE_TOKENS,
  type NormalizedUsage,
  priceFor,
  readUsage,
  reservationCost,
  totalTokens,
  usageCost,
} from './pricing.js';
import {
  addInFlight,
  chargeRate,
  inFlightViolations,
  rateViolations,
  readInFlight,
  rateFor,
  readWindows,
  refundRate,
  settleRate,
} from './rate.js';
import { type BudgetViolation, describeViolation, toViolation } from './results.js';
import { type Remaining, addUse, limitViolations, readUse, remainingOf, scopesFor } from './scopes.js';
import type { BudgetState, ReservationRow } from './store.js';

/** What one transaction decided; turned into the public outcome (and ledger records) after it commits. */
export type ReserveDecision =
  | {
      kind: 'granted';
      row: ReservationRow;
      replayed: boolean;
      warnings: BudgetViolation[];
      remaining: Remaining;
      crossed: BudgetCrossing[];
    }
  | { kind: 'refused'; violations: BudgetViolation[]; message: string; crossed: BudgetCrossing[] };

export interface TxContext {
  config: BudgetConfig;
  store: BudgetState;
  now: number;
}

/** The values a repeated reserve must match; a fixed-order array, so no canonicalisation is needed. */
function paramsKey(input: ReserveInput): string {
  return JSON.stringify([
    input.session_id,
    input.work_order_id ?? null,
    input.agent_id ?? null,
    input.model,
    input.estimated_input_tokens,
    input.max_output_tokens,
    // Only when present, so a reservation made before key scopes replays with the same key.
    ...(input.budget_scope === undefined ? [] : [input.budget_scope]),
  ]);
}

/**
 * What a reservation row keeps of its key: 128 bits of its SHA-256 (base64url, 22 characters). The key repeats
 * the row's own columns, so the row holds only what tells a different replay apart.
 */
function storedParamsKey(key: string): string {
  return hash('sha256', key, 'buffer').subarray(0, 16).toString('base64url');
}

/** Whether a stored key is `key`'s: a row written before the digest holds the key itself (a JSON array). */
function sameParams(stored: string, key: string): boolean {
  return stored.startsWith('[') ? stored === key : stored === storedParamsKey(key);
}

function conflict(requestId: string, what: string): CpError {
  return new CpError(
    'ERR_BUDGET_REQUEST_CONFLICT',
    `request ${show(requestId)} was already ${what} with different values`,
    {
      hint: 'use a new request_id for a different call; the same request_id must repeat the same values',
      details: { request_id: requestId },
    },
  );
}

export function scopeIds(row: ReservationRow) {
  return {
    session_id: row.session_id,
    work_order_id: row.work_order_id === '' ? undefined : row.work_order_id,
    agent_id: row.agent_id === '' ? undefined : row.agent_id,
    budget_scope: row.budget_scope === '' ? undefined : row.budget_scope,
  };
}

/** Check and debit in one BEGIN IMMEDIATE transaction (the caller's): no check-then-debit race between processes. */
export function reserveTx(ctx: TxContext, input: ReserveInput): ReserveDecision {
  const { config, store, now } = ctx;
  const key = paramsKey(input);
  const existing = store.getReservation(input.request_id);
  const scopes = scopesFor(config, input, now);
  const uses = readUse(store, scopes);
  if (existing) {
    if (!sameParams(existing.params_key, key)) throw conflict(input.request_id, 'reserved');
    return { kind: 'granted', row: existing, replayed: true, warnings: [], remaining: remainingOf(uses), crossed: [] };
  }
  const tokens = input.estimated_input_tokens + input.max_output_tokens;
  const cost = reservationCost(priceFor(config, input.model), input.estimated_input_tokens, input.max_output_tokens);
  if (cost !== null && !Number.isSafeInteger(cost)) {
    throw new CpError(
      'ERR_BUDGET_INPUT_INVALID',
      `reserving ${show(tokens)} tokens of ${show(input.model)} costs ${cost} nano-units, beyond what a budget can count`,
      {
        hint: 'ask for fewer tokens (max_tokens)',
        details: { field: 'max_output_tokens', value: input.max_output_tokens },
      },
    );
  }
  const windows = config.mode === 'off' ? [] : readWindows(config, store, scopes, now);
  const broken = config.mode === 'off' ? [] : limitViolations(uses, tokens, cost);
  const violations =
    config.mode === 'off'
      ? []
      : [
          ...broken,
          ...rateViolations(config, windows, tokens, now),
          ...inFlightViolations(readInFlight(config, store, scopes), (s) => rateFor(config, s)?.window_ms ?? 0),
        ].map(toViolation);
  if (config.mode === 'enforce' && violations.length > 0) {
    const message = violations.map(describeViolation).join('; ');
    return { kind: 'refused', violations, message, crossed: exhaustedBy(config, uses, broken) };
  }
  const row: ReservationRow = {
    request_id: input.request_id,
    session_id: input.session_id,
    work_order_id: input.work_order_id ?? '',
    agent_id: input.agent_id ?? '',
    budget_scope: input.budget_scope ?? '',
    model: input.model,
    params_key: storedParamsKey(key),
    state: 'reserved',
    reserved_tokens: tokens,
    reserved_cost: cost,
    charged_tokens: null,
    charged_cost: null,
    actual_tokens: null,
    actual_cost: null,
    usage: null,
    usage_key: null,
    over_budget: violations.length > 0 ? 1 : 0,
    created_at: isoTime(now),
    finished_at: null,
    allocation_entry_id: null,
    settlement_entry_id: null,
  };
  const after = addUse(uses, tokens, cost ?? 0);
  store.insertReservation(row);
  store.addTotals(
    scopes.map((s) => s.totals),
    { reserved_tokens: tokens, reserved_cost: cost ?? 0, requests: 1 },
  );
  chargeRate(store, windows, tokens);
  if (config.mode !== 'off') addInFlight(config, store, scopes, 1);
  return {
    kind: 'granted',
    row,
    replayed: false,
    warnings: violations,
    remaining: remainingOf(after),
    crossed: crossingsOf(config, uses, after),
  };
}

export interface SettleDecision {
  row: ReservationRow;
  /** The row's usage as read (null unknown), or undefined on a replay (read from the row). */
  usage?: NormalizedUsage | null;
  replayed: boolean;
  usageProblems: string[];
  exceeded: BudgetViolation[];
  remaining: Remaining;
  crossed: BudgetCrossing[];
}

function pending(store: BudgetState, requestId: string, action: string): ReservationRow {
  const row = store.getReservation(requestId);
  if (!row) {
    throw new CpError('ERR_BUDGET_UNKNOWN_REQUEST', `no reservation for request ${show(requestId)} to ${action}`, {
      hint: 'reserve the request first; settle and release need the request_id given to reserve',
      details: { request_id: requestId },
    });
  }
  return row;
}

function wrongState(row: ReservationRow, action: string): CpError {
  return new CpError(
    'ERR_BUDGET_REQUEST_STATE',
    `cannot ${action} request ${show(row.request_id)}: it is already ${row.state}`,
    {
      hint: 'a reservation is either settled (the call happened) or released (it did not), once',
      details: { request_id: row.request_id, state: row.state },
    },
  );
}

/**
 * Replace the reservation by the real cost. Unknown usage keeps the reservation charged (tokens and cost) so an
 * unknown never counts as 0; an unpriced model charges its tokens and leaves the cost unknown.
 */
export function settleTx(
  ctx: TxContext,
  requestId: string,
  rawUsage: unknown,
  unknownBecause?: string,
  /** The model the usage is priced at, when not the reservation's (the target of a routed call that answered). */
  pricedAs: string | null = null,
): SettleDecision {
  const { config, store, now } = ctx;
  const row = pending(store, requestId, 'settle');
  const reading =
    unknownBecause === undefined
      ? readPricedUsage(config, pricedAs ?? row.model, rawUsage)
      : { known: false as const, problems: [unknownBecause] };
  const usageKey = reading.known ? usageKeyOf(reading.usage) : JSON.stringify(['unknown', ...reading.problems]);
  const scopes = scopesFor(config, scopeIds(row), Date.parse(row.created_at));
  const uses = readUse(store, scopes);
  const usageProblems = reading.known ? [] : reading.problems;
  if (row.state === 'settled') {
    if (row.usage_key !== usageKey) throw conflict(requestId, 'settled');
    return { row, replayed: true, usageProblems, exceeded: [], remaining: remainingOf(uses), crossed: [] };
  }
  if (row.state !== 'reserved') throw wrongState(row, 'settle');
  const actualTokens = reading.known ? totalTokens(reading.usage) : null;
  const actualCost = reading.known ? reading.cost : null;
  const chargedTokens = actualTokens ?? row.reserved_tokens;
  const chargedCost = reading.known ? actualCost : row.reserved_cost;
  store.addTotals(
    scopes.map((s) => s.totals),
    {
      reserved_tokens: -row.reserved_tokens,
      reserved_cost: -(row.reserved_cost ?? 0),
      settled_tokens: chargedTokens,
      settled_cost: chargedCost ?? 0,
      unknown_cost_requests: actualCost === null ? 1 : 0,
    },
  );
  if (config.mode !== 'off') {
    settleRate(config, store, scopes, row.reserved_tokens, chargedTokens, Date.parse(row.created_at));
    addInFlight(config, store, scopes, -1);
  }
  const after = addUse(uses, chargedTokens - row.reserved_tokens, (chargedCost ?? 0) - (row.reserved_cost ?? 0));
  // Checking a zero-size charge against the new totals finds every limit the real usage pushed past.
  const exceeded = config.mode === 'off' ? [] : limitViolations(after, 0, 0).map(toViolation);
  const finished: ReservationRow = {
    ...row,
    state: 'settled',
    charged_tokens: chargedTokens,
    charged_cost: chargedCost,
    actual_tokens: actualTokens,
    actual_cost: actualCost,
    // The usage is its key's five counts (usageOfRow reads it back): the row keeps them once.
    usage: null,
    usage_key: usageKey,
    over_budget: row.over_budget === 1 || exceeded.length > 0 ? 1 : 0,
    finished_at: isoTime(now),
  };
  store.finishReservation(finished);
  const crossed = crossingsOf(config, uses, after);
  const usage = reading.known ? reading.usage : null;
  return { row: finished, usage, replayed: false, usageProblems, exceeded, remaining: remainingOf(after), crossed };
}

/** A known usage's settle key: its five counts in a fixed order (usageOfRow reads them back). */
function usageKeyOf(usage: NormalizedUsage): string {
  return JSON.stringify([
    usage.input_tokens,
    usage.output_tokens,
    usage.cache_read_tokens,
    usage.cache_write_5m_tokens,
    usage.cache_write_1h_tokens,
  ]);
}

/** Usage with its cost; a cost too large to count in nano-units exactly makes the usage unknown, like any other malformed value. */
function readPricedUsage(
  config: BudgetConfig,
  model: string,
  rawUsage: unknown,
): { known: true; usage: NormalizedUsage; cost: number | null } | { known: false; problems: string[] } {
  const reading = readUsage(rawUsage, config.max_usage_tokens ?? MAX_USAGE_TOKENS);
  if (!reading.known) return reading;
  const cost = usageCost(priceFor(config, model), reading.usage);
  if (cost !== null && !Number.isSafeInteger(cost))
    return { known: false, problems: [`usage cost ${cost} nano-units beyond ${Number.MAX_SAFE_INTEGER}`] };
  return { known: true, usage: reading.usage, cost };
}

export function releaseTx(ctx: TxContext, requestId: string): { row: ReservationRow; replayed: boolean } {
  const { store, now } = ctx;
  const row = pending(store, requestId, 'release');
  if (row.state === 'released') return { row, replayed: true };
  if (row.state !== 'reserved') throw wrongState(row, 'release');
  const scopes = scopesFor(ctx.config, scopeIds(row), Date.parse(row.created_at));
  store.addTotals(
    scopes.map((s) => s.totals),
    {
      reserved_tokens: -row.reserved_tokens,
      reserved_cost: -(row.reserved_cost ?? 0),
      requests: -1,
    },
  );
  // The call never reached the provider, so it should not hold a rate-limit slot either.
  if (ctx.config.mode !== 'off') {
    refundRate(ctx.config, store, scopes, row.reserved_tokens, Date.parse(row.created_at));
    addInFlight(ctx.config, store, scopes, -1);
  }
  const finished: ReservationRow = { ...row, state: 'released', finished_at: isoTime(now) };
  store.finishReservation(finished);
  return { row: finished, replayed: false };
}
