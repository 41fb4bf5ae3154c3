import { createHash, hash } from 'node:crypto';

/** RFC 9162 §2.1.1 hashing with SHA-256: a leaf is H(0x00 ‖ data), an interior node H(0x01 ‖ left ‖ right). */
export const HASH_SIZE = 32;
// One-shot hashing of a reused input buffer: about half the cost of createHash().update().digest() per node.
const leafInput = Buffer.alloc(1 + HASH_SIZE);
const nodeInput = Buffer.alloc(1 + 2 * HASH_SIZE, 0x01);

/** The root of the empty tree: SHA-256 of the empty string. */
export const EMPTY_ROOT: Buffer = createHash('sha256').digest();

export function leafHash(data: Uint8Array): Buffer {
  if (data.length !== HASH_SIZE) return createHash('sha256').update(leafInput.subarray(0, 1)).update(data).digest();
  leafInput.set(data, 1);
  return hash('sha256', leafInput, 'buffer') as Buffer;
}

export function nodeHash(left: Uint8Array, right: Uint8Array): Buffer {
  if (left.length !== HASH_SIZE || right.length !== HASH_SIZE)
    return createHash('sha256').update(nodeInput.subarray(0, 1)).update(left).update(right).digest();
  nodeInput.set(left, 1);
  nodeInput.set(right, 1 + HASH_SIZE);
  return hash('sha256', nodeInput, 'buffer') as Buffer;
}

/**
 * A ledger entry's leaf: the leaf hash of its entry_hash's 32 bytes. The tree's records are the entry hashes, so
 * a tlog client holding the chain's entry hashes (the exported entry bundles) recomputes every leaf.
 */
export function entryLeaf(entryHashHex: string): Buffer {
  // Decoded straight into the hash input: no buffer per entry on the append path.
  if (leafInput.write(entryHashHex, 1, 'hex') !== HASH_SIZE) return leafHash(Buffer.from(entryHashHex, 'hex'));
  return hash('sha256', leafInput, 'buffer') as Buffer;
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
