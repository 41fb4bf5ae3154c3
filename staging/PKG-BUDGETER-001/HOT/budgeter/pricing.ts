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

/** The default largest token count a usage value may hold (the config's max_usage_tokens). */
export const MAX_USAGE_TOKENS = Number.MAX_SAFE_INTEGER;

function describe(value: unknown): string {
  if (typeof value === 'string') return 'a string';
  if (typeof value === 'number') return Number.isNaN(value) ? 'NaN' : String(value);
  return Array.isArray(value) ? 'an array' : typeof value;
}

/**
 * Provider usage is untrusted: anything that is not an integer in 0..maxTokens (and whose total stays a safe
 * integer) makes the usage unknown, never 0 and never a settlement that fails.
 */
export function readUsage(raw: unknown, maxTokens: number = MAX_USAGE_TOKENS): UsageReading {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    return { known: false, problems: ['usage missing'] };
  const u = raw as Record<string, unknown>;
  const problems: string[] = [];
  const count = (key: string, required: boolean): number => {
    const value = Object.hasOwn(u, key) ? u[key] : undefined;
    if (value === undefined || value === null) {
      if (required) problems.push(`${key} missing`);
      return 0;
    }
    if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 && value <= maxTokens) return value;
    problems.push(
      typeof value === 'number' && Number.isSafeInteger(value) && value > maxTokens
        ? `${key} ${value} beyond the maximum ${maxTokens}`
        : `${key} not a token count (${describe(value)})`,
    );
    return 0;
  };
  const usage: NormalizedUsage = {
    input_tokens: count('input_tokens', true),
    output_tokens: count('output_tokens', true),
    cache_read_tokens: count('cache_read_tokens', false),
    cache_write_5m_tokens: count('cache_write_5m_tokens', false) + count('cache_write_tokens', false),
    cache_write_1h_tokens: count('cache_write_1h_tokens', false),
  };
  if (problems.length === 0 && !Number.isSafeInteger(totalTokens(usage)))
    problems.push(`total tokens ${totalTokens(usage)} beyond ${Number.MAX_SAFE_INTEGER}`);
  return problems.length > 0 ? { known: false, problems } : { known: true, usage };
}

export function totalTokens(usage: NormalizedUsage): number {
  return (
    usage.input_tokens +
    usage.output_tokens +
    usage.cache_read_tokens +
    usage.cache_write_5m_tokens +
    usage.cache_write_1h_tokens
  );
}

function nano(tokens: number, perMtok: number): number {
  return Math.round(tokens * perMtok * (NANO_PER_UNIT / 1e6));
}

/** The cost of real usage in nano-units, or null when the model has no price (nothing used costs 0 at any price). */
export function usageCost(price: ModelPrice | null, usage: NormalizedUsage): number | null {
  if (!price) {
    const buckets = [
      usage.input_tokens,
      usage.output_tokens,
      usage.cache_read_tokens,
      usage.cache_write_5m_tokens,
      usage.cache_write_1h_tokens,
    ];
    return buckets.every((n) => n === 0) ? 0 : null;
  }
  return (
    nano(usage.input_tokens, price.input_per_mtok) +
    nano(usage.output_tokens, price.output_per_mtok) +
    nano(usage.cache_read_tokens, price.cache_read_per_mtok) +
    nano(usage.cache_write_5m_tokens, price.cache_write_5m_per_mtok) +
    nano(usage.cache_write_1h_tokens, price.cache_write_1h_per_mtok)
  );
}

/** Rounding slack of a usage cost: each of its five buckets is rounded to the nearest nano-unit (at most +0.5 each), plus
 * floating-point error far below one nano-unit for any cost a limit can hold. */
const USAGE_ROUNDING_SLACK = 5;

/**
 * The cost charged while a call is in flight, an upper bound of what its usage can cost: the input bound priced at
 * the most expensive input-side bucket (a prompt token may turn out to be a cache write), the whole output
 * allowance, and the per-bucket rounding of usageCost. Null when the model has no price.
 */
export function reservationCost(price: ModelPrice | null, inputTokens: number, maxOutputTokens: number): number | null {
  // A call bounded to no tokens (count_tokens, models) costs nothing, priced or not.
  if (inputTokens === 0 && maxOutputTokens === 0) return 0;
  if (!price) return null;
  const inputPrice = Math.max(
    price.input_per_mtok,
    price.cache_read_per_mtok,
    price.cache_write_5m_per_mtok,
    price.cache_write_1h_per_mtok,
  );
  return (
    Math.ceil(inputTokens * inputPrice * (NANO_PER_UNIT / 1e6)) +
    Math.ceil(maxOutputTokens * price.output_per_mtok * (NANO_PER_UNIT / 1e6)) +
    (inputPrice > 0 || price.output_per_mtok > 0 ? USAGE_ROUNDING_SLACK : 0)
  );
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
