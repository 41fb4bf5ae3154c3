import type { BudgetConfig, ModelPrice } from './config.js';

/** Cost is kept in integer nano-units of the configured currency so sums never drift. */
export const NANO_PER_UNIT = 1e9;

/** Real usage from a provider. Missing cache fields mean "none reported"; missing input/output mean unknown. */
export interface Usage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_read_tokens?: number | null;
  cache_write_5m_tokens?: number | null;
  cache_write_1h_tokens?: number | null;
  /** A cache-write count without a TTL split (OpenAI-style or older Anthropic usage): priced as 5-minute writes. */
  cache_write_tokens?: number | null;
}

export interface NormalizedUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_5m_tokens: number;
  cache_write_1h_tokens: number;
}

export type UsageReading = { known: true; usage: NormalizedUsage } | { known: false; problems: string[] };

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/** Provider usage is untrusted: anything that is not a non-negative integer makes the usage unknown, never 0. */
export function readUsage(raw: unknown): UsageReading {
  if (raw === null || typeof raw !== 'object') return { known: false, problems: ['usage missing'] };
  const u = raw as Record<string, unknown>;
  const problems: string[] = [];
  const required = (key: string): number => {
    if (isCount(u[key])) return u[key];
    problems.push(u[key] === undefined || u[key] === null ? `${key} missing` : `${key} not a token count`);
    return 0;
  };
  const optional = (key: string): number => {
    if (u[key] === undefined || u[key] === null) return 0;
    if (isCount(u[key])) return u[key];
    problems.push(`${key} not a token count`);
    return 0;
  };
  const usage: NormalizedUsage = {
    input_tokens: required('input_tokens'),
    output_tokens: required('output_tokens'),
    cache_read_tokens: optional('cache_read_tokens'),
    cache_write_5m_tokens: optional('cache_write_5m_tokens') + optional('cache_write_tokens'),
    cache_write_1h_tokens: optional('cache_write_1h_tokens'),
  };
  return problems.length > 0 ? { known: false, problems } : { known: true, usage };
}

export function totalTokens(usage: NormalizedUsage): number {
  return usage.input_tokens + usage.output_tokens + usage.cache_read_tokens + usage.cache_write_5m_tokens + usage.cache_write_1h_tokens;
}

function nano(tokens: number, perMtok: number): number {
  return Math.round(tokens * perMtok * (NANO_PER_UNIT / 1e6));
}

/** The cost of real usage in nano-units, or null when the model has no price. */
export function usageCost(price: ModelPrice | null, usage: NormalizedUsage): number | null {
  if (!price) return null;
  return nano(usage.input_tokens, price.input_per_mtok)
    + nano(usage.output_tokens, price.output_per_mtok)
    + nano(usage.cache_read_tokens, price.cache_read_per_mtok)
    + nano(usage.cache_write_5m_tokens, price.cache_write_5m_per_mtok)
    + nano(usage.cache_write_1h_tokens, price.cache_write_1h_per_mtok);
}

/** The cost charged while a call is in flight: estimated input plus the whole output allowance. */
export function reservationCost(config: BudgetConfig, price: ModelPrice | null, inputTokens: number, maxOutputTokens: number): number | null {
  if (!price) return null;
  const inputPrice = config.reserve_input_price === 'highest'
    ? Math.max(price.input_per_mtok, price.cache_write_5m_per_mtok, price.cache_write_1h_per_mtok)
    : price.input_per_mtok;
  return nano(inputTokens, inputPrice) + nano(maxOutputTokens, price.output_per_mtok);
}

export function priceFor(config: BudgetConfig, model: string): ModelPrice | null {
  return Object.hasOwn(config.pricing, model) ? (config.pricing[model] as ModelPrice) : null;
}

/** Nano-units to currency units for reports (null stays null: unknown is never 0). */
export function toMoney(nanoUnits: number | null): number | null {
  return nanoUnits === null ? null : nanoUnits / NANO_PER_UNIT;
}

export function fromMoney(amount: number): number {
  return Math.round(amount * NANO_PER_UNIT);
}
