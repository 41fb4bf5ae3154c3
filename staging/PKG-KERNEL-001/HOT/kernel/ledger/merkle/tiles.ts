import { entryLeaf, foldRight, HASH_SIZE, nodeHash, rootOf } from './hash.js';
import { leafIntoView, nodeIntoView } from './sha256.js';
import type { RangeHash } from './proof.js';

/**
 * The tree in C2SP tlog-tiles layout: a tile of level L holds up to 256 consecutive hashes of tree height 8·L (level
 * 0: the leaf hashes; level 1: the roots of each 256 leaves; …). A full tile never changes; the rightmost tile of
 * each level is partial (width 1–255) until it fills.
 */
export const TILE_HEIGHT = 8;
export const TILE_WIDTH = 256;

/** The tile path element of index `n`: 3-digit groups, every group but the last prefixed `x` (tlog-tiles). */
export function tileIndexPath(n: number): string {
  let path = String(n % 1000).padStart(3, '0');
  for (let rest = Math.floor(n / 1000); rest > 0; rest = Math.floor(rest / 1000))
    path = `x${String(rest % 1000).padStart(3, '0')}/${path}`;
  return path;
}

/** `tile/<L>/<N>` for a full tile, `tile/<L>/<N>.p/<W>` for a partial one; `level` 'entries' for the entry bundles. */
export function tilePath(level: number | 'entries', index: number, width: number): string {
  return `tile/${level}/${tileIndexPath(index)}${width < TILE_WIDTH ? `.p/${width}` : ''}`;
}

/** The hashes of level `level` (tree height 8·level) at [from, from + count), as stored; the reader of a tree. */
export interface TileSource {
  hashes(level: number, from: number, count: number): Buffer[];
  /**
   * Roots of perfect subtrees above level 0 already folded, by `height/index`, shared by the readers of one store. A
   * perfect subtree inside the chain never changes (the chain only grows), so a proof reuses the upper tiles' folds.
   */
  memo?: Map<string, Buffer>;
}

/** Perfect subtree roots a store's memo keeps; the oldest goes first (Map order: O(1) eviction). */
const MEMO_LIMIT = 65_536;

/** Folds 2^k hashes of one height into the root of their perfect subtree. */
export function foldPerfect(hashes: readonly Buffer[]): Buffer {
  let level = hashes as Buffer[];
  while (level.length > 1) {
    const next = new Array<Buffer>(level.length / 2);
    for (let i = 0; i < next.length; i += 1) next[i] = nodeHash(level[2 * i] as Buffer, level[2 * i + 1] as Buffer);
    level = next;
  }
  return level[0] as Buffer;
}

/**
 * MTH of D[start:end) read from tiles: a perfect aligned range from one tile, any other split as RFC 9162 splits it.
 * Given the tree's `size`, a level-0 tile is read whole, once for the consecutive ranges inside it (a proof asks
 * for up to 8 of them), clipped to the size.
 */
export function rangeHashOf(source: TileSource, size?: number): RangeHash {
  const memo = source.memo;
  let leafTile: { index: number; hashes: Buffer[] } | undefined;
  const leaves = (from: number, count: number): Buffer[] => {
    const index = Math.floor(from / TILE_WIDTH);
    if (size === undefined || index !== Math.floor((from + count - 1) / TILE_WIDTH))
      return source.hashes(0, from, count);
    if (leafTile?.index !== index) {
      const start = index * TILE_WIDTH;
      leafTile = { index, hashes: source.hashes(0, start, Math.min(TILE_WIDTH, size - start)) };
    }
    const offset = from - index * TILE_WIDTH;
    return leafTile.hashes.slice(offset, offset + count);
  };
  const perfect = (height: number, index: number): Buffer => {
    const level = Math.floor(height / TILE_HEIGHT);
    const span = 2 ** (height - level * TILE_HEIGHT);
    if (level === 0) return foldPerfect(leaves(index * span, span));
    if (memo === undefined) return foldPerfect(source.hashes(level, index * span, span));
    const key = `${height}/${index}`;
    let hash = memo.get(key);
    if (hash === undefined) {
      hash = foldPerfect(source.hashes(level, index * span, span));
      if (memo.size >= MEMO_LIMIT) memo.delete(memo.keys().next().value as string);
      memo.set(key, hash);
    }
    return hash;
  };
  const range: RangeHash = (start, end) => {
    const n = end - start;
    let p = 1;
    let height = 0;
    while (p * 2 <= n) {
      p *= 2;
      height += 1;
    }
    if (p === n && start % n === 0) return perfect(height, start / n);
    const k = p === n ? p / 2 : p;
    return nodeHash(range(start, start + k), range(start + k, end));
  };
  return range;
}

/** A tile the edge completed or changed, to be written: level ≥ 1 (level 0 is the chain's own entry hashes). */
export interface TileWrite {
  level: number;
  index: number;
  hashes: Buffer;
}

const TILE_BYTES = TILE_WIDTH * HASH_SIZE;

/** out[at…at+32) = the root of the 256 hashes of a full tile, folded through `scratch` (half a tile). */
function foldTileInto(tile: DataView, scratch: DataView, out: DataView, at: number): void {
  for (let i = 0; i < TILE_WIDTH / 2; i += 1) nodeIntoView(tile, 64 * i, tile, 64 * i + 32, scratch, 32 * i);
  for (let n = TILE_WIDTH / 4; n > 1; n /= 2)
    for (let i = 0; i < n; i += 1) nodeIntoView(scratch, 64 * i, scratch, 64 * i + 32, scratch, 32 * i);
  nodeIntoView(scratch, 0, scratch, HASH_SIZE, out, at);
}

/** A DataView over all of `bytes`. */
function viewOf(bytes: Buffer): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * The tree's right edge in memory: the partial tile of each level, one buffer of 256 hashes per level filled from
 * the left. Appending a leaf is one hash written in place; every 256th folds a full tile into one hash of the level
 * above (255 node hashes per 256 leaves): amortised O(1) per entry, no allocation but the tiles written.
 */
export class TreeEdge {
  /** tiles[L]: the rightmost, partial tile of level L, its first counts[L] hashes filled. */
  private readonly tiles: Buffer[] = [];
  /** views[L]: tiles[L] as a DataView, for the hashing. */
  private readonly views: DataView[] = [];
  private readonly counts: number[] = [];
  private readonly dirty = new Set<number>();
  private readonly full: TileWrite[] = [];
  private readonly scratch = viewOf(Buffer.alloc(TILE_BYTES / 2));

  constructor(public size = 0) {
    this.tileAt(0);
  }

  /** The edge of a tree of `size` leaves, read from its tiles: at most one partial tile per level. */
  static load(size: number, source: TileSource): TreeEdge {
    const edge = new TreeEdge(size);
    let width = size;
    for (let level = 0; width > 0; level += 1) {
      const count = width % TILE_WIDTH;
      const hashes = count === 0 ? [] : source.hashes(level, width - count, count);
      const tile = edge.tileAt(level);
      for (let i = 0; i < hashes.length; i += 1) tile.set(hashes[i] as Buffer, i * HASH_SIZE);
      edge.counts[level] = hashes.length;
      width = Math.floor(width / TILE_WIDTH);
    }
    return edge;
  }

  /** Appends the leaf hash `leaf` (32 bytes). */
  push(leaf: Uint8Array): void {
    (this.tiles[0] as Buffer).set(leaf, (this.counts[0] as number) * HASH_SIZE);
    this.added();
  }

  /** Appends the leaf of a ledger entry: SHA-256(0x00 ‖ the 32 bytes of `entryHashHex`), hashed into its tile. */
  pushEntry(entryHashHex: string): void {
    const tile = this.tiles[0] as Buffer;
    const at = (this.counts[0] as number) * HASH_SIZE;
    // Decoded into its slot and hashed over itself; any text but 64 hex digits as entryLeaf hashes it.
    if (tile.write(entryHashHex, at, HASH_SIZE, 'hex') === HASH_SIZE)
      leafIntoView(this.views[0] as DataView, at, this.views[0] as DataView, at);
    else tile.set(entryLeaf(entryHashHex), at);
    this.added();
  }

  /** The leaf in tile 0's next slot is written: the size grows, and each tile it fills folds into the level above. */
  private added(): void {
    this.size += 1;
    for (let level = 0; ; level += 1) {
      const count = (this.counts[level] as number) + 1;
      if (level > 0) this.dirty.add(level);
      if (count < TILE_WIDTH) {
        this.counts[level] = count;
        return;
      }
      const index = Math.floor(this.size / TILE_WIDTH ** (level + 1)) - 1;
      if (level > 0) this.full.push({ level, index, hashes: Buffer.from(this.tiles[level] as Buffer) });
      this.dirty.delete(level);
      this.counts[level] = 0;
      this.tileAt(level + 1);
      const at = (this.counts[level + 1] as number) * HASH_SIZE;
      foldTileInto(this.views[level] as DataView, this.scratch, this.views[level + 1] as DataView, at);
    }
  }

  private tileAt(level: number): Buffer {
    let tile = this.tiles[level];
    if (tile === undefined) {
      tile = Buffer.alloc(TILE_BYTES);
      this.tiles[level] = tile;
      this.views[level] = viewOf(tile);
      this.counts[level] = 0;
    }
    return tile;
  }

  /** The full tiles of level ≥ 1 completed since the last call, without the partial edge (a checker's stream). */
  takeFull(): TileWrite[] {
    return this.full.splice(0);
  }

  /** The tiles of level ≥ 1 filled or changed since the last call: what a store writes with the entries. */
  takeWrites(): TileWrite[] {
    const writes = this.full.splice(0);
    for (const level of this.dirty) {
      const bytes = (this.tiles[level] as Buffer).subarray(0, (this.counts[level] as number) * HASH_SIZE);
      const index = Math.floor(this.size / TILE_WIDTH ** (level + 1));
      writes.push({ level, index, hashes: Buffer.from(bytes) });
    }
    this.dirty.clear();
    return writes;
  }

  /** The root of the tree of `size` leaves. */
  root(): Buffer {
    const roots: Buffer[] = [];
    for (let level = this.tiles.length - 1; level >= 0; level -= 1) {
      // A copy: a root may be one of these hashes, and the tile is overwritten as it refills.
      const tile = splitHashes(
        Buffer.from((this.tiles[level] as Buffer).subarray(0, (this.counts[level] as number) * HASH_SIZE)),
      );
      let at = 0;
      for (let span = TILE_WIDTH / 2; span >= 1; span /= 2) {
        if (tile.length - at >= span) {
          roots.push(foldPerfect(tile.slice(at, at + span)));
          at += span;
        }
      }
    }
    return foldRight(roots);
  }
}

/** Splits a stored tile's bytes into its hashes. */
export function splitHashes(bytes: Uint8Array): Buffer[] {
  const out: Buffer[] = [];
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let at = 0; at + HASH_SIZE <= buf.length; at += HASH_SIZE) out.push(buf.subarray(at, at + HASH_SIZE));
  return out;
}

/** Every tile of a tree whose leaves are in memory: a ledger read before it had its tree, a verifier's rebuild. */
export function memoryTileSource(leaves: readonly Buffer[]): TileSource {
  const levels: Buffer[][] = [leaves.slice()];
  for (let l = 0; (levels[l] as Buffer[]).length >= TILE_WIDTH; l += 1) {
    const below = levels[l] as Buffer[];
    const up: Buffer[] = [];
    for (let i = 0; i + TILE_WIDTH <= below.length; i += TILE_WIDTH)
      up.push(foldPerfect(below.slice(i, i + TILE_WIDTH)));
    levels.push(up);
  }
  return { hashes: (level, from, count) => (levels[level] ?? []).slice(from, from + count) };
}

export { rootOf };
