import { randomInt } from 'node:crypto';
import { wellFormed } from '../text.js';

/**
 * The list nodes this process hashed lately. An agent resends its whole conversation every turn, so all but the
 * last few pieces of a request are pieces an earlier request of the same conversation carried after the same
 * list. A node is looked up by its parent and a fingerprint of its piece, and taken only when the piece is the
 * same string (a comparison at memcmp speed). A hit is exact equality, so a digest found here is the digest the
 * text has: nothing about what is hashed or stored changes. The memo keeps its own copy of each piece it
 * remembers: the gateway's pieces are slices of their whole request, and a slice keeps that alive, so the
 * characters it counts would not be the memory it holds.
 *
 * Every lookup costs the same whatever came before and whoever sent it: one Map lookup for the parent, one for
 * the fingerprint, and at most PIECE_MEMO_SLOT_NODES string comparisons. The piece itself is never a Map key: V8
 * hashes a string key over every character (as costly as the SHA-256 it saves) and a string over 16k characters
 * by its length alone (so all long pieces of one length would share one hash chain).
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

/**
 * Nodes kept under one (parent, fingerprint). Someone who sends pieces made to share a fingerprint only churns
 * this short list: their own pieces miss (one SHA-256 each, as with no memo) and no lookup scans more than this.
 */
export const PIECE_MEMO_SLOT_NODES = 4;

/** Pieces up to this length are fingerprinted whole; longer ones by EDGE characters at each end and STRIDED between. */
const WHOLE_UP_TO = 256;
const EDGE = 16;
const STRIDED = 32;

/**
 * A 30-bit fingerprint of `piece` (a small integer: a Map key V8 hashes by value) reading at most 2 × EDGE +
 * STRIDED characters. The seed is secret to the process and places the strided samples, so which pieces share a
 * fingerprint cannot be known from outside.
 */
export function fingerprint(piece: string, seed: number): number {
  const n = piece.length;
  let h = Math.imul(seed ^ n, 0x9e3779b1);
  if (n <= WHOLE_UP_TO) {
    for (let i = 0; i < n; i += 1) h = Math.imul(h ^ piece.charCodeAt(i), 0x01000193);
  } else {
    for (let i = 0; i < EDGE; i += 1) {
      h = Math.imul(h ^ piece.charCodeAt(i), 0x01000193);
      h = Math.imul(h ^ piece.charCodeAt(n - 1 - i), 0x01000193);
    }
    // The last sample is at most EDGE + STRIDED × step - 1 <= n - EDGE - 1: inside the middle.
    const step = Math.floor((n - 2 * EDGE) / STRIDED);
    for (let i = 0, at = EDGE + ((seed >>> 0) % step); i < STRIDED; i += 1, at += step) {
      h = Math.imul(h ^ piece.charCodeAt(at), 0x01000193);
    }
  }
  return (h ^ (h >>> 15)) & 0x3fffffff;
}

/** The nodes seen after one parent, by fingerprint (in insertion order), and its place in the recency list. */
interface Bucket {
  parent: string;
  slots: Map<number, HashedPiece[]>;
  chars: number;
  newer: Bucket | null;
  older: Bucket | null;
}

/** Counters for tests and diagnostics: lookups made and piece comparisons they cost. */
export interface PieceMemoStats {
  lookups: number;
  comparisons: number;
}

export class PieceMemo {
  /**
   * parent → the nodes seen after it. The parent is usually a node this memo handed out, a string whose V8 hash
   * is already computed, so the lookup never reads a piece's characters. Recency is a doubly linked list through
   * the buckets (a few pointer writes per lookup; re-inserting the Map key cost a quarter of a warm lookup), so
   * eviction takes the least recently used parent in O(1).
   */
  private readonly buckets = new Map<string, Bucket>();
  private newest: Bucket | null = null;
  private oldest: Bucket | null = null;
  private chars = 0;
  readonly stats: PieceMemoStats = { lookups: 0, comparisons: 0 };

  constructor(
    private readonly blockDigest: (text: string) => string,
    private readonly listDigest: (parent: string, block: string) => string,
    private readonly maxChars = PIECE_MEMO_MAX_CHARS,
    private readonly seed = randomInt(0x40000000),
  ) {}

  /** The list node after `parent` that appends `piece`, hashing only what was not seen. */
  hashed(piece: string, parent: string): HashedPiece {
    this.stats.lookups += 1;
    const bucket = this.bucket(parent);
    const key = fingerprint(piece, this.seed);
    const slot = bucket.slots.get(key);
    if (slot !== undefined) {
      for (const node of slot) {
        this.stats.comparisons += 1;
        if (node.piece === piece) return node;
      }
    }
    const text = wellFormed(piece);
    const block = this.blockDigest(text);
    const node = this.listDigest(parent, block);
    if (piece.length > this.maxChars) return { piece, text, block, node };
    const own = ownCopy(piece);
    const fresh: HashedPiece = { piece: own, text: text === piece ? own : text, block, node };
    this.remember(bucket, key, slot, fresh);
    return fresh;
  }

  /** How many nodes and characters are held (for tests and diagnostics: it walks everything). */
  get size(): { nodes: number; chars: number } {
    let nodes = 0;
    for (const bucket of this.buckets.values()) for (const slot of bucket.slots.values()) nodes += slot.length;
    return { nodes, chars: this.chars };
  }

  /** The longest list under one (parent, fingerprint) (for tests: it walks everything). */
  get longestSlot(): number {
    let longest = 0;
    for (const bucket of this.buckets.values())
      for (const slot of bucket.slots.values()) longest = Math.max(longest, slot.length);
    return longest;
  }

  /** The bucket of `parent`, made the most recently used. */
  private bucket(parent: string): Bucket {
    let bucket = this.buckets.get(parent);
    if (bucket === undefined) {
      bucket = { parent, slots: new Map(), chars: 0, newer: null, older: null };
      this.buckets.set(parent, bucket);
    } else if (bucket === this.newest) return bucket;
    else this.unlink(bucket);
    bucket.older = this.newest;
    if (this.newest !== null) this.newest.newer = bucket;
    this.newest = bucket;
    this.oldest ??= bucket;
    return bucket;
  }

  private unlink(bucket: Bucket): void {
    if (bucket.newer === null) this.newest = bucket.older;
    else bucket.newer.older = bucket.older;
    if (bucket.older === null) this.oldest = bucket.newer;
    else bucket.older.newer = bucket.newer;
    bucket.newer = null;
    bucket.older = null;
  }

  /**
   * Keeps `fresh` under its fingerprint (a full list drops its oldest node), then holds the bounds: one parent
   * keeps at most a quarter of the characters, dropping its oldest fingerprints first (so a flood after one shared
   * parent, a system prompt, does not push every other conversation out), and past the whole bound the parents
   * used longest ago go until three quarters of it is held. Each node is dropped at most once: O(1) amortised.
   */
  private remember(bucket: Bucket, key: number, slot: HashedPiece[] | undefined, fresh: HashedPiece): void {
    if (slot === undefined) bucket.slots.set(key, [fresh]);
    else {
      if (slot.length >= PIECE_MEMO_SLOT_NODES) this.drop(bucket, (slot.shift() as HashedPiece).piece.length);
      slot.push(fresh);
    }
    bucket.chars += fresh.piece.length;
    this.chars += fresh.piece.length;
    const share = this.maxChars / 4;
    for (const [first, nodes] of bucket.slots) {
      if (bucket.chars <= share || bucket.slots.size <= 1) break;
      bucket.slots.delete(first);
      for (const dropped of nodes) this.drop(bucket, dropped.piece.length);
    }
    if (this.chars <= this.maxChars) return;
    while (this.oldest !== null && this.chars > this.maxChars * 0.75) {
      const gone = this.oldest;
      this.unlink(gone);
      this.buckets.delete(gone.parent);
      this.chars -= gone.chars;
    }
  }

  private drop(bucket: Bucket, chars: number): void {
    bucket.chars -= chars;
    this.chars -= chars;
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
