import { CpError, isCpError, show } from '#kernel/errors.js';
import { READ_LIMITS, readTextBounded } from '#kernel/bounded-read.js';
import { changeConfig, type ConfigChangeResult } from '#kernel/config/change.js';
import { defaultConfigPath, readDefaultConfig } from '#kernel/config/effective.js';
import { readOverrides } from '#kernel/config/overrides.js';
import { parseJsonBounded } from '#kernel/json-depth.js';
import type { ModelPrice } from '../config.js';
import { parsePriceFile, type ParsedPrices, type PriceFormat } from './formats.js';

/**
 * The price table as two layers: the one the budgeter package ships (`HOT/config/budget.json`) and the operator's
 * (`budget.pricing` in the operator config, written by `config set` and `prices import`). The operator's wins.
 */
export type PriceSource = 'shipped' | 'operator' | 'operator over shipped';

export interface PriceRow extends ModelPrice {
  model: string;
  source: PriceSource;
}

/** The largest price file read: LiteLLM's is ~1.6 MB, models.dev's smaller. */
export const MAX_PRICE_FILE_BYTES = 32 * 1024 * 1024;

type PriceMap = Record<string, ModelPrice>;

function pricingOf(value: unknown): PriceMap {
  if (value === null || typeof value !== 'object') return {};
  const pricing = (value as { pricing?: unknown }).pricing;
  return pricing !== null && typeof pricing === 'object' ? (pricing as PriceMap) : {};
}

function layers(root: string): { shipped: PriceMap; operator: PriceMap } {
  return {
    shipped: pricingOf(readDefaultConfig(defaultConfigPath(root, 'budget'))),
    operator: pricingOf(readOverrides(root).value.overrides.budget),
  };
}

/** The effective table, one row per model in name order, each naming the layer its price comes from. */
export function priceTable(root: string): PriceRow[] {
  const { shipped, operator } = layers(root);
  const models = [...new Set([...Object.keys(shipped), ...Object.keys(operator)])].sort();
  // A null in the operator layer unsets the shipped price (`config set budget.pricing.m null`).
  return models.flatMap((model) => {
    if (operator[model] === null) return [];
    const own = Object.hasOwn(operator, model);
    const inShipped = Object.hasOwn(shipped, model);
    const price = (own ? operator[model] : shipped[model]) as ModelPrice;
    const source: PriceSource = own ? (inShipped ? 'operator over shipped' : 'operator') : 'shipped';
    return [{ model, source, ...price }];
  });
}

export interface PriceChange {
  model: string;
  before: ModelPrice;
  after: ModelPrice;
}

export interface ImportPlan {
  source: string;
  format: PriceFormat;
  /** Models no layer priced. */
  added: string[];
  /** Models whose effective price the import moves. */
  changed: PriceChange[];
  unchanged: number;
  /** Models the shipped table prices differently, left at the shipped price (pass overrideShipped to replace). */
  kept_shipped: PriceChange[];
  skipped: number;
  conflicts: string[];
}

function samePrice(a: ModelPrice, b: ModelPrice): boolean {
  return (Object.keys(b) as (keyof ModelPrice)[]).every((k) => a[k] === b[k]);
}

/** Read and parse a price file; unreadable, not JSON, or hostile is one coded error and nothing else happens. */
export function readPriceFile(
  path: string,
  options: { format?: PriceFormat | undefined; providers?: readonly string[] | undefined } = {},
): ParsedPrices {
  let text: string;
  try {
    text = readTextBounded(path, { maxBytes: MAX_PRICE_FILE_BYTES, what: 'the price file', regularFile: true });
  } catch (cause) {
    if (isCpError(cause) && cause.code !== 'ERR_INPUT_UNREADABLE') throw cause;
    throw new CpError('ERR_PRICES_FILE_INVALID', `cannot read the price file ${show(path, 240)}`, {
      hint: 'pass a readable LiteLLM or models.dev JSON file',
      details: { source: path },
      cause,
    });
  }
  let value: unknown;
  try {
    value = parseJsonBounded(text);
  } catch (cause) {
    throw new CpError(
      'ERR_PRICES_FILE_INVALID',
      `price file ${show(path, 240)} is not JSON: ${(cause as Error).message}`,
      {
        hint: 'nothing was imported; fetch the file again',
        details: { source: path },
        cause,
      },
    );
  }
  return parsePriceFile(path, value, options);
}

/** What importing `parsed` would change, and the operator layer it would leave. */
export function planImport(
  root: string,
  parsed: ParsedPrices,
  source: string,
  options: { overrideShipped?: boolean } = {},
): { plan: ImportPlan; operator: PriceMap } {
  const { shipped, operator } = layers(root);
  const next: PriceMap = { ...operator };
  const plan: ImportPlan = {
    source,
    format: parsed.format,
    added: [],
    changed: [],
    unchanged: 0,
    kept_shipped: [],
    skipped: parsed.skipped,
    conflicts: parsed.conflicts,
  };
  for (const [model, { price }] of [...parsed.models].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const layered = Object.hasOwn(operator, model);
    const own = layered ? (operator[model] ?? undefined) : undefined;
    const base = Object.hasOwn(shipped, model) ? shipped[model] : undefined;
    const current = layered ? own : base;
    if (current !== undefined && samePrice(current, price)) {
      plan.unchanged++;
      continue;
    }
    if (!layered && base !== undefined && !options.overrideShipped) {
      plan.kept_shipped.push({ model, before: base, after: price });
      continue;
    }
    next[model] = price;
    if (current === undefined) plan.added.push(model);
    else plan.changed.push({ model, before: current, after: price });
  }
  return { plan, operator: next };
}

export interface ImportResult extends ImportPlan {
  change: ConfigChangeResult | null;
}

/**
 * Import a price file into the operator layer: one config change (one CONFIG_CHANGED naming the file, its format
 * and the models it moved) or none when nothing moves. Anything refused leaves the layer as it was.
 */
export function importPrices(
  root: string,
  path: string,
  options: {
    format?: PriceFormat | undefined;
    providers?: readonly string[] | undefined;
    overrideShipped?: boolean;
  } = {},
): ImportResult {
  const parsed = readPriceFile(path, options);
  const { plan, operator } = planImport(root, parsed, path, options);
  if (plan.added.length === 0 && plan.changed.length === 0) return { ...plan, change: null };
  const size = Buffer.byteLength(JSON.stringify(operator));
  if (size > READ_LIMITS.config / 2) {
    throw new CpError(
      'ERR_PRICES_IMPORT_TOO_LARGE',
      `importing ${show(path, 240)} would put ${Object.keys(operator).length} prices (${size} bytes) in the operator config`,
      {
        hint: 'narrow the import to the providers you route to: --provider openai --provider anthropic',
        details: {
          source: path,
          models: Object.keys(operator).length,
          size_bytes: size,
          limit_bytes: READ_LIMITS.config / 2,
        },
      },
    );
  }
  const change = changeConfig(
    root,
    { op: 'set', path: ['budget', 'pricing'], value: operator },
    {
      via: {
        reason: `prices import ${path} (${parsed.format}): ${plan.added.length} added, ${plan.changed.length} changed`,
        metadata: {
          command: 'prices import',
          source: path,
          format: parsed.format,
          added: plan.added.length,
          changed: plan.changed.length,
          kept_shipped: plan.kept_shipped.length,
        },
      },
    },
  );
  return { ...plan, change };
}
