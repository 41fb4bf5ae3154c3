// The new root, as the entry prepares it for genesis. Genesis runs in this process, so nothing outlives a
// hard kill to clean up after it; instead the entry marks the root before genesis and unmarks it after. A
// later bootstrap that finds the mark knows the root holds only an interrupted genesis, and starts it again.
import {
  closeSync,
  existsSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { BootstrapError } from './errors.js';

export const GENESIS_MARK = '.cplane-bootstrap-incomplete';

function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export interface PreparedRoot {
  root: string;
  /** The directory existed before this bootstrap (it is emptied, not removed, if genesis fails). */
  existed: boolean;
  /** What an interrupted genesis had left and was removed. */
  cleared: string[];
}

/** A new or empty directory, or one holding only an interrupted genesis (cleared): marked, durably. */
export function prepareRoot(root: string, bootstrapVersion: string): PreparedRoot {
  const existed = existsSync(root);
  if (existed && !statSync(root).isDirectory()) {
    throw new BootstrapError(
      'ERR_ROOT_NOT_EMPTY',
      `${JSON.stringify(root)} exists and is not a directory`,
      'pick a new directory for the root',
    );
  }
  const present = existed ? readdirSync(root) : [];
  const cleared = present.filter((name) => name !== GENESIS_MARK);
  if (cleared.length > 0 && !present.includes(GENESIS_MARK)) {
    throw new BootstrapError(
      'ERR_ROOT_NOT_EMPTY',
      `${JSON.stringify(root)} is not empty; bootstrap needs a new or empty directory`,
      'pick a new directory for the root, or install single packages into an existing root with its HOT/scripts/install.js',
    );
  }
  for (const name of cleared) rmSync(join(root, name), { recursive: true, force: true });
  mkdirSync(root, { recursive: true });
  const fd = openSync(join(root, GENESIS_MARK), 'w', 0o644);
  try {
    writeSync(
      fd,
      `${JSON.stringify({ written_by: 'CP_BOOTSTRAP install.js', bootstrap_version: bootstrapVersion, meaning: 'genesis has not finished; the next bootstrap into this directory starts it again' })}\n`,
    );
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  fsyncPath(root);
  return { root, existed, cleared };
}

/** Genesis finished: the root is a root. */
export function unmarkRoot(root: string): void {
  unlinkSync(join(root, GENESIS_MARK));
  fsyncPath(root);
}

/** Genesis failed: a root without its kernel is not a root, so nothing of it is kept. */
export function removeRoot(prepared: PreparedRoot): void {
  if (!prepared.existed) {
    rmSync(prepared.root, { recursive: true, force: true });
    return;
  }
  for (const name of readdirSync(prepared.root)) rmSync(join(prepared.root, name), { recursive: true, force: true });
}

/**
 * The record of a bootstrap past genesis but not finished (the kernel reads it as kernel/root/bootstrap-pending.ts
 * BOOTSTRAP_PENDING): written durably before the genesis mark goes, removed after the last package.
 */
export const PENDING = join('HOT', 'registries', 'bootstrap-pending.json');

export interface PendingPackage {
  package_id: string;
  version: string;
}

export function writePending(root: string, bootstrapVersion: string, packages: readonly PendingPackage[]): void {
  const path = join(root, PENDING);
  const tmp = `${path}.tmp`;
  const record = {
    bootstrap_version: bootstrapVersion,
    written_by: 'CP_BOOTSTRAP install.js',
    meaning:
      'the bootstrap has not installed every package; `cplane bootstrap --resume` (or bootstrapping into this root again) finishes it',
    packages: packages.map((p) => ({ package_id: p.package_id, version: p.version })),
  };
  const fd = openSync(tmp, 'w', 0o644);
  try {
    writeSync(fd, `${JSON.stringify(record, null, 2)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  fsyncPath(join(root, 'HOT', 'registries'));
}

/** The bootstrap version of the unfinished bootstrap recorded in `root`, or null when there is none. */
export function readPending(root: string): string | null {
  const path = join(root, PENDING);
  let isFile: boolean;
  try {
    isFile = lstatSync(path).isFile();
  } catch {
    return null;
  }
  const bad = (): BootstrapError =>
    new BootstrapError(
      'ERR_BOOTSTRAP_PENDING_INVALID',
      `${JSON.stringify(path)} is not a bootstrap record`,
      'only CP_BOOTSTRAP writes this file; restore the root from a backup, or bootstrap a new root',
    );
  if (!isFile) throw bad();
  try {
    const value = JSON.parse(readFileSync(path, 'utf8')) as { bootstrap_version?: unknown };
    if (typeof value.bootstrap_version === 'string') return value.bootstrap_version;
  } catch {
    // reported below
  }
  throw bad();
}

/** The last package is installed: the root is complete. */
export function clearPending(root: string): void {
  unlinkSync(join(root, PENDING));
  fsyncPath(join(root, 'HOT', 'registries'));
}

/** A pending record and a genesis mark together: genesis had finished when the entry was killed. */
export function dropGenesisMark(root: string): void {
  if (existsSync(join(root, GENESIS_MARK))) unmarkRoot(root);
}
