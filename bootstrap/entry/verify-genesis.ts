// The genesis installer is kernel code this entry is about to run, so it is checked first: every file must
// be the one bootstrap.json pins, and genesis/ must hold nothing else. A stray file beside them could be
// loaded in their place (a native addon is found by searching several paths).
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BootstrapError } from './errors.js';
import { sha256, type BootstrapPlan, type GenesisFile } from './plan.js';

export const GENESIS_DIR = 'genesis';

function checkFile(base: string, file: GenesisFile): void {
  const data = readFileSync(join(base, file.path));
  const digest = sha256(data);
  if (data.length !== file.size || digest !== file.sha256) {
    throw new BootstrapError(
      'ERR_BOOTSTRAP_INTEGRITY',
      `${GENESIS_DIR}/${file.path} has ${data.length} bytes with ${digest}; bootstrap.json pins ${file.size} bytes with ${file.sha256}`,
    );
  }
}

/** Walk genesis/ (symlinks and special files refused), checking each file against the pinned list. */
export function verifyGenesis(dir: string, genesis: BootstrapPlan['genesis']): void {
  const base = join(dir, GENESIS_DIR);
  const listed = new Map(genesis.files.map((f) => [f.path, f]));
  let top: import('node:fs').Stats | null;
  try {
    top = lstatSync(base);
  } catch {
    top = null;
  }
  if (!top?.isDirectory())
    throw new BootstrapError(
      'ERR_BOOTSTRAP_GENESIS_MISSING',
      `${GENESIS_DIR}/ is missing (or is not a directory); it carries the genesis installer`,
    );
  let checked = 0;
  const visit = (rel: string): void => {
    for (const entry of readdirSync(join(base, rel), { withFileTypes: true })) {
      const path = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory()) {
        visit(path);
        continue;
      }
      const file = listed.get(path);
      if (!entry.isFile() || file === undefined) {
        throw new BootstrapError(
          'ERR_BOOTSTRAP_INTEGRITY',
          `${GENESIS_DIR}/${path} is ${entry.isFile() ? 'not listed in bootstrap.json' : 'not a regular file'}; genesis/ must hold exactly the pinned genesis files`,
        );
      }
      checkFile(base, file);
      checked += 1;
    }
  };
  visit('');
  if (checked !== listed.size) {
    const present = (f: GenesisFile): boolean => {
      try {
        return lstatSync(join(base, f.path)).isFile();
      } catch {
        return false;
      }
    };
    const missing = genesis.files.filter((f) => !present(f)).map((f) => f.path);
    throw new BootstrapError(
      'ERR_BOOTSTRAP_GENESIS_MISSING',
      `${GENESIS_DIR}/ lacks ${missing.length} pinned file(s): ${missing.slice(0, 5).join(', ')}`,
    );
  }
}
