import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CpError, show } from '../errors.js';
import { entryKind } from './shape.js';

/**
 * A bootstrap that finished genesis but not its last package says so in the root: the CP_BOOTSTRAP entry
 * writes this file (its plan's packages after genesis) before it unmarks the root, and removes it only after
 * the last package is installed. `verify` and G2 report a root holding it as incomplete; `cplane bootstrap
 * --resume` (or bootstrapping into the root again) installs what is missing.
 */
export const BOOTSTRAP_PENDING = 'HOT/registries/bootstrap-pending.json';

/** CP_BOOTSTRAP's mark of a genesis that has not finished (beside HOT, at the root's top level). */
export const GENESIS_MARK = '.cplane-bootstrap-incomplete';

export function genesisUnfinished(root: string): boolean {
  return entryKind(join(root, GENESIS_MARK)) !== 'absent';
}

export interface BootstrapPending {
  bootstrap_version: string;
  /** Every package the bootstrap installs after genesis, in order; those with a receipt at that version are done. */
  packages: Array<{ package_id: string; version: string }>;
}

/** The pending bootstrap of a root, validated; null when the bootstrap finished (or the root predates the record). */
export function readBootstrapPending(root: string): BootstrapPending | null {
  const path = join(root, BOOTSTRAP_PENDING);
  const kind = entryKind(path);
  if (kind === 'absent') return null;
  const bad = (why: string, cause?: unknown): CpError =>
    new CpError('ERR_BOOTSTRAP_PENDING_INVALID', `${show(BOOTSTRAP_PENDING)} ${why}`, {
      hint: 'only CP_BOOTSTRAP writes this record; finish the bootstrap with `cplane bootstrap --resume`, or restore the root from a backup',
      details: { path },
      cause,
    });
  if (kind !== 'file') throw bad(`is a ${kind}, not a regular file`);
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch (cause) {
    throw bad('is not JSON', cause);
  }
  const v = value as Partial<BootstrapPending> | null;
  if (!v || typeof v !== 'object' || typeof v.bootstrap_version !== 'string' || !Array.isArray(v.packages))
    throw bad('has no bootstrap_version and packages');
  for (const p of v.packages) {
    if (!p || typeof p.package_id !== 'string' || typeof p.version !== 'string')
      throw bad(`has a malformed package ${show(p)}`);
  }
  return {
    bootstrap_version: v.bootstrap_version,
    packages: v.packages.map((p) => ({ package_id: p.package_id, version: p.version })),
  };
}

/** The pending packages not yet installed at their planned version, given the installed versions by package id. */
export function missingPackages(
  pending: BootstrapPending,
  installed: ReadonlyMap<string, string>,
): Array<{ package_id: string; version: string }> {
  return pending.packages.filter((p) => installed.get(p.package_id) !== p.version);
}
