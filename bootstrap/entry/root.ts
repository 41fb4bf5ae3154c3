// The new root, as the entry prepares it for genesis. Genesis runs in this process, so nothing outlives a
// hard kill to clean up after it; instead the entry marks the root before genesis and unmarks it after. A
// later bootstrap that finds the mark knows the root holds only an interrupted genesis, and starts it again.
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, rmSync, statSync, unlinkSync, writeSync } from 'node:fs';
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
    throw new BootstrapError('ERR_ROOT_NOT_EMPTY', `${JSON.stringify(root)} exists and is not a directory`, 'pick a new directory for the root');
  }
  const present = existed ? readdirSync(root) : [];
  const cleared = present.filter((name) => name !== GENESIS_MARK);
  if (cleared.length > 0 && !present.includes(GENESIS_MARK)) {
    throw new BootstrapError('ERR_ROOT_NOT_EMPTY', `${JSON.stringify(root)} is not empty; bootstrap needs a new or empty directory`,
      'pick a new directory for the root, or install single packages into an existing root with its HOT/scripts/install.js');
  }
  for (const name of cleared) rmSync(join(root, name), { recursive: true, force: true });
  mkdirSync(root, { recursive: true });
  const fd = openSync(join(root, GENESIS_MARK), 'w', 0o644);
  try {
    writeSync(fd, `${JSON.stringify({ written_by: 'CP_BOOTSTRAP install.js', bootstrap_version: bootstrapVersion, meaning: 'genesis has not finished; the next bootstrap into this directory starts it again' })}\n`);
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
