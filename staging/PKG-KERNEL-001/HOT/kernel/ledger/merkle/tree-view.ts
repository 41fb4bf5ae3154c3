import type { Ledger } from '../ledger.js';
import { entryLeaf } from './hash.js';
import { MERKLE_META_KEY, sqliteTileSource } from './sqlite-tree.js';
import type { ChainRoots } from './note-checkpoints.js';
import { noTree, type TreeCheck, TreeChecker } from './tree-check.js';
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

/**
 * The SQLite ledger's stored tiles against the tree recomputed from its chain (ledger verify), in one snapshot; the
 * roots at `sizes` kept for the checkpoint notes. A tile table that cannot be read is judged as missing tiles.
 */
export function checkLedgerTree(ledger: Ledger, sizes: ReadonlySet<number>): { check: TreeCheck; roots: ChainRoots } {
  return ledger.snapshot(() => {
    const present = ledger.hasTree || hasTreeMeta(ledger);
    const checker = new TreeChecker(present ? storedTiles(ledger) : new Map(), sizes);
    for (const row of ledger.rows()) checker.push(row.entry_hash);
    const check = present ? checker.finish() : noTree(ledger.head().seq);
    const ledgerId = check.size > 0 ? (ledger.entryHashAt(1) as string) : '';
    return {
      check,
      roots: {
        ledgerId,
        size: check.size,
        rootAt: (s) => checker.rootAt(s),
        tilesDamagedFrom: present ? checker.damagedFrom : Number.POSITIVE_INFINITY,
      },
    };
  });
}

function hasTreeMeta(ledger: Ledger): boolean {
  try {
    return ledger.db.prepare('SELECT 1 FROM ledger_meta WHERE key = ?').get(MERKLE_META_KEY) !== undefined;
  } catch {
    return false;
  }
}

function storedTiles(ledger: Ledger): Map<string, Buffer> {
  const tiles = new Map<string, Buffer>();
  try {
    for (const row of ledger.db.prepare('SELECT level, idx, hashes FROM merkle_tiles').iterate() as Iterable<{
      level: number;
      idx: number;
      hashes: Buffer;
    }>)
      tiles.set(`${row.level}/${row.idx}`, Buffer.from(row.hashes));
  } catch {
    // Dropped or unreadable: every tile the chain's tree has is then named missing.
  }
  return tiles;
}
