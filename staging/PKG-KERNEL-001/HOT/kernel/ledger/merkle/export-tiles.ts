import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { writeFileAtomic } from '../../atomic.js';
import type { Ledger } from '../ledger.js';
import { type NoteSigner, formatVkey } from './note.js';
import { checkpointNote, type LedgerTree, ledgerOrigin, withLedgerTree } from './ledger-proofs.js';
import type { PgReader } from '../pg/pg-reader.js';
import { entryLeaf } from './hash.js';
import { PgTreeSnapshot } from './pg-tree.js';
import { treeDamaged } from './sqlite-tree.js';
import { tilePath, TILE_WIDTH } from './tiles.js';

export interface TilesExport {
  size: number;
  tiles: number;
  /** Full tiles already in DIR with the same bytes (immutable: a re-export leaves them). */
  unchanged: number;
  checkpoint: string;
  vkey: string;
}

/**
 * The ledger as static tlog-tiles files under `dir`: every tile of the tree of the current size (level 0 the
 * leaf hashes, partial tiles as `.p/<W>`), the entry bundles (`tile/entries/…`, each entry the 32 bytes of an
 * entry hash, uint16 length-prefixed), then `vkey` and last `checkpoint`, so a client that reads the checkpoint
 * finds every tile it needs. Each file written atomically (temp, fsync, rename, fsync of the directory).
 */
export function exportTiles(ledger: Ledger, dir: string, signer: (origin: string) => NoteSigner): TilesExport {
  return withLedgerTree(ledger, (tree) => {
    const out = new TilesWriter(dir);
    for (const tile of treeTiles(tree.size)) {
      out.put(tile, Buffer.concat(tree.source.hashes(tile.level, tile.index * TILE_WIDTH, tile.count)));
      if (tile.level === 0) {
        const hashes: string[] = [];
        for (let i = 1; i <= tile.count; i += 1) hashes.push(ledger.entryHashAt(tile.index * TILE_WIDTH + i) as string);
        out.put({ ...tile, level: 'entries' }, entryBundle(hashes));
      }
    }
    return out.finish(tree, signer);
  });
}

/** exportTiles of a PostgreSQL ledger, read in one snapshot: the same files as a SQLite ledger of the same chain. */
export async function exportPgTiles(
  store: PgReader,
  dir: string,
  signer: (origin: string) => NoteSigner,
): Promise<TilesExport> {
  return PgTreeSnapshot.open(store, async (snapshot) => {
    const out = new TilesWriter(dir);
    for (const tile of treeTiles(snapshot.tree.size)) {
      if (tile.level === 0) {
        const hashes = await snapshot.entryHashes(tile.index * TILE_WIDTH, tile.count);
        out.put(tile, Buffer.concat(hashes.map(entryLeaf)));
        out.put({ ...tile, level: 'entries' }, entryBundle(hashes));
        continue;
      }
      const hashes = await snapshot.tile(tile.level, tile.index);
      if (hashes.length < tile.count)
        throw treeDamaged(
          `Merkle tile ${tile.level}/${tile.index} holds ${hashes.length} hashes, the tree needs ${tile.count}`,
          {
            level: tile.level,
            index: tile.index,
          },
        );
      out.put(tile, Buffer.concat(hashes.slice(0, tile.count)));
    }
    // The checkpoint's root reads the right edge of each level: level ≥ 1 tiles are cached, level 0 is read again.
    return snapshot.compute((tree) => out.finish(tree, signer));
  });
}

interface TileAt {
  level: number | 'entries';
  index: number;
  /** Its width: 256 for a full tile, 1–255 for the partial tile at a level's right edge. */
  count: number;
}

/** Every tile of the tree of `size` leaves, level by level, left to right. */
function* treeTiles(size: number): Generator<TileAt & { level: number }> {
  let width = size;
  for (let level = 0; width > 0; level += 1) {
    for (let index = 0; index * TILE_WIDTH < width; index += 1)
      yield { level, index, count: Math.min(TILE_WIDTH, width - index * TILE_WIDTH) };
    width = Math.floor(width / TILE_WIDTH);
  }
}

/** The files of one export: tiles as they come (a full one already there with the same bytes is left), then the notes. */
class TilesWriter {
  private tiles = 0;
  private unchanged = 0;

  constructor(private readonly dir: string) {}

  put(tile: TileAt, bytes: Buffer): void {
    const file = join(this.dir, tilePath(tile.level, tile.index, tile.count));
    this.tiles += 1;
    if (tile.count === TILE_WIDTH && sameFile(file, bytes)) {
      this.unchanged += 1;
      return;
    }
    mkdirSync(dirname(file), { recursive: true });
    writeFileAtomic(file, bytes);
  }

  /** `vkey`, then last `checkpoint`, so a client that reads the checkpoint finds every tile it needs. */
  finish(tree: LedgerTree, signer: (origin: string) => NoteSigner): TilesExport {
    const sign = signer(ledgerOrigin(tree.ledgerId));
    const vkey = formatVkey(sign);
    writeFileAtomic(join(this.dir, 'vkey'), `${vkey}\n`);
    const checkpoint = checkpointNote(tree, tree.size, sign);
    writeFileAtomic(join(this.dir, 'checkpoint'), checkpoint);
    return { size: tree.size, tiles: this.tiles, unchanged: this.unchanged, checkpoint, vkey };
  }
}

function sameFile(path: string, bytes: Buffer): boolean {
  try {
    return readFileSync(path).equals(bytes);
  } catch {
    return false;
  }
}

/** Entry hashes (hex) as a tlog-tiles entry bundle: each entry a big-endian uint16 length and its 32 bytes. */
function entryBundle(hashes: readonly string[]): Buffer {
  const out = Buffer.alloc(hashes.length * 34);
  hashes.forEach((hash, i) => {
    out.writeUInt16BE(32, i * 34);
    Buffer.from(hash, 'hex').copy(out, i * 34 + 2);
  });
  return out;
}
