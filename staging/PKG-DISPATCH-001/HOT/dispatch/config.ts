import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv, type ValidateFunction } from 'ajv';
import { CpError, isCpError, show } from '#kernel/errors.js';
import { READ_LIMITS, readTextBounded } from '#kernel/bounded-read.js';
import { effectiveConfig } from '#kernel/config/effective.js';
import { parseJsonBounded } from '#kernel/json-depth.js';
import { configPath } from '#kernel/root/layout.js';

export interface DispatchConfig {
  schema_version: '1';
  stall_threshold: number;
  max_output_tokens: number;
  guide_instruction: string;
}

const HOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SCHEMA_PATH = join(HOT, 'schemas', 'dispatch-config.schema.json');
/** The config this package ships, next to the running code. */
export const PACKAGED_CONFIG_PATH = join(HOT, 'config', 'dispatch.json');

let validator: ValidateFunction | undefined;

function validate(value: unknown): boolean {
  validator ??= new Ajv({ allErrors: true, strict: true }).compile(
    JSON.parse(readFileSync(SCHEMA_PATH, 'utf8')) as object,
  );
  return validator(value);
}

/** The config a root uses: its own `HOT/config/dispatch.json` when installed, else the packaged one. */
export function configPathForRoot(root: string): string {
  const installed = configPath(root, 'dispatch.json');
  return existsSync(installed) ? installed : PACKAGED_CONFIG_PATH;
}

export function loadDispatchConfig(path: string): DispatchConfig {
  return parseDispatchConfig(readDispatchJson(path), path);
}

/** The root's effective dispatch config (package default + operator overrides), or the packaged one outside a root. */
export function loadDispatchConfigForRoot(root: string): DispatchConfig {
  const path = configPathForRoot(root);
  if (path === PACKAGED_CONFIG_PATH) return loadDispatchConfig(path);
  return parseDispatchConfig(effectiveConfig(root, 'dispatch', readDispatchJson), path);
}

function readDispatchJson(path: string): unknown {
  let value: unknown;
  try {
    value = parseJsonBounded(
      readTextBounded(path, { maxBytes: READ_LIMITS.config, what: 'the dispatch config', regularFile: true }),
    );
  } catch (cause) {
    if (isCpError(cause) && cause.code !== 'ERR_INPUT_UNREADABLE') throw cause;
    throw new CpError(
      'ERR_DISPATCH_CONFIG_INVALID',
      `cannot read dispatch config ${show(path)}: ${(cause as Error).message}`,
      {
        hint: 'restore HOT/config/dispatch.json from the PKG-DISPATCH-001 package',
        details: { path },
        cause,
      },
    );
  }
  return value;
}

export function parseDispatchConfig(value: unknown, path = '<inline>'): DispatchConfig {
  if (!validate(value)) {
    const first = validator?.errors?.[0];
    const pointer = first?.instancePath || '/';
    throw new CpError(
      'ERR_DISPATCH_CONFIG_INVALID',
      `dispatch config ${show(path)} is invalid at ${pointer}: ${first?.message ?? 'schema mismatch'}`,
      {
        hint: 'fix the value so it matches schemas/dispatch-config.schema.json',
        details: { path, pointer, errors: validator?.errors ?? [] },
      },
    );
  }
  return value as DispatchConfig;
}
