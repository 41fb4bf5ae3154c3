// The Merkle tree against published vectors, not against itself: RFC 6962/9162 roots, audit paths and consistency
// proofs from transparency-dev/merkle proof/verify_test.go (the Certificate Transparency reference set), and the
// tile paths and partial-tile widths of C2SP tlog-tiles.md (its index 1234067 and its tree of size 70,000).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EMPTY_ROOT, leafHash, rootOf } from '../../../../kernel/ledger/merkle/hash.js';
import {
  consistencyPath,
  inclusionPath,
  verifyConsistency,
  verifyInclusion,
} from '../../../../kernel/ledger/merkle/proof.js';
import { rangeHashOf, tilePath, TreeEdge, type TileSource } from '../../../../kernel/ledger/merkle/tiles.js';

const dh = (hex: string): Buffer => Buffer.from(hex, 'hex');
const LEAVES = ['', '00', '10', '2021', '3031', '40414243', '5051525354555657', '606162636465666768696a6b6c6d6e6f'].map(
  (h) => leafHash(dh(h)),
);
const ROOTS = [
  '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
  'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
  'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
  '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
  '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
  'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
  '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
];
// {leaf (1-based), size, proof}, as the source lists them.
const INCLUSION: [number, number, string[]][] = [
  [
    1,
    8,
    [
      '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4',
    ],
  ],
  [
    6,
    8,
    [
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
      'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ],
  ],
  [3, 3, ['fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125']],
  [
    2,
    5,
    [
      '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
    ],
  ],
];
const CONSISTENCY: [number, number, string[]][] = [
  [
    1,
    8,
    [
      '96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7',
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4',
    ],
  ],
  [
    6,
    8,
    [
      '0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a',
      'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ],
  ],
  [
    2,
    5,
    [
      '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e',
      'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b',
    ],
  ],
  [
    6,
    7,
    [
      '0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a',
      'b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f',
      'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    ],
  ],
];

/** A TileSource over leaves in memory, tiles computed by the edge as a store would keep them. */
function memorySource(leaves: readonly Buffer[]): TileSource {
  const levels: Buffer[][] = [leaves.slice()];
  for (let l = 0; (levels[l] as Buffer[]).length >= 256; l += 1) {
    const below = levels[l] as Buffer[];
    const up: Buffer[] = [];
    for (let i = 0; i + 256 <= below.length; i += 256) up.push(rootOf(below.slice(i, i + 256)));
    levels.push(up);
  }
  return { hashes: (level, from, count) => (levels[level] as Buffer[]).slice(from, from + count) };
}

test('roots of the reference leaves match RFC 6962 for every size 0..8, by the edge and by the tiles', () => {
  assert.equal(rootOf([]).toString('hex'), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  assert.deepEqual(new TreeEdge().root(), EMPTY_ROOT);
  for (let n = 1; n <= 8; n += 1) {
    assert.equal(rootOf(LEAVES.slice(0, n)).toString('hex'), ROOTS[n - 1], `size ${n}`);
    const edge = new TreeEdge();
    for (const leaf of LEAVES.slice(0, n)) edge.push(leaf);
    assert.equal(edge.root().toString('hex'), ROOTS[n - 1], `edge, size ${n}`);
    assert.equal(rangeHashOf(memorySource(LEAVES))(0, n).toString('hex'), ROOTS[n - 1]);
  }
});

test('audit paths match the published ones, verify, and every corruption of them is refused', () => {
  const range = rangeHashOf(memorySource(LEAVES));
  for (const [leaf, size, proof] of INCLUSION) {
    const path = inclusionPath(leaf - 1, size, range);
    assert.deepEqual(
      path.map((h) => h.toString('hex')),
      proof,
      `leaf ${leaf} of ${size}`,
    );
    const root = dh(ROOTS[size - 1] as string);
    const l = LEAVES[leaf - 1] as Buffer;
    assert.equal(verifyInclusion(leaf - 1, size, l, path, root), null);
    const probes: [number, number, Buffer, Buffer[], Buffer][] = [
      [leaf, size, l, path, root],
      [leaf - 1, size * 2, l, path, root],
      [leaf - 1, size, leafHash(Buffer.from('WrongLeaf')), path, root],
      [leaf - 1, size, l, path, EMPTY_ROOT],
      [leaf - 1, size, l, [...path, root], root],
      [leaf - 1, size, l, [root, ...path], root],
      [leaf - 1, size, l, path.slice(0, -1), root],
      ...path.map((_, i): [number, number, Buffer, Buffer[], Buffer] => {
        const bad = path.map((h) => Buffer.from(h));
        (bad[i] as Buffer).writeUInt8((bad[i] as Buffer).readUInt8(0) ^ 8, 0);
        return [leaf - 1, size, l, bad, root];
      }),
    ];
    if (leaf - 2 >= 0) probes.push([leaf - 2, size, l, path, root]);
    for (const [i, s, lh, p, r] of probes) assert.notEqual(verifyInclusion(i, s, lh, p, r), null, `probe ${i}/${s}`);
  }
});

test('consistency proofs match the published ones, verify, and corruptions, forks and rollbacks are refused', () => {
  const range = rangeHashOf(memorySource(LEAVES));
  for (const [old, size, proof] of CONSISTENCY) {
    const path = consistencyPath(old, size, range);
    assert.deepEqual(
      path.map((h) => h.toString('hex')),
      proof,
      `${old} → ${size}`,
    );
    const r1 = dh(ROOTS[old - 1] as string);
    const r2 = dh(ROOTS[size - 1] as string);
    assert.equal(verifyConsistency(old, size, r1, r2, path), null);
    assert.notEqual(verifyConsistency(old, size, r2, r1, path), null, 'swapped roots');
    assert.notEqual(verifyConsistency(size, old, r2, r1, path), null, 'rollback');
    assert.notEqual(verifyConsistency(old - 1 || 2, size, r1, r2, path), null, 'wrong old size');
    assert.notEqual(verifyConsistency(old, size, r1, r2, []), null, 'empty proof');
    assert.notEqual(verifyConsistency(old, size, r1, r2, [...path, r1]), null, 'trailing hash');
    for (let i = 0; i < path.length; i += 1) {
      const bad = path.map((h) => Buffer.from(h));
      (bad[i] as Buffer).writeUInt8((bad[i] as Buffer).readUInt8(0) ^ 16, 0);
      assert.notEqual(verifyConsistency(old, size, r1, r2, bad), null, `bit flip ${i}`);
    }
  }
  assert.equal(verifyConsistency(8, 8, dh(ROOTS[7] as string), dh(ROOTS[7] as string), []), null);
  assert.equal(verifyConsistency(8, 8, dh(ROOTS[7] as string), dh(ROOTS[6] as string), [])?.problem, 'mismatch');
});

test('proofs over tiled trees of many sizes verify for every leaf and size pair sampled (tile boundaries included)', () => {
  const leaves = Array.from({ length: 70_000 }, (_, i) => leafHash(Buffer.from(String(i))));
  const source = memorySource(leaves);
  const range = rangeHashOf(source);
  const sizes = [1, 2, 255, 256, 257, 511, 512, 513, 65_535, 65_536, 65_537, 70_000];
  const edge = new TreeEdge();
  const roots = new Map<number, Buffer>();
  let pushed = 0;
  for (const size of sizes) {
    while (pushed < size) edge.push(leaves[pushed++] as Buffer);
    const root = rootOf(leaves.slice(0, size));
    roots.set(size, root);
    assert.deepEqual(edge.root(), root, `edge root ${size}`);
    assert.deepEqual(TreeEdge.load(size, source).root(), root, `loaded root ${size}`);
    assert.deepEqual(range(0, size), root, `range root ${size}`);
    for (const index of [0, size - 1, Math.floor(size / 2)]) {
      assert.equal(
        verifyInclusion(index, size, leaves[index] as Buffer, inclusionPath(index, size, range), root),
        null,
      );
    }
    for (const old of sizes.filter((s) => s <= size)) {
      const oldRoot = roots.get(old) as Buffer;
      assert.equal(
        verifyConsistency(old, size, oldRoot, root, consistencyPath(old, size, range)),
        null,
        `${old}→${size}`,
      );
    }
  }
});

test("an edge's root is a copy: pushing on, a tile refilling over the hashes it came from, does not change it", () => {
  const leaves = Array.from({ length: 600 }, (_, i) => leafHash(Buffer.from(String(i))));
  const edge = new TreeEdge();
  edge.push(leaves[0] as Buffer);
  const first = edge.root();
  const kept = Buffer.from(first);
  for (const leaf of leaves.slice(1)) edge.push(leaf);
  assert.deepEqual(first, kept);
  assert.deepEqual(first, leaves[0]);
  assert.deepEqual(edge.root(), rootOf(leaves));
});

test('tile paths are encoded as tlog-tiles lays them out', () => {
  assert.equal(tilePath(0, 1234067, 256), 'tile/0/x001/x234/067');
  assert.equal(tilePath(0, 1234067, 8), 'tile/0/x001/x234/067.p/8');
  assert.equal(tilePath(1, 0, 256), 'tile/1/000');
  assert.equal(tilePath(2, 1234, 1), 'tile/2/x001/234.p/1');
  assert.equal(tilePath('entries', 3057500, 256), 'tile/entries/x003/x057/500');
});

test("the tiles of a tree of 70,000 are tlog-tiles.md's: 273 full + 1 of 112 at level 0, 1 full + 1 of 17, 1 of 1", () => {
  const edge = new TreeEdge();
  const written = new Map<string, number>();
  for (let i = 0; i < 70_000; i += 1) {
    edge.push(leafHash(Buffer.from(String(i))));
    for (const w of edge.takeWrites()) written.set(`${w.level}/${w.index}`, w.hashes.length / 32);
  }
  // Level 0 is the chain's own leaves: 70,000 = 273 × 256 + 112.
  assert.equal(Math.floor(70_000 / 256), 273);
  assert.equal(70_000 % 256, 112);
  assert.deepEqual([...written.entries()].sort(), [
    ['1/0', 256],
    ['1/1', 17],
    ['2/0', 1],
  ]);
});
