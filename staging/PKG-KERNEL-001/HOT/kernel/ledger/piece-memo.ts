import { wellFormed } from '../text.js';

/**
 * The list nodes this process hashed lately. An agent resends its whole conversation every turn, so all but the
 * last few pieces of a request are pieces an earlier request of the same conversation carried after the same
 * list. A node is looked up by its parent and its piece's length (a short key: V8 hashes a Map's string keys
 * over every character, which for pieces would cost as much as the SHA-256 it saves) and taken only when the
 * piece is the same string (a comparison at memcmp speed). A hit is exact equality, so a digest found here is the
 * digest the text has: nothing about what is hashed or stored changes. The memo keeps its own copy of each
 * piece it remembers: the gateway's pieces are slices of their whole request, and a slice keeps that alive, so
 * the characters it counts would not be the memory it holds.
 */
export interface HashedPiece {
  /** The piece as given (what a later request is compared with). */
  piece: string;
  /** The piece made well-formed: what is hashed and stored (a lone surrogate would reach SQLite as U+FFFD). */
  text: string;
  /** sha256hex of `text`. */
  block: string;
  /** The list node: sha256hex(parent + block). */
  node: string;
}

/** Characters of pieces held at most: a 150k-token conversation is about 0.6 Mi characters, so dozens of them. */
export const PIECE_MEMO_MAX_CHARS = 32 << 20;

/** The nodes seen after one parent, by piece length, and when the parent was last looked up. */
interface Bucket {
  byLength: Map<number, HashedPiece[]>;
  used: number;
}

export class PieceMemo {
  /**
   * parent → the nodes seen after it. The parent is usually a node this memo handed out, a string whose V8 hash
   * is already computed, so the lookup never reads a piece's characters. Recency is a counter stamped on the
   * bucket (moving the key to the end of the Map on every hit cost a quarter of a warm lookup).
   */
  private readonly buckets = new Map<string, Bucket>();
  private chars = 0;
  private clock = 0;

  constructor(
    private readonly blockDigest: (text: string) => string,
    private readonly listDigest: (parent: string, block: string) => string,
    private readonly maxChars = PIECE_MEMO_MAX_CHARS,
  ) {}

  /** The list node after `parent` that appends `piece`, hashing only what was not seen. */
  hashed(piece: string, parent: string): HashedPiece {
    this.clock += 1;
    let bucket = this.buckets.get(parent);
    if (bucket === undefined) {
      bucket = { byLength: new Map(), used: this.clock };
      this.buckets.set(parent, bucket);
    } else bucket.used = this.clock;
    const seen = bucket.byLength.get(piece.length);
    if (seen !== undefined) {
      for (const node of seen) if (node.piece === piece) return node;
    }
    const text = wellFormed(piece);
    const block = this.blockDigest(text);
    const node = this.listDigest(parent, block);
    if (piece.length > this.maxChars) return { piece, text, block, node };
    const own = ownCopy(piece);
    const fresh: HashedPiece = { piece: own, text: text === piece ? own : text, block, node };
    if (seen === undefined) bucket.byLength.set(piece.length, [fresh]);
    else seen.push(fresh);
    this.chars += piece.length;
    if (this.chars > this.maxChars) this.evict();
    return fresh;
  }

  /** How many nodes and characters are held (for tests and diagnostics). */
  get size(): { nodes: number; chars: number } {
    let nodes = 0;
    for (const bucket of this.buckets.values()) for (const list of bucket.byLength.values()) nodes += list.length;
    return { nodes, chars: this.chars };
  }

  /**
   * Forgets the parents looked up longest ago until the memo is at three quarters of its bound: the sort is paid
   * once per quarter of the bound, not on every piece once the memo is full.
   */
  private evict(): void {
    const oldestFirst = [...this.buckets].sort((a, b) => a[1].used - b[1].used);
    for (const [parent, bucket] of oldestFirst) {
      if (this.chars <= this.maxChars * 0.75) return;
      this.buckets.delete(parent);
      for (const list of bucket.byLength.values()) for (const node of list) this.chars -= node.piece.length;
    }
  }
}

/**
 * `piece` in a string of its own. V8 has no copy operation: slicing a concatenation flattens it into a new
 * string first, and the slice refers to that one, not to whatever `piece` was cut from. A piece under 13
 * characters is copied by any slice, so it is already its own.
 */
function ownCopy(piece: string): string {
  return piece.length < 13 ? piece : ` ${piece}`.slice(1);
}
