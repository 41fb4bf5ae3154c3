import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Ledger, ledgerPathForRoot } from '../kernel/ledger/index.js';
import { isGovernedPath } from '../kernel/root/layout.js';

export interface GovernedWalk {
  files: string[];
  /** Symlinks, devices, sockets: nothing in a governed directory may be anything but a file or a directory. */
  oddities: Array<{ path: string; kind: string }>;
}

/** Every entry under ROOT/HOT in a governed directory, root-relative with forward slashes, sorted. */
export function walkGoverned(root: string): GovernedWalk {
  const out: GovernedWalk = { files: [], oddities: [] };
  const visit = (rel: string): void => {
    for (const name of readdirSync(join(root, rel)).sort()) {
      const child = `${rel}/${name}`;
      if (!isGovernedPath(child)) continue;
      const stat = lstatSync(join(root, child));
      if (stat.isDirectory()) visit(child);
      else if (stat.isFile()) out.files.push(child);
      else out.oddities.push({ path: child, kind: stat.isSymbolicLink() ? 'symlink' : 'special file' });
    }
  };
  visit('HOT');
  return out;
}

export function withLedger<T>(root: string, fn: (ledger: Ledger) => T): T {
  const ledger = Ledger.open(ledgerPathForRoot(root));
  try {
    return fn(ledger);
  } finally {
    ledger.close();
  }
}
