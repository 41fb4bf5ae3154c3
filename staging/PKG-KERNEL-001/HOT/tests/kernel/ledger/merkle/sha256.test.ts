// The JavaScript SHA-256 the tree hashes with: the FIPS 180-2 / NIST CSRC example vectors (one block, two blocks,
// a multi-block million bytes, and the empty message), and the tree's fixed-size leaf and node inputs against
// node:crypto's SHA-256 over the bytes RFC 9162 §2.1.1 names, including a digest written over its own input.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { leafInto, leafIntoView, nodeInto, nodeIntoView, sha256 } from '../../../../kernel/ledger/merkle/sha256.js';

const NIST: [string, string][] = [
  ['', 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'],
  ['abc', 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'],
  [
    'abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq',
    '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1',
  ],
  [
    'abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu',
    'cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1',
  ],
  ['a'.repeat(1_000_000), 'cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0'],
];

test('sha256 gives the NIST example digests', () => {
  for (const [message, digest] of NIST)
    assert.equal(sha256(Buffer.from(message, 'latin1')).toString('hex'), digest, `${message.length} bytes`);
});

test('sha256 agrees with node:crypto at every length around the block and padding boundaries', () => {
  const data = randomBytes(200);
  for (let n = 0; n <= 200; n += 1) {
    const bytes = data.subarray(0, n);
    assert.deepEqual(sha256(bytes), createHash('sha256').update(bytes).digest(), `${n} bytes`);
  }
});

test('leafInto and nodeInto are SHA-256 of 0x00 ‖ a and 0x01 ‖ a ‖ b, written at any offset, over their input too', () => {
  for (let round = 0; round < 200; round += 1) {
    const buf = randomBytes(160);
    const a = buf.subarray(3, 35);
    const b = buf.subarray(64, 96);
    const leaf = createHash('sha256')
      .update(Buffer.from([0x00]))
      .update(a)
      .digest();
    const node = createHash('sha256')
      .update(Buffer.from([0x01]))
      .update(a)
      .update(b)
      .digest();
    const out = Buffer.alloc(40);
    leafInto(buf, 3, out, 5);
    assert.deepEqual(out.subarray(5, 37), leaf);
    nodeInto(buf, 3, buf, 64, out, 8);
    assert.deepEqual(out.subarray(8, 40), node);
    // In place: the tree hashes a leaf over the entry hash it was decoded into, and folds a tile over itself.
    const self = Buffer.from(buf);
    leafInto(self, 3, self, 3);
    assert.deepEqual(self.subarray(3, 35), leaf);
    const pair = Buffer.from(buf);
    nodeInto(pair, 64, pair, 96, pair, 64);
    assert.deepEqual(
      pair.subarray(64, 96),
      createHash('sha256')
        .update(Buffer.from([0x01]))
        .update(buf.subarray(64, 128))
        .digest(),
    );
  }
});

test('leafIntoView and nodeIntoView are the same hashes over DataViews, at any offset, over their input too', () => {
  const view = (b: Buffer) => new DataView(b.buffer, b.byteOffset, b.byteLength);
  for (let round = 0; round < 200; round += 1) {
    const buf = randomBytes(160);
    const leaf = createHash('sha256')
      .update(Buffer.from([0x00]))
      .update(buf.subarray(3, 35))
      .digest();
    const node = createHash('sha256')
      .update(Buffer.from([0x01]))
      .update(buf.subarray(3, 35))
      .update(buf.subarray(64, 96))
      .digest();
    const out = Buffer.alloc(41);
    leafIntoView(view(buf), 3, view(out), 5);
    assert.deepEqual(out.subarray(5, 37), leaf);
    nodeIntoView(view(buf), 3, view(buf), 64, view(out), 9);
    assert.deepEqual(out.subarray(9, 41), node);
    const self = Buffer.from(buf);
    leafIntoView(view(self), 3, view(self), 3);
    assert.deepEqual(self.subarray(3, 35), leaf);
    const pair = Buffer.from(buf);
    nodeIntoView(view(pair), 3, view(pair), 64, view(pair), 3);
    assert.deepEqual(pair.subarray(3, 35), node);
  }
});
