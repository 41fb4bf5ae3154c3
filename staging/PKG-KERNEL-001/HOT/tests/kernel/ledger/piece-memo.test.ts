import { test } from 'node:test';
import assert from 'node:assert/strict';
import { blockDigest, EMPTY_LIST, listDigest } from '../../../kernel/ledger/index.js';
import { pieceMemo, prepareContent } from '../../../kernel/ledger/content.js';
import { fingerprint, PIECE_MEMO_SLOT_NODES, PieceMemo } from '../../../kernel/ledger/piece-memo.js';

/** A memo whose hash functions count their calls, so a test sees which pieces were hashed. */
function counted(maxChars?: number, seed?: number): { memo: PieceMemo; calls: { blocks: number; lists: number } } {
  const calls = { blocks: 0, lists: 0 };
  const memo = new PieceMemo(
    (text) => {
      calls.blocks += 1;
      return blockDigest(text);
    },
    (parent, block) => {
      calls.lists += 1;
      return listDigest(parent, block);
    },
    maxChars,
    seed,
  );
  return { memo, calls };
}

/** A fresh copy of the text (not the same string object), as a newly parsed request gives it. */
const fresh = (text: string): string => JSON.parse(JSON.stringify(text)) as string;

test('a piece seen after the same parent is not hashed again, and gives the digests its text has', () => {
  const { memo, calls } = counted();
  const first = memo.hashed('{"system":"long"', EMPTY_LIST);
  const second = memo.hashed(fresh('{"system":"long"'), EMPTY_LIST);
  assert.equal(calls.blocks, 1);
  assert.equal(calls.lists, 1);
  assert.equal(second.block, blockDigest('{"system":"long"'));
  assert.equal(second.node, listDigest(EMPTY_LIST, second.block));
  assert.equal(second.node, first.node);
});

test('the same text after another parent gets its own node; same-length different text is hashed', () => {
  const { memo, calls } = counted();
  const a = memo.hashed('abc', EMPTY_LIST);
  const b = memo.hashed('abc', a.node);
  assert.notEqual(b.node, a.node);
  assert.equal(b.node, listDigest(a.node, blockDigest('abc')));
  const c = memo.hashed('abd', EMPTY_LIST);
  assert.equal(c.block, blockDigest('abd'));
  assert.equal(c.node, listDigest(EMPTY_LIST, c.block));
  assert.equal(calls.blocks, 3);
  // Both same-length pieces after the empty list are remembered.
  assert.equal(memo.hashed('abd', EMPTY_LIST), c);
  assert.equal(memo.hashed('abc', EMPTY_LIST), a);
  assert.equal(calls.blocks, 3);
});

test('a piece with a lone surrogate is stored and hashed well-formed', () => {
  const { memo } = counted();
  const hashed = memo.hashed('bad \ud800 half', EMPTY_LIST);
  assert.equal(hashed.text, 'bad \ufffd half');
  assert.equal(hashed.block, blockDigest('bad \ufffd half'));
  assert.equal(memo.hashed('bad \ud800 half', EMPTY_LIST).text, 'bad \ufffd half');
});

test('past its bound the memo forgets the parents used longest ago, down to three quarters of it', () => {
  const { memo, calls } = counted(10);
  const a = memo.hashed('aaa', EMPTY_LIST);
  memo.hashed('bbb', a.node);
  memo.hashed('aaa', EMPTY_LIST); // the empty list is used again: now newer than a.node
  assert.deepEqual(memo.size, { nodes: 2, chars: 6 });
  memo.hashed('ccc', 'f'.repeat(64)); // 9: within the bound
  memo.hashed('dd', 'e'.repeat(64)); // 11: a.node goes (8, still over 7.5), then the empty list (5)
  assert.deepEqual(memo.size, { nodes: 2, chars: 5 });
  const before = calls.blocks;
  memo.hashed('ccc', 'f'.repeat(64));
  memo.hashed('dd', 'e'.repeat(64));
  assert.equal(calls.blocks, before);
  memo.hashed('aaa', EMPTY_LIST);
  assert.equal(calls.blocks, before + 1);
  // A piece longer than the whole bound is hashed and not kept.
  memo.hashed('x'.repeat(11), EMPTY_LIST);
  assert.ok(memo.size.chars <= 10);
});

test("the ledger's memo keeps prompt pieces and not responses, and gives the digests hashing does", () => {
  const before = pieceMemo.size.nodes;
  const prepared = prepareContent({ prompt: ['{"a":', '1}'], response: [`reply ${Date.now()}`] }, 'content');
  assert.equal(pieceMemo.size.nodes, before + 2);
  const again = prepareContent({ prompt: [fresh('{"a":'), fresh('1}')], response: ['other'] }, 'content');
  assert.equal(pieceMemo.size.nodes, before + 2);
  assert.deepEqual(again.prompt, prepared.prompt);
  const first = listDigest(EMPTY_LIST, blockDigest('{"a":'));
  assert.equal(again.prompt.head, listDigest(first, blockDigest('1}')));
  assert.equal(again.response.head, listDigest(EMPTY_LIST, blockDigest('other')));
});

test('a piece sliced from a large request is remembered without keeping the request alive', async () => {
  const { setFlagsFromString } = await import('node:v8');
  const { runInNewContext } = await import('node:vm');
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const memo = new PieceMemo(
    (text) => blockDigest(text),
    (parent, block) => listDigest(parent, block),
  );
  const requests = 64;
  const requestChars = 1 << 20;
  gc();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < requests; i += 1) {
    // A flat 1 MiB request; the memo is given only its last 64 characters, as the new turn of a conversation.
    const whole = JSON.stringify({ history: 'h'.repeat(requestChars), turn: `turn ${i}` });
    const piece = whole.slice(whole.length - 64);
    assert.equal(memo.hashed(piece, EMPTY_LIST).text, piece);
  }
  gc();
  const grown = process.memoryUsage().heapUsed - before;
  assert.equal(memo.size.nodes, requests);
  // Kept slices would hold all 64 MiB of requests; the memo's own copies come to a few KiB.
  assert.ok(grown < (requests * requestChars) / 8, `the heap grew by ${grown} bytes`);
});

/** `count` distinct pieces of one length (300: past the whole-piece fingerprint), as a flood of messages. */
function sameLength(count: number, tag: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const head = `{"role":"user","content":"${tag} ${String(i).padStart(6, '0')} `;
    const body = `${head}${blockDigest(`${tag}${i}`).repeat(5)}`.slice(0, 298);
    out.push(`${body}"}`);
  }
  return out;
}

test('long same-length pieces are told apart exactly, also where the fingerprint does not look', () => {
  const { memo, calls } = counted(undefined, 0x1234);
  const base = 'q'.repeat(20_000);
  const unread = unreadPositions(base, 0x1234, 1)[0] as number;
  const other = `${base.slice(0, unread)}r${base.slice(unread + 1)}`;
  const a = memo.hashed(base, EMPTY_LIST);
  const b = memo.hashed(other, EMPTY_LIST);
  assert.notEqual(a.block, b.block);
  assert.equal(b.block, blockDigest(other));
  assert.equal(memo.hashed(fresh(base), EMPTY_LIST), a);
  assert.equal(memo.hashed(fresh(other), EMPTY_LIST), b);
  assert.equal(calls.blocks, 2);
});

test('a flood of 50,000 distinct same-length pieces after one parent leaves every lookup a bounded probe', () => {
  const { memo, calls } = counted();
  const system = memo.hashed('{"role":"system","content":"You are a helpful agent."}', EMPTY_LIST);
  const flood = sameLength(50_000, 'flood');
  for (const piece of flood) memo.hashed(piece, system.node);
  assert.ok(memo.longestSlot <= PIECE_MEMO_SLOT_NODES, `a list of ${memo.longestSlot}`);
  const later = sameLength(1_000, 'later');
  const before = { ...memo.stats };
  for (const piece of later) memo.hashed(piece, system.node);
  for (const piece of later) assert.equal(memo.hashed(fresh(piece), system.node).block, blockDigest(piece));
  const lookups = memo.stats.lookups - before.lookups;
  const comparisons = memo.stats.comparisons - before.comparisons;
  assert.equal(lookups, 2_000);
  assert.ok(comparisons <= lookups * PIECE_MEMO_SLOT_NODES, `${comparisons} comparisons for ${lookups} lookups`);
  // Pieces that are not made to collide almost never share a fingerprint: about one comparison per hit.
  assert.ok(comparisons < 1_100, `${comparisons} comparisons`);
  assert.equal(calls.blocks, 1 + 50_000 + 1_000);
});

test('pieces forged to share a fingerprint only lose the memo for themselves', () => {
  const seed = 0x2f00d;
  const { memo, calls } = counted(undefined, seed);
  const system = memo.hashed('{"role":"system","content":"You are a helpful agent."}', EMPTY_LIST);
  const honest = sameLength(10, 'honest');
  for (const piece of honest) memo.hashed(piece, system.node);
  const base = sameLength(1, 'forged')[0] as string;
  const [p, q] = unreadPositions(base, seed, 2) as [number, number];
  let forged = 0;
  for (let x = 0; x < 250 && forged < 50_000; x += 1) {
    for (let y = 0; y < 250 && forged < 50_000; y += 1, forged += 1) {
      const chars = [...base];
      chars[p] = String.fromCharCode(0x100 + x);
      chars[q] = String.fromCharCode(0x100 + y);
      const piece = chars.join('');
      assert.equal(memo.hashed(piece, system.node).block, blockDigest(piece));
    }
  }
  assert.ok(memo.longestSlot <= PIECE_MEMO_SLOT_NODES, `a list of ${memo.longestSlot}`);
  const before = { blocks: calls.blocks, comparisons: memo.stats.comparisons };
  for (const piece of honest) assert.equal(memo.hashed(fresh(piece), system.node).block, blockDigest(piece));
  assert.equal(calls.blocks, before.blocks, 'the honest pieces are still remembered');
  assert.ok(memo.stats.comparisons - before.comparisons <= honest.length * PIECE_MEMO_SLOT_NODES);
});

test('a flood never holds more than the character bound, nor one parent more than a quarter of it', () => {
  const maxChars = 300 * 400;
  const { memo, calls } = counted(maxChars);
  const parent = (i: number): string => `${i}`.padStart(64, 'a');
  const others = sameLength(40, 'other').map((piece, i) => memo.hashed(piece, parent(i)));
  const system = memo.hashed('{"role":"system","content":"You are a helpful agent."}', EMPTY_LIST);
  let peak = 0;
  for (const piece of sameLength(5_000, 'flood')) {
    memo.hashed(piece, system.node);
    peak = Math.max(peak, memo.size.chars);
  }
  const floor = 40 * 300 + system.piece.length;
  assert.ok(peak <= floor + maxChars / 4, `held ${peak} characters`);
  const before = calls.blocks;
  for (const [i, other] of others.entries()) assert.equal(memo.hashed(fresh(other.piece), parent(i)), other);
  assert.equal(calls.blocks, before, 'the flood took room only from its own parent');
});

test('eviction keeps the parents used lately, however many others pass through', () => {
  const { memo, calls } = counted(100 * 50);
  const hot = memo.hashed('h'.repeat(100), EMPTY_LIST);
  for (let i = 0; i < 10_000; i += 1) {
    memo.hashed(`${i}`.padStart(100, 'c'), `${i}`.padStart(64, 'b'));
    if (i % 10 === 0) assert.equal(memo.hashed(fresh(hot.piece), EMPTY_LIST), hot);
  }
  assert.equal(calls.blocks, 1 + 10_000);
  assert.ok(memo.size.chars <= 100 * 50);
});

/** `count` positions of `piece` whose character the fingerprint under `seed` does not read. */
function unreadPositions(piece: string, seed: number, count: number): number[] {
  const out: number[] = [];
  const whole = fingerprint(piece, seed);
  for (let at = 0; at < piece.length && out.length < count; at += 1) {
    const changed = `${piece.slice(0, at)}${piece[at] === 'Z' ? 'Y' : 'Z'}${piece.slice(at + 1)}`;
    if (fingerprint(changed, seed) === whole) out.push(at);
  }
  assert.equal(out.length, count, 'the fingerprint reads a bounded sample of a long piece');
  return out;
}
