import { readFileSync } from 'node:fs';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { CpError, isCpError, show } from '#kernel/errors.js';
import { READ_LIMITS, readTextBounded } from '#kernel/bounded-read.js';
import { effectiveConfig } from '#kernel/config/effective.js';
import { parseJsonBounded } from '#kernel/json-depth.js';
import { readOverrides } from '#kernel/config/overrides.js';
import { configPath, rootPaths } from '#kernel/root/layout.js';
import { type Period, checkPeriod } from './periods.js';

export type BudgetMode = 'enforce' | 'warn' | 'off';
/** `key`: every call made with a key carrying this `budget_scope`, across sessions (one budget per virtual key). */
export type ScopeKind = 'session' | 'work_order' | 'agent' | 'key';
export const SCOPE_KINDS: readonly ScopeKind[] = ['session', 'work_order', 'agent', 'key'];

export interface ModelPrice {
  input_per_mtok: number;
  output_per_mtok: number;
  cache_read_per_mtok: number;
  cache_write_5m_per_mtok: number;
  cache_write_1h_per_mtok: number;
}

export interface Limit {
  max_tokens?: number;
  max_cost?: number;
  /** This limit's own period (a by_id entry's); otherwise the kind's. */
  period?: Period;
}

export interface ScopeLimits {
  /** Every limit of the kind resets each period; none: a lifetime limit. */
  period?: Period;
  default?: Limit;
  by_id?: Record<string, Limit>;
}

export interface RateLimit {
  window_ms: number;
  max_requests?: number;
  max_tokens?: number;
  /** Calls of one scope id in flight (reserved, not yet settled or released) at most. */
  max_in_flight?: number;
  /** Per-id overrides of the kind's limits (this key, this team): the window length stays the kind's. */
  by_id?: Record<string, RateOverride>;
}

export interface RateOverride {
  max_requests?: number;
  max_tokens?: number;
  max_in_flight?: number;
}

/** The persisted configuration (`HOT/config/budget.json`), validated by `HOT/schemas/budget-config.schema.json`. */
export interface BudgetConfig {
  schema_version: '1';
  mode: BudgetMode;
  currency: string;
  durability?: 'normal' | 'full';
  busy_timeout_ms?: number;
  warn_at_fraction?: number;
  /** The largest token count one usage value may hold; a larger one is malformed usage (unknown). */
  max_usage_tokens?: number;
  pricing: Record<string, ModelPrice>;
  limits: Partial<Record<ScopeKind, ScopeLimits>>;
  rate_limits: Partial<Record<ScopeKind, RateLimit>>;
}

const SCHEMA_URL = new URL('../schemas/budget-config.schema.json', import.meta.url);
let validator: ValidateFunction | undefined;

function schemaValidator(): ValidateFunction {
  if (!validator) {
    const schema = JSON.parse(readFileSync(SCHEMA_URL, 'utf8')) as object;
    validator = new Ajv({ allErrors: false, strict: true }).compile(schema);
  }
  return validator;
}

function describeError(error: ErrorObject): string {
  if (error.keyword === 'additionalProperties') {
    return `unknown field ${show((error.params as { additionalProperty: string }).additionalProperty)}`;
  }
  return error.message ?? error.keyword;
}

/** Validate a parsed config; the error names the JSON pointer of the first offending value. */
export function parseBudgetConfig(value: unknown, source = '<config>'): BudgetConfig {
  const validate = schemaValidator();
  if (validate(value)) return checkPeriods(value as BudgetConfig);
  const first = validate.errors?.[0];
  const pointer = first?.instancePath || '/';
  const reason = first ? describeError(first) : 'invalid';
  throw new CpError('ERR_BUDGET_CONFIG_INVALID', `budget config ${source} is invalid at ${pointer}: ${reason}`, {
    hint: 'fix the value at that JSON pointer; the schema is HOT/schemas/budget-config.schema.json',
    details: { source, pointer, keyword: first?.keyword ?? null, params: first?.params ?? {} },
  });
}

/** Read and validate a config file; unreadable or non-JSON files are the same coded error. */
export function loadBudgetConfig(path: string): BudgetConfig {
  return parseBudgetConfig(readBudgetJson(path), path);
}

/** The root's effective budget config: the package default with the operator's overrides (`cplane config`). */
export function loadBudgetConfigForRoot(root: string): BudgetConfig {
  const overrides = readOverrides(root).value;
  const source = `${budgetConfigPathForRoot(root)}${overrides.overrides.budget ? ' with the operator overrides' : ''}`;
  return parseBudgetConfig(effectiveConfig(root, 'budget', readBudgetJson, overrides), source);
}

function readBudgetJson(path: string): unknown {
  let text: string;
  try {
    text = readTextBounded(path, { maxBytes: READ_LIMITS.config, what: 'the budget config', regularFile: true });
  } catch (cause) {
    if (isCpError(cause) && cause.code !== 'ERR_INPUT_UNREADABLE') throw cause;
    throw new CpError('ERR_BUDGET_CONFIG_INVALID', `cannot read budget config ${show(path)}`, {
      hint: 'install PKG-BUDGETER-001 into the root or pass a config explicitly',
      details: { source: path, pointer: '' },
      cause,
    });
  }
  let value: unknown;
  try {
    value = parseJsonBounded(text);
  } catch (cause) {
    throw new CpError(
      'ERR_BUDGET_CONFIG_INVALID',
      `budget config ${show(path)} is not JSON: ${(cause as Error).message}`,
      {
        hint: 'fix the JSON syntax',
        details: { source: path, pointer: '' },
        cause,
      },
    );
  }
  return value;
}

export function budgetConfigPathForRoot(root: string): string {
  return configPath(root, 'budget.json');
}

export function budgetDbPathForRoot(root: string): string {
  return rootPaths(root).budgetDb;
}

/**
 * The limit of one scope: a per-id entry wins over the kind's default; none means unlimited (but tracked).
 * Only the operator's own entries count: an id named like an Object.prototype member (`constructor`,
 * `__proto__`, `toString`) is caller-chosen and must not read an inherited value as a limit without bounds.
 */
export function limitFor(config: BudgetConfig, kind: ScopeKind, id: string): Limit | null {
  const scope = config.limits[kind];
  const byId = scope?.by_id;
  const own = byId !== undefined && Object.hasOwn(byId, id) ? byId[id] : undefined;
  return own ?? scope?.default ?? null;
}

/** The period a scope's limit resets on: its own entry's, else its kind's; null for a lifetime limit. */
export function periodFor(config: BudgetConfig, kind: ScopeKind, id: string): Period | null {
  const scope = config.limits[kind];
  if (scope === undefined) return null;
  const byId = scope.by_id;
  const own = byId !== undefined && Object.hasOwn(byId, id) ? byId[id] : undefined;
  return own?.period ?? (own === undefined ? scope.default?.period : undefined) ?? scope.period ?? null;
}

function checkPeriods(config: BudgetConfig): BudgetConfig {
  for (const kind of SCOPE_KINDS) {
    const scope = config.limits[kind];
    if (scope === undefined) continue;
    if (scope.period !== undefined) checkPeriod(scope.period, `/limits/${kind}/period`);
    if (scope.default?.period !== undefined) checkPeriod(scope.default.period, `/limits/${kind}/default/period`);
    for (const [id, limit] of Object.entries(scope.by_id ?? {}))
      if (limit.period !== undefined) checkPeriod(limit.period, `/limits/${kind}/by_id/${id}/period`);
  }
  return config;
}
