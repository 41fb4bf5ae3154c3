import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CpError, isCpError, show } from '#kernel/errors.js';
import { READ_LIMITS, readTextBounded } from '#kernel/bounded-read.js';
import { effectiveConfig } from '#kernel/config/effective.js';
import { readOverrides } from '#kernel/config/overrides.js';
import { parseJsonBounded } from '#kernel/json-depth.js';
import type { BreakerConfig } from './breaker.js';
import { type Durability, parseDurability } from './durability.js';
import type { RetryConfig } from './retry.js';
import { compileSchemaFile } from './schema.js';
import { describeErrors } from './request.js';

export interface RouterConfig {
  default_provider: string;
  default_model: string;
  default_max_tokens: number;
  timeout_ms: number;
  retry: RetryConfig;
  breaker: BreakerConfig;
  ledger_write_attempts: number;
  /** Router checkpoints (router/checkpoints.ts); absent: none. */
  checkpoint?: { every_entries: number; every_seconds: number };
  /** Where the route-token signing secret comes from (router/secrets.ts); absent: $CPLANE_AUTH_SECRET. */
  auth?: { secret_env?: string; secret_file?: string };
  /** What of a call is durable before what (router/durability.ts); absent: full. */
  durability?: Durability;
}

const validate = compileSchemaFile('router-config.schema.json');
export const DEFAULT_CONFIG_PATH = join(dirname(fileURLToPath(import.meta.url)), '..', 'config', 'router.json');

export function parseRouterConfig(value: unknown, source = 'router config'): RouterConfig {
  const durability = (value as { durability?: unknown } | null)?.durability;
  // Named with the levels, where the schema would only say the value is not one of them.
  if (durability !== undefined) parseDurability(durability, `${source}: durability`, 'ERR_ROUTER_CONFIG_INVALID');
  if (!validate(value)) {
    throw new CpError('ERR_ROUTER_CONFIG_INVALID', `${source} is invalid: ${describeErrors(validate.errors ?? [])}`, {
      hint: 'fix the file against HOT/schemas/router-config.schema.json',
      details: { source, errors: validate.errors ?? [] },
    });
  }
  return value as RouterConfig;
}

function readRouterDefault(path: string): unknown {
  try {
    return parseJsonBounded(
      readTextBounded(path, { maxBytes: READ_LIMITS.config, what: 'the router config', regularFile: true }),
    );
  } catch (cause) {
    if (isCpError(cause) && cause.code !== 'ERR_INPUT_UNREADABLE') throw cause;
    throw new CpError(
      'ERR_ROUTER_CONFIG_INVALID',
      `cannot read router config ${show(path)}: ${(cause as Error).message}`,
      {
        hint: 'the file must exist and hold JSON',
        cause,
        details: { path },
      },
    );
  }
}

/** A router config file as it is (tests and benches; a root's router reads `loadRouterConfigForRoot`). */
export function loadRouterConfig(path = DEFAULT_CONFIG_PATH, overrides: Partial<RouterConfig> = {}): RouterConfig {
  return parseRouterConfig({ ...(readRouterDefault(path) as object), ...overrides }, path);
}

/** The root's effective router config: the package default with the operator's overrides (`cplane config`). */
export function loadRouterConfigForRoot(root: string): RouterConfig {
  const overrides = readOverrides(root).value;
  const source = `HOT/config/router.json${overrides.overrides.router ? ' with the operator overrides' : ''}`;
  return parseRouterConfig(effectiveConfig(root, 'router', readRouterDefault, overrides), source);
}
