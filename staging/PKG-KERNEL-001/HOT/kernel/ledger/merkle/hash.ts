import { createHash } from 'node:crypto';
import { leafInto, nodeInto } from './sha256.js';

/** RFC 9162 §2.1.1 hashing with SHA-256: a leaf is H(0x00 ‖ data), an interior node H(0x01 ‖ left ‖ right). */
export const HASH_SIZE = 32;
const LEAF_PREFIX = Buffer.from([0x00]);
const NODE_PREFIX = Buffer.from([0x01]);

/** The root of the empty tree: SHA-256 of the empty string. */
export const EMPTY_ROOT: Buffer = createHash('sha256').digest();

export function leafHash(data: Uint8Array): Buffer {
  if (data.length !== HASH_SIZE) return createHash('sha256').update(LEAF_PREFIX).update(data).digest();
  const out = Buffer.allocUnsafe(HASH_SIZE);
  leafInto(data, 0, out, 0);
  return out;
}

export function nodeHash(left: Uint8Array, right: Uint8Array): Buffer {
  if (left.length !== HASH_SIZE || right.length !== HASH_SIZE)
    return createHash('sha256').update(NODE_PREFIX).update(left).update(right).digest();
  const out = Buffer.allocUnsafe(HASH_SIZE);
  nodeInto(left, 0, right, 0, out, 0);
  return out;
}

/**
 * A ledger entry's leaf: the leaf hash of its entry_hash's 32 bytes. The tree's records are the entry hashes, so
 * a tlog client holding the chain's entry hashes (the exported entry bundles) recomputes every leaf.
 */
export function entryLeaf(entryHashHex: string): Buffer {
  const out = Buffer.allocUnsafe(HASH_SIZE);
  entryLeafInto(entryHashHex, out, 0);
  return out;
}

/** entryLeaf written at out[at…at+32): the hex decoded into that slot and hashed over itself, no buffer between. */
export function entryLeafInto(entryHashHex: string, out: Buffer, at: number): void {
  if (out.write(entryHashHex, at, HASH_SIZE, 'hex') === HASH_SIZE) leafInto(out, at, out, at);
  else out.set(leafHash(Buffer.from(entryHashHex, 'hex')), at);
}

/**
 * MTH over `hashes` (RFC 9162 §2.1.1): pairing level by level and carrying an odd last hash up unchanged builds the
 * same left-balanced tree as the RFC's split at the largest power of two.
 */
export function rootOf(hashes: readonly Buffer[]): Buffer {
  if (hashes.length === 0) return EMPTY_ROOT;
  let level = hashes.slice();
  while (level.length > 1) {
    const next: Buffer[] = [];
    for (let i = 0; i + 1 < level.length; i += 2) next.push(nodeHash(level[i] as Buffer, level[i + 1] as Buffer));
    if (level.length % 2 === 1) next.push(level[level.length - 1] as Buffer);
    level = next;
  }
  return level[0] as Buffer;
}

/** The root over perfect subtrees listed left to right, each smaller than the one before (a tree's right edge). */
export function foldRight(roots: readonly Buffer[]): Buffer {
  if (roots.length === 0) return EMPTY_ROOT;
  let r = roots[roots.length - 1] as Buffer;
  for (let i = roots.length - 2; i >= 0; i -= 1) r = nodeHash(roots[i] as Buffer, r);
  return r;
}

/** Largest power of two strictly below n (n ≥ 2). */
export function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}
