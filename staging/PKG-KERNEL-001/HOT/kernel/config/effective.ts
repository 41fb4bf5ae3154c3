import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { CpError, isCpError, show } from '../errors.js';
import { READ_LIMITS, readTextBounded } from '../bounded-read.js';
import { parseJsonBounded } from '../json-depth.js';
import { rootPaths } from '../root/layout.js';
import { mergeConfig } from './merge.js';
import { readOverrides, type OperatorOverrides } from './overrides.js';

/** A package's default for one config section: `HOT/config/<section>.json`, owned by the package that ships it. */
export function defaultConfigPath(root: string, section: string): string {
  return join(rootPaths(root).config, `${section}.json`);
}

/** The config sections of a root: one per package default under HOT/config/. */
export function configSections(root: string): string[] {
  const dir = rootPaths(root).config;
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((n) => /^[a-z][a-z0-9_-]{0,63}\.json$/.test(n))
    .map((n) => n.slice(0, -5))
    .sort();
}

/** Read a default config as JSON; a reader with its own error code passes its own function instead. */
export function readDefaultConfig(path: string): unknown {
  let text: string;
  try {
    text = readTextBounded(path, { maxBytes: READ_LIMITS.config, what: 'a default config', regularFile: true });
  } catch (cause) {
    if (isCpError(cause) && cause.code !== 'ERR_INPUT_UNREADABLE') throw cause;
    throw new CpError('ERR_CONFIG_DEFAULT_INVALID', `the package default config ${show(path)} cannot be read`, {
      hint: 'its package is not installed or the file was removed: `cplane verify` / gate-check G1 names it',
      details: { path },
      cause,
    });
  }
  try {
    return parseJsonBounded(text);
  } catch (cause) {
    throw new CpError(
      'ERR_CONFIG_DEFAULT_INVALID',
      `the package default config ${show(path)} is not JSON: ${(cause as Error).message}`,
      {
        hint: 'gate-check G1 reports the changed file; reinstall its package',
        details: { path },
        cause,
      },
    );
  }
}

/**
 * THE effective config of one section: the package default merged with the operator's overrides
 * (kernel/config/merge.ts). Every reader of a root's settings comes through here; each validates the result
 * against its schema. `readDefault` lets a reader keep its own error for a missing or broken default.
 */
export function effectiveConfig(
  root: string,
  section: string,
  readDefault: (path: string) => unknown = readDefaultConfig,
  overrides?: OperatorOverrides,
): unknown {
  const defaults = readDefault(defaultConfigPath(root, section));
  return mergeConfig(defaults, (overrides ?? readOverrides(root).value).overrides[section]);
}
