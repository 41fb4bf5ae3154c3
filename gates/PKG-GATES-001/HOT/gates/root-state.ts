import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Ledger, ledgerPathForRoot } from '../kernel/ledger/index.js';
import { OwnershipRegistry, type OwnedFile } from '../kernel/registry/ownership.js';
import { listReceipts, type Receipt } from '../kernel/registry/receipt.js';
import { isGovernedPath } from '../kernel/root/layout.js';
import type { GateContext } from './gate.js';

export interface GovernedWalk {
  files: string[];
  /** Symlinks, devices, sockets: nothing in a governed directory may be anything but a file or a directory. */
  oddities: Array<{ path: string; kind: string }>;
}

/** Every entry under ROOT/HOT in a governed directory, root-relative with forward slashes, sorted. */
export function walkGoverned(root: string): GovernedWalk {
  const out: GovernedWalk = { files: [], oddities: [] };
  const visit = (rel: string): void => {
    // Typed directory entries: no lstat per file (the entry type is what lstat would say).
    for (const entry of readdirSync(join(root, rel), { withFileTypes: true })) {
      const child = `${rel}/${entry.name}`;
      if (!isGovernedPath(child)) continue;
      if (entry.isDirectory()) visit(child);
      else if (entry.isFile()) out.files.push(child);
      else out.oddities.push({ path: child, kind: entry.isSymbolicLink() ? 'symlink' : 'special file' });
    }
  };
  visit('HOT');
  out.files.sort();
  return out;
}

/** Root state several gates read, loaded once per gate run (the run's context is the key). */
const memo = new WeakMap<GateContext, { receipts?: Map<string, Receipt>; owned?: OwnedFile[] }>();

function memoOf(ctx: GateContext): { receipts?: Map<string, Receipt>; owned?: OwnedFile[] } {
  let entry = memo.get(ctx);
  if (!entry) memo.set(ctx, (entry = {}));
  return entry;
}

export function receiptsOf(ctx: GateContext): Map<string, Receipt> {
  const entry = memoOf(ctx);
  return (entry.receipts ??= listReceipts(ctx.root));
}

export function ownedFilesOf(ctx: GateContext): OwnedFile[] {
  const entry = memoOf(ctx);
  if (!entry.owned) {
    const registry = OwnershipRegistry.open(ctx.root);
    try {
      entry.owned = registry.all();
    } finally {
      registry.close();
    }
  }
  return entry.owned;
}

export function withLedger<T>(root: string, fn: (ledger: Ledger) => T): T {
  const ledger = Ledger.open(ledgerPathForRoot(root));
  try {
    return fn(ledger);
  } finally {
    ledger.close();
  }
}
