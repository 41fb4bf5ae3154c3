import { test } from 'node:test';
import assert from 'node:assert/strict';
import { blockDigest, EMPTY_LIST, listDigest } from '../../../kernel/ledger/index.js';
import { pieceMemo, prepareContent } from '../../../kernel/ledger/content.js';
import { PieceMemo } from '../../../kernel/ledger/piece-memo.js';

/** A memo whose hash functions count their calls, so a test sees which pieces were hashed. */
function counted(maxChars?: number): { memo: PieceMemo; calls: { blocks: number; lists: number } } {
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
