import { nodeHash, splitPoint } from './hash.js';

/**
 * Proofs over a tree given only MTH of a range (`range(start, end)`, RFC 9162 notation D[start:end]): the audit path
 * (§2.1.3.1 PATH) and the consistency proof (§2.1.4.1 SUBPROOF). Every range asked for starts at a multiple of the
 * largest power of two not above its length, which a tiled store answers from O(1) tiles.
 */
export type RangeHash = (start: number, end: number) => Buffer;

export function inclusionPath(index: number, size: number, range: RangeHash): Buffer[] {
  const path: Buffer[] = [];
  let start = 0;
  let end = size;
  let m = index;
  // Collected root-first by descending, emitted leaf-first as PATH lists them.
  while (end - start > 1) {
    const k = splitPoint(end - start);
    if (m < k) {
      path.push(range(start + k, end));
      end = start + k;
    } else {
      path.push(range(start, start + k));
      start += k;
      m -= k;
    }
  }
  return path.reverse();
}

export function consistencyPath(old: number, size: number, range: RangeHash): Buffer[] {
  if (old <= 0 || old >= size) return [];
  const path: Buffer[] = [];
  let start = 0;
  let end = size;
  let m = old;
  let complete = true;
  while (m !== end - start) {
    const k = splitPoint(end - start);
    if (m <= k) {
      path.push(range(start + k, end));
      end = start + k;
    } else {
      path.push(range(start, start + k));
      start += k;
      m -= k;
      complete = false;
    }
  }
  if (!complete) path.push(range(start, end));
  return path.reverse();
}

const big = BigInt;
const bitLength = (x: bigint): number => (x === 0n ? 0 : x.toString(2).length);
const popcount = (x: bigint): number => [...x.toString(2)].filter((c) => c === '1').length;
const trailingZeros = (x: bigint): number => {
  let n = 0;
  for (let v = x; v > 0n && (v & 1n) === 0n; v >>= 1n) n += 1;
  return n;
};

/** How many hashes the audit path of `index` in a tree of `size` has (0 ≤ index < size). */
export function inclusionLength(index: number, size: number): number {
  const i = big(index);
  const inner = bitLength(i ^ big(size - 1));
  return inner + popcount(i >> big(inner));
}

/** How many hashes a consistency proof from `old` to `size` has (0 < old < size). */
export function consistencyLength(old: number, size: number): number {
  const m1 = big(old - 1);
  const innerAll = bitLength(m1 ^ big(size - 1));
  const shift = trailingZeros(big(old));
  const seed = big(old) === 1n << big(shift) ? 0 : 1;
  return seed + innerAll - shift + popcount(m1 >> big(innerAll));
}

const isPowerOfTwo = (x: number): boolean => {
  const b = big(x);
  return b > 0n && (b & (b - 1n)) === 0n;
};
const half = (x: number): number => Math.floor(x / 2);
const odd = (x: number): boolean => x % 2 === 1;

/** Why a proof fails, or null when it holds. */
export type ProofProblem =
  | { problem: 'path_length'; message: string; expected: number; got: number }
  | { problem: 'bad_size'; message: string }
  | { problem: 'mismatch'; message: string };

/** RFC 9162 §2.1.3.2: whether `path` proves `leaf` at `index` in the tree of `size` with root `root`. */
export function verifyInclusion(
  index: number,
  size: number,
  leaf: Buffer,
  path: readonly Buffer[],
  root: Buffer,
): ProofProblem | null {
  if (!(Number.isSafeInteger(index) && Number.isSafeInteger(size) && index >= 0 && index < size))
    return { problem: 'bad_size', message: `leaf index ${index} is not inside a tree of ${size} leaves` };
  const expected = inclusionLength(index, size);
  if (path.length !== expected)
    return {
      problem: 'path_length',
      message: `an audit path for leaf ${index} of ${size} has ${expected} hashes, this one ${path.length}`,
      expected,
      got: path.length,
    };
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of path) {
    if (sn === 0)
      return {
        problem: 'path_length',
        message: 'the audit path is longer than the tree is tall',
        expected,
        got: path.length,
      };
    if (odd(fn) || fn === sn) {
      r = nodeHash(p, r);
      while (!odd(fn) && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    } else r = nodeHash(r, p);
    fn = half(fn);
    sn = half(sn);
  }
  if (sn !== 0 || !r.equals(root))
    return {
      problem: 'mismatch',
      message: `the audit path does not lead from the leaf to the root of the tree of ${size}`,
    };
  return null;
}

/** RFC 9162 §2.1.4.2: whether `path` proves the tree of `old` leaves (root `oldRoot`) a prefix of the tree of `size`. */
export function verifyConsistency(
  old: number,
  size: number,
  oldRoot: Buffer,
  root: Buffer,
  path: readonly Buffer[],
): ProofProblem | null {
  if (!(Number.isSafeInteger(old) && Number.isSafeInteger(size) && old >= 0 && old <= size))
    return { problem: 'bad_size', message: `a tree of ${old} leaves cannot be a prefix of one of ${size}` };
  if (old === 0 || old === size) {
    if (path.length !== 0)
      return {
        problem: 'path_length',
        message: `a consistency proof from ${old} to ${size} is empty`,
        expected: 0,
        got: path.length,
      };
    if (old === size && !oldRoot.equals(root))
      return { problem: 'mismatch', message: `two trees of ${size} leaves with different roots: a fork` };
    return null;
  }
  const expected = consistencyLength(old, size);
  if (path.length !== expected)
    return {
      problem: 'path_length',
      message: `a consistency proof from ${old} to ${size} has ${expected} hashes, this one ${path.length}`,
      expected,
      got: path.length,
    };
  const nodes = [...path];
  if (isPowerOfTwo(old)) nodes.unshift(oldRoot);
  let fn = old - 1;
  let sn = size - 1;
  while (odd(fn)) {
    fn = half(fn);
    sn = half(sn);
  }
  let fr = nodes[0] as Buffer;
  let sr = fr;
  for (const c of nodes.slice(1)) {
    if (sn === 0)
      return {
        problem: 'path_length',
        message: 'the consistency proof is longer than the tree is tall',
        expected,
        got: path.length,
      };
    if (odd(fn) || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      while (!odd(fn) && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    } else sr = nodeHash(sr, c);
    fn = half(fn);
    sn = half(sn);
  }
  if (sn !== 0 || !fr.equals(oldRoot) || !sr.equals(root))
    return {
      problem: 'mismatch',
      message: `the proof does not show the tree of ${old} leaves as a prefix of the tree of ${size}: the history was rewritten or forked`,
    };
  return null;
}
