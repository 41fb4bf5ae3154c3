import { rmSync } from 'node:fs';
import { writeFileAtomic } from '../atomic.js';
import { CpError, show } from '../errors.js';
import { Ledger, ledgerPathForRoot, type LedgerEntry } from '../ledger/index.js';
import { acquireRootLock } from '../root/lock.js';
import { truncateText } from '../text.js';
import { OPERATOR_CONFIG_REL, rootPaths } from '../root/layout.js';
import { READ_LIMITS } from '../bounded-read.js';
import { effectiveConfig, configSections } from './effective.js';
import { formatKeyPath } from './key-path.js';
import { changedPaths, getAt, isPlainObject, setAt, unsetAt, type JsonObject } from './merge.js';
import { digestOf, readOverrides, serializeOverrides, type OperatorOverrides } from './overrides.js';
import { secretPath } from './secret-keys.js';
import { validateSection } from './section-schema.js';

export type ConfigChange = { op: 'set'; path: string[]; value: unknown } | { op: 'unset'; path: string[] };

export interface ConfigChangeResult {
  key: string;
  op: 'set' | 'unset';
  changed: boolean;
  before_digest: string | null;
  after_digest: string | null;
  /** Effective-config keys whose value the change moved (never their values: some are secret-adjacent). */
  changed_keys: string[];
  entry_id: string | null;
}

export interface ConfigChangeOptions {
  /** How long to wait for an installer or another config change holding the root lock. */
  lockTimeoutMs?: number;
  /** What made the change when not `config set` (`prices import FILE`): its CONFIG_CHANGED says so. */
  via?: { reason: string; metadata: Record<string, unknown> };
}

/** The section must be one a package ships a default and a schema for: a typo never becomes a silent no-op. */
export function assertKnownSection(root: string, path: readonly string[]): string {
  const section = path[0] as string;
  const sections = configSections(root);
  if (!sections.includes(section)) {
    throw new CpError(
      'ERR_CONFIG_KEY_INVALID',
      `config key ${show(formatKeyPath(path))} names no config section ${show(section)}`,
      {
        hint: `the sections of this root: ${sections.join(', ') || 'none'}`,
        details: { key: formatKeyPath(path), sections },
      },
    );
  }
  return section;
}

export function refuseSecret(path: readonly string[], value: unknown): void {
  const found = secretPath(path, value);
  if (found === null) return;
  const key = formatKeyPath(found);
  throw new CpError(
    'ERR_CONFIG_SECRET',
    `config key ${show(key)} would hold a secret; secrets never live in config values`,
    {
      hint: 'put the secret in an environment variable or a file and name that instead (e.g. api_key_env, api_key_file, secret_file)',
      details: { key },
    },
  );
}

/**
 * Apply one `config set`/`unset` under the root lock: validate the effective section against its schema, publish
 * the override file atomically, and record CONFIG_CHANGED (digests before and after, the changed keys). If the
 * ledger refuses the record, the file is put back: no change is left unrecorded.
 */
export function changeConfig(
  root: string,
  change: ConfigChange,
  options: ConfigChangeOptions = {},
): ConfigChangeResult {
  const section = assertKnownSection(root, change.path);
  const key = formatKeyPath(change.path);
  if (change.op === 'set') {
    refuseSecret(change.path, change.value);
    if (change.path.length === 1 && !isPlainObject(change.value)) {
      throw new CpError(
        'ERR_CONFIG_VALUE_INVALID',
        `config section ${show(section)} must be set to an object, got ${show(change.value)}`,
        {
          hint: 'set a field instead (e.g. router.timeout_ms 5000), or pass a JSON object',
          details: { key },
        },
      );
    }
  }
  const lock = acquireRootLock(root, { timeoutMs: options.lockTimeoutMs ?? 10_000 });
  try {
    const before = readOverrides(root);
    const overrides = before.value.overrides as JsonObject;
    const next = change.op === 'set' ? setAt(overrides, change.path, change.value) : unsetAt(overrides, change.path);
    const nextFile: OperatorOverrides = { schema_version: '1', overrides: next as OperatorOverrides['overrides'] };
    const beforeEffective = effectiveConfig(root, section, undefined, before.value);
    const afterEffective = effectiveConfig(root, section, undefined, nextFile);
    const verdict = validateSection(root, section, afterEffective);
    if (!verdict.ok) {
      const shown = change.op === 'set' ? ` = ${show(change.value)}` : ' (unset)';
      throw new CpError(
        'ERR_CONFIG_VALUE_INVALID',
        `config ${show(key)}${shown} makes ${section} invalid at ${verdict.pointer}: ${verdict.message}`,
        {
          hint: `the effective ${section} config must match ${section}-config.schema.json; \`cplane config get ${section}\` shows it`,
          details: { key, pointer: verdict.pointer, reason: verdict.reason },
        },
      );
    }
    const changedKeys = changedPaths(beforeEffective, afterEffective).map((p) => formatKeyPath([section, ...p]));
    const bytes = serializeOverrides(nextFile);
    if (bytes.length > READ_LIMITS.config) {
      // Published, it would be refused by every reader of the root's settings.
      throw new CpError(
        'ERR_CONFIG_VALUE_INVALID',
        `config ${show(key)} would make ${OPERATOR_CONFIG_REL} ${bytes.length} bytes, over its limit of ${READ_LIMITS.config}`,
        {
          hint: 'set fewer or smaller values',
          details: { key, size_bytes: bytes.length, limit_bytes: READ_LIMITS.config },
        },
      );
    }
    if (before.bytes !== null && bytes.equals(before.bytes)) {
      return {
        key,
        op: change.op,
        changed: false,
        before_digest: before.digest,
        after_digest: before.digest,
        changed_keys: [],
        entry_id: null,
      };
    }
    if (before.bytes === null && Object.keys(next).length === 0) {
      return {
        key,
        op: change.op,
        changed: false,
        before_digest: null,
        after_digest: null,
        changed_keys: [],
        entry_id: null,
      };
    }
    const path = rootPaths(root).operatorConfig;
    writeFileAtomic(path, bytes);
    const afterDigest = digestOf(bytes);
    let entry: LedgerEntry;
    try {
      entry = recordChange(root, {
        key,
        op: change.op,
        before: before.digest,
        after: afterDigest,
        changedKeys,
        via: options.via,
      });
    } catch (error) {
      if (before.bytes === null) rmSync(path, { force: true });
      else writeFileAtomic(path, before.bytes);
      throw error;
    }
    return {
      key,
      op: change.op,
      changed: true,
      before_digest: before.digest,
      after_digest: afterDigest,
      changed_keys: changedKeys,
      entry_id: entry.id,
    };
  } finally {
    lock.release();
  }
}

function recordChange(
  root: string,
  c: {
    key: string;
    op: string;
    before: string | null;
    after: string | null;
    changedKeys: string[];
    via?: ConfigChangeOptions['via'];
  },
): LedgerEntry {
  const ledger = Ledger.open(ledgerPathForRoot(root));
  try {
    return ledger.append({
      event_type: 'CONFIG_CHANGED',
      submission_id: 'operator-config',
      decision: 'APPLIED',
      reason: truncateText(c.via?.reason ?? `config ${c.op} ${c.key}`, 500),
      metadata: {
        op: c.op,
        key: c.key,
        before_digest: c.before,
        after_digest: c.after,
        changed_keys: c.changedKeys.slice(0, 256),
        ...(c.changedKeys.length > 256 ? { changed_keys_total: c.changedKeys.length } : {}),
        ...(c.via ? { via: c.via.metadata } : {}),
      },
    });
  } finally {
    ledger.close();
  }
}

/** The value at a key of the effective config (undefined: not set). */
export function effectiveValue(root: string, path: readonly string[]): unknown {
  const section = assertKnownSection(root, path);
  return getAt(effectiveConfig(root, section), path.slice(1));
}
