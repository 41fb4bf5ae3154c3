import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CpError, isCpError, show } from '#kernel/errors.js';
import { READ_LIMITS, readTextBounded } from '#kernel/bounded-read.js';
import type { BreakerConfig } from './breaker.js';
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
}

const validate = compileSchemaFile('router-config.schema.json');
export const DEFAULT_CONFIG_PATH = join(dirname(fileURLToPath(import.meta.url)), '..', 'config', 'router.json');

export function parseRouterConfig(value: unknown, source = 'router config'): RouterConfig {
  if (!validate(value)) {
    throw new CpError('ERR_ROUTER_CONFIG_INVALID', `${source} is invalid: ${describeErrors(validate.errors ?? [])}`, {
      hint: 'fix the file against HOT/schemas/router-config.schema.json',
      details: { source, errors: validate.errors ?? [] },
    });
  }
  return value as RouterConfig;
}

export function loadRouterConfig(path = DEFAULT_CONFIG_PATH, overrides: Partial<RouterConfig> = {}): RouterConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(readTextBounded(path, { maxBytes: READ_LIMITS.config, what: 'the router config' }));
  } catch (cause) {
    if (isCpError(cause) && cause.code !== 'ERR_INPUT_UNREADABLE') throw cause;
    throw new CpError('ERR_ROUTER_CONFIG_INVALID', `cannot read router config ${show(path)}`, {
      hint: 'the file must exist and hold JSON',
      cause,
      details: { path },
    });
  }
  return parseRouterConfig({ ...(raw as object), ...overrides }, path);
}
