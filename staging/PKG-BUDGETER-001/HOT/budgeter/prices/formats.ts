import { CpError, show } from '#kernel/errors.js';
import type { ModelPrice } from '../config.js';

/**
 * The two price catalogues the ecosystem maintains, read into the budget's price shape:
 * - LiteLLM's `model_prices_and_context_window.json` (github.com/BerriAI/litellm): `{<model>: {litellm_provider, mode,
 *   input_cost_per_token, output_cost_per_token, cache_read_input_token_cost, cache_creation_input_token_cost,
 *   cache_creation_input_token_cost_above_1hr, max_input_tokens, …}}`, costs in USD per token, plus a `sample_spec`
 *   entry documenting the fields;
 * - models.dev's `api.json` (github.com/sst/models.dev): `{<provider>: {id, name, models: {<model>: {cost: {input,
 *   output, cache_read, cache_write, context_over_200k?}, limit: {context, output}}}}}`, costs in USD per million.
 * A file is untrusted: a price that is not a finite number in 0..MAX_PER_MTOK refuses the whole file.
 */
export type PriceFormat = 'litellm' | 'models.dev';

export interface ImportedModel {
  price: ModelPrice;
  /** Where the file says the model is served (LiteLLM's litellm_provider, models.dev's provider key). */
  provider: string;
  /** The context window the file gives, when it gives one. */
  context_window: number | null;
}

export interface ParsedPrices {
  format: PriceFormat;
  models: Map<string, ImportedModel>;
  /** Entries the budget cannot price per token (images, audio, rerank…) or that carry no token price. */
  skipped: number;
  /** Model ids several providers list at different prices (models.dev without --provider): listed, not imported. */
  conflicts: string[];
}

/** The budget schema's ceiling for a price per million tokens. */
export const MAX_PER_MTOK = 1_000_000;
/** The most models one file may describe: the real catalogues hold a few thousand. */
export const MAX_MODELS = 50_000;
const MAX_MODEL_ID = 200;
const FORBIDDEN_IDS = new Set(['__proto__', 'constructor', 'prototype']);
/** LiteLLM modes priced per token that a call through cplane can be (chat, completions, responses, embeddings). */
const LITELLM_MODES = new Set(['chat', 'completion', 'responses', 'embedding']);

function invalid(source: string, message: string, details: Record<string, unknown>): CpError {
  return new CpError('ERR_PRICES_FILE_INVALID', `price file ${show(source, 240)} ${message}`, {
    hint: 'nothing was imported; fix or replace the file (LiteLLM model_prices_and_context_window.json or models.dev api.json)',
    details: { source, ...details },
  });
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Per-token and per-million values alike come out per million, rounded to 12 significant digits (3e-06 → 3). */
function perMtok(value: number, scale: number): number {
  return Number((value * scale).toPrecision(12));
}

function checkId(source: string, id: string): void {
  if (id.length === 0 || id.length > MAX_MODEL_ID || FORBIDDEN_IDS.has(id))
    throw invalid(source, `names a model ${show(id, 80)} no price table can hold`, { model: id.slice(0, 80) });
}

/** One price field: absent is undefined; anything but a finite number in 0..MAX_PER_MTOK (per million) refuses the file. */
function readCost(
  source: string,
  model: string,
  entry: Record<string, unknown>,
  field: string,
  scale: number,
): number | undefined {
  if (!Object.hasOwn(entry, field) || entry[field] === null || entry[field] === undefined) return undefined;
  const raw = entry[field];
  const value = typeof raw === 'number' ? perMtok(raw, scale) : Number.NaN;
  if (typeof raw !== 'number' || !Number.isFinite(value) || value < 0 || value > MAX_PER_MTOK) {
    throw invalid(source, `prices ${show(model, 80)} at ${field} = ${show(raw, 40)}, not a price`, {
      model,
      field,
      value: typeof raw === 'number' ? String(raw) : typeof raw,
    });
  }
  return value;
}

/** Missing cache prices fall back to the input price (never 0: a missing discount is no discount). */
function toPrice(input: number, output: number, read?: number, write5m?: number, write1h?: number): ModelPrice {
  return {
    input_per_mtok: input,
    output_per_mtok: output,
    cache_read_per_mtok: read ?? input,
    cache_write_5m_per_mtok: write5m ?? input,
    cache_write_1h_per_mtok: write1h ?? write5m ?? input,
  };
}

function contextOf(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : null;
}

function parseLiteLLM(source: string, root: Record<string, unknown>, providers: readonly string[]): ParsedPrices {
  const models = new Map<string, ImportedModel>();
  let skipped = 0;
  for (const [id, entry] of Object.entries(root)) {
    if (id === 'sample_spec') continue;
    if (!isObject(entry)) throw invalid(source, `entry ${show(id, 80)} is not an object`, { model: id.slice(0, 80) });
    const provider = typeof entry.litellm_provider === 'string' ? entry.litellm_provider : '';
    const mode = typeof entry.mode === 'string' ? entry.mode : 'chat';
    if (!LITELLM_MODES.has(mode) || (providers.length > 0 && !providers.includes(provider))) {
      skipped++;
      continue;
    }
    checkId(source, id);
    const input = readCost(source, id, entry, 'input_cost_per_token', 1e6);
    const output = readCost(source, id, entry, 'output_cost_per_token', 1e6) ?? (mode === 'embedding' ? 0 : undefined);
    const read = readCost(source, id, entry, 'cache_read_input_token_cost', 1e6);
    const write = readCost(source, id, entry, 'cache_creation_input_token_cost', 1e6);
    const write1h = readCost(source, id, entry, 'cache_creation_input_token_cost_above_1hr', 1e6);
    if (input === undefined || output === undefined) {
      skipped++;
      continue;
    }
    models.set(id, {
      price: toPrice(input, output, read, write, write1h),
      provider,
      context_window: contextOf(entry.max_input_tokens),
    });
  }
  return { format: 'litellm', models, skipped, conflicts: [] };
}

function samePrice(a: ModelPrice, b: ModelPrice): boolean {
  return (Object.keys(a) as (keyof ModelPrice)[]).every((k) => a[k] === b[k]);
}

function parseModelsDev(source: string, root: Record<string, unknown>, providers: readonly string[]): ParsedPrices {
  const models = new Map<string, ImportedModel>();
  const conflicted = new Set<string>();
  let skipped = 0;
  // With --provider the operator's order is the precedence; without it a model two providers price differently is
  // a conflict (OpenRouter's and Azure's "gpt-4.1" are not OpenAI's).
  const order = providers.length > 0 ? providers.filter((p) => Object.hasOwn(root, p)) : Object.keys(root);
  for (const providerId of order) {
    const provider = root[providerId];
    if (!isObject(provider) || !isObject(provider.models))
      throw invalid(source, `provider ${show(providerId, 80)} has no "models" object`, {
        provider: providerId.slice(0, 80),
      });
    for (const [id, entry] of Object.entries(provider.models)) {
      if (!isObject(entry)) throw invalid(source, `model ${show(id, 80)} is not an object`, { model: id.slice(0, 80) });
      if (entry.cost === undefined) {
        skipped++;
        continue;
      }
      if (!isObject(entry.cost))
        throw invalid(source, `model ${show(id, 80)} has a "cost" that is not an object`, { model: id.slice(0, 80) });
      checkId(source, id);
      const cost = entry.cost;
      const input = readCost(source, id, cost, 'input', 1);
      const output = readCost(source, id, cost, 'output', 1);
      if (input === undefined || output === undefined) {
        skipped++;
        continue;
      }
      const write = readCost(source, id, cost, 'cache_write', 1);
      const price = toPrice(input, output, readCost(source, id, cost, 'cache_read', 1), write, write);
      const limit = isObject(entry.limit) ? entry.limit : {};
      const seen = models.get(id);
      if (seen === undefined) models.set(id, { price, provider: providerId, context_window: contextOf(limit.context) });
      else if (providers.length === 0 && !samePrice(seen.price, price)) conflicted.add(id);
    }
  }
  for (const id of conflicted) models.delete(id);
  return { format: 'models.dev', models, skipped, conflicts: [...conflicted].sort() };
}

/** Which catalogue a parsed file is: models.dev nests models under providers, LiteLLM keys models at the top. */
export function detectFormat(root: Record<string, unknown>): PriceFormat | null {
  const values = Object.entries(root).filter(([k]) => k !== 'sample_spec');
  if (values.length === 0) return null;
  const [, first] = values[0] as [string, unknown];
  if (isObject(first) && isObject(first.models)) return 'models.dev';
  if (isObject(first) && ('litellm_provider' in first || 'input_cost_per_token' in first || 'mode' in first))
    return 'litellm';
  return null;
}

/** Read a parsed catalogue; `providers` narrows it to those providers (in that order of precedence). */
export function parsePriceFile(
  source: string,
  value: unknown,
  options: { format?: PriceFormat | undefined; providers?: readonly string[] | undefined } = {},
): ParsedPrices {
  if (!isObject(value)) throw invalid(source, 'is not a JSON object', {});
  // models.dev's published schema once wrapped the providers in {"providers": …}; the live api.json does not.
  const root = isObject(value.providers) && Object.keys(value).length === 1 ? value.providers : value;
  if (Object.keys(root).length > MAX_MODELS)
    throw invalid(source, `holds ${Object.keys(root).length} entries, over ${MAX_MODELS}`, { limit: MAX_MODELS });
  const format = options.format ?? detectFormat(root);
  if (format === null)
    throw invalid(source, 'is neither a LiteLLM nor a models.dev price file', { keys: Object.keys(root).slice(0, 5) });
  const providers = options.providers ?? [];
  const parsed = format === 'litellm' ? parseLiteLLM(source, root, providers) : parseModelsDev(source, root, providers);
  if (parsed.models.size > MAX_MODELS)
    throw invalid(source, `prices ${parsed.models.size} models, over ${MAX_MODELS}`, { limit: MAX_MODELS });
  return parsed;
}
