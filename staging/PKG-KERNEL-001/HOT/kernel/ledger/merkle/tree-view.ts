import type { Ledger } from '../ledger.js';
import { entryLeaf } from './hash.js';
import { sqliteTileSource } from './sqlite-tree.js';
import { memoryTileSource, type TileSource, TreeEdge } from './tiles.js';

/** A ledger's tree as read in one snapshot: its size (the chain's length) and its tiles. */
export interface LedgerTree {
  ledgerId: string;
  size: number;
  source: TileSource;
}

/** Run `fn` on the ledger's tree in one read snapshot; a ledger without its tree is read from its chain. */
export function withLedgerTree<T>(ledger: Ledger, fn: (tree: LedgerTree) => T): T {
  return ledger.snapshot(() => {
    const size = ledger.head().seq;
    const ledgerId = size > 0 ? (ledger.entryHashAt(1) as string) : '';
    const source = ledger.hasTree ? sqliteTileSource(ledger.db) : memoryTileSource(chainLeaves(ledger));
    return fn({ ledgerId, size, source });
  });
}

function chainLeaves(ledger: Ledger): Buffer[] {
  const leaves: Buffer[] = [];
  for (const row of ledger.rows()) leaves.push(entryLeaf(row.entry_hash));
  return leaves;
}

export function treeRoot(tree: LedgerTree, size: number): Buffer {
  return TreeEdge.load(size, tree.source).root();
}
