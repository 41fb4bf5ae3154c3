import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { writeFileAtomic } from '../../atomic.js';
import type { Ledger } from '../ledger.js';
import { type NoteSigner, formatVkey } from './note.js';
import { checkpointNote, ledgerOrigin, withLedgerTree } from './ledger-proofs.js';
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
    const sign = signer(ledgerOrigin(tree.ledgerId));
    let tiles = 0;
    let unchanged = 0;
    const put = (path: string, bytes: Buffer, full: boolean): void => {
      const file = join(dir, path);
      tiles += 1;
      if (full && sameFile(file, bytes)) {
        unchanged += 1;
        return;
      }
      mkdirSync(dirname(file), { recursive: true });
      writeFileAtomic(file, bytes);
    };
    let width = tree.size;
    for (let level = 0; width > 0; level += 1) {
      for (let index = 0; index * TILE_WIDTH < width; index += 1) {
        const count = Math.min(TILE_WIDTH, width - index * TILE_WIDTH);
        const hashes = tree.source.hashes(level, index * TILE_WIDTH, count);
        put(tilePath(level, index, count), Buffer.concat(hashes), count === TILE_WIDTH);
        if (level === 0)
          put(tilePath('entries', index, count), entryBundle(ledger, index * TILE_WIDTH, count), count === TILE_WIDTH);
      }
      width = Math.floor(width / TILE_WIDTH);
    }
    const vkey = formatVkey(sign);
    writeFileAtomic(join(dir, 'vkey'), `${vkey}\n`);
    const checkpoint = checkpointNote(tree, tree.size, sign);
    writeFileAtomic(join(dir, 'checkpoint'), checkpoint);
    return { size: tree.size, tiles, unchanged, checkpoint, vkey };
  });
}

function sameFile(path: string, bytes: Buffer): boolean {
  try {
    return readFileSync(path).equals(bytes);
  } catch {
    return false;
  }
}

/** Entries [from, from + count) as a tlog-tiles entry bundle: each a big-endian uint16 length and its bytes. */
function entryBundle(ledger: Ledger, from: number, count: number): Buffer {
  const out = Buffer.alloc(count * 34);
  for (let i = 0; i < count; i += 1) {
    const hash = ledger.entryHashAt(from + i + 1) as string;
    out.writeUInt16BE(32, i * 34);
    Buffer.from(hash, 'hex').copy(out, i * 34 + 2);
  }
  return out;
}
