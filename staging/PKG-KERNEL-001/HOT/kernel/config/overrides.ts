import { isUtf8 } from 'node:buffer';
import { sha256Hex } from '../canonical.js';
import { CpError, show } from '../errors.js';
import { READ_LIMITS, readFileBounded } from '../bounded-read.js';
import { parseJsonBounded } from '../json-depth.js';
import { OPERATOR_CONFIG_REL, rootPaths } from '../root/layout.js';
import { entryKind, shapeError } from '../root/shape.js';
import { isPlainObject, sortedJson, type JsonObject } from './merge.js';
import { FORBIDDEN_SEGMENTS, formatKeyPath } from './key-path.js';

/**
 * The operator's override file (`HOT/registries/operator-config.json`): `{schema_version: "1", overrides:
 * {<section>: {…}}}`. Owned by no package, so no install, upgrade or uninstall writes it; it is data, never code.
 */
export interface OperatorOverrides {
  schema_version: '1';
  overrides: Record<string, JsonObject>;
}

export interface OverridesFile {
  value: OperatorOverrides;
  /** The file's bytes as read, or null when there is none. */
  bytes: Buffer | null;
  /** `sha256:<hex>` of those bytes; null when there is no file. */
  digest: string | null;
}

export const EMPTY_OVERRIDES: OperatorOverrides = Object.freeze({
  schema_version: '1',
  overrides: {},
}) as OperatorOverrides;
const SECTION = /^[a-z][a-z0-9_-]{0,63}$/;

function invalid(message: string, details: Record<string, unknown> = {}): CpError {
  return new CpError('ERR_CONFIG_OVERRIDES_INVALID', `${OPERATOR_CONFIG_REL} ${message}`, {
    hint: 'restore it with `cplane config show --json` from a good copy, or remove it to return to the package defaults',
    details: { path: OPERATOR_CONFIG_REL, ...details },
  });
}

export function digestOf(bytes: Buffer | null): string | null {
  return bytes === null ? null : `sha256:${sha256Hex(bytes)}`;
}

/** The override file's shape; each section's content is judged against its schema on the effective config. */
export function checkOverrides(value: unknown): OperatorOverrides {
  if (!isPlainObject(value)) throw invalid('is not a JSON object');
  const extra = Object.keys(value).filter((k) => k !== 'schema_version' && k !== 'overrides');
  if (extra.length > 0) throw invalid(`has unknown field(s) ${show(extra)}`, { fields: extra });
  if (value.schema_version !== '1') throw invalid(`has schema_version ${show(value.schema_version)}, expected "1"`);
  if (!isPlainObject(value.overrides)) throw invalid('has no "overrides" object');
  for (const [section, body] of Object.entries(value.overrides)) {
    if (!SECTION.test(section))
      throw invalid(`names the section ${show(section)}, not a config section name`, { section });
    if (!isPlainObject(body)) throw invalid(`section ${show(section)} is not an object`, { section });
    const prototypeKey = findPrototypeKey(body, [section]);
    if (prototypeKey !== null) {
      const key = formatKeyPath(prototypeKey);
      throw invalid(`has the key ${key}, which no config holds and a merge would read as a prototype`, { key });
    }
  }
  return value as unknown as OperatorOverrides;
}

/** The path of the first `__proto__` / `constructor` / `prototype` key (those `config set` refuses) in a value. */
function findPrototypeKey(value: unknown, path: string[]): string[] | null {
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) {
      const found = findPrototypeKey(v, [...path, String(i)]);
      if (found) return found;
    }
  } else if (isPlainObject(value)) {
    for (const [k, v] of Object.entries(value)) {
      if (FORBIDDEN_SEGMENTS.has(k)) return [...path, k];
      const found = findPrototypeKey(v, [...path, k]);
      if (found) return found;
    }
  }
  return null;
}

/** Read the overrides of `root`; absent is empty. A link or special file there is refused like other state. */
export function readOverrides(root: string): OverridesFile {
  const path = rootPaths(root).operatorConfig;
  const kind = entryKind(path);
  if (kind === 'absent') return { value: EMPTY_OVERRIDES, bytes: null, digest: null };
  if (kind !== 'file') throw shapeError(OPERATOR_CONFIG_REL, kind, 'regular file');
  const bytes = readFileBounded(path, { maxBytes: READ_LIMITS.config, what: 'the operator config', regularFile: true });
  // Decoding would turn each stray byte into U+FFFD: a value nobody set would be in force, and the file would never
  // say the same thing twice (a rewrite by `config set` stores the replacement characters).
  if (!isUtf8(bytes)) throw invalid('is not UTF-8 text');
  let parsed: unknown;
  try {
    parsed = parseJsonBounded(bytes.toString('utf8'));
  } catch (cause) {
    throw invalid(`is not JSON: ${(cause as Error).message}`);
  }
  return { value: checkOverrides(parsed), bytes, digest: digestOf(bytes) };
}

export function serializeOverrides(value: OperatorOverrides): Buffer {
  return Buffer.from(sortedJson(value), 'utf8');
}
