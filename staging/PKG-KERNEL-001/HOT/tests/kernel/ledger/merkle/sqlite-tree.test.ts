// The Merkle tree of a SQLite ledger, kept by the appends in their transaction: its root is always the RFC 9162
// root of the chain's leaves (recomputed here from the rows, not from the tree), across tile boundaries, several
// connections, a rolled-back batch, and a ledger from before trees that gains its tree on its next append.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Ledger, type LedgerEntry } from '../../../../kernel/ledger/index.js';
import { entryLeaf, rootOf } from '../../../../kernel/ledger/merkle/hash.js';
import { consistencyPath, inclusionPath } from '../../../../kernel/ledger/merkle/proof.js';
import { memoryTileSource, rangeHashOf } from '../../../../kernel/ledger/merkle/tiles.js';
import { treeRoot, withLedgerTree } from '../../../../kernel/ledger/merkle/tree-view.js';
import { appendN, tempDir, tempLedger } from '../helpers.js';

/** The root the chain's rows give, computed without the stored tree. */
function chainRoot(ledger: Ledger, size?: number): Buffer {
  const leaves = [...ledger.rows()].map((row) => entryLeaf(row.entry_hash));
  return rootOf(leaves.slice(0, size ?? leaves.length));
}

function storedRoot(ledger: Ledger, size?: number): Buffer {
  return withLedgerTree(ledger, (tree) => treeRoot(tree, size ?? tree.size));
}

function tileRows(path: string): number {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare('SELECT count(*) FROM merkle_tiles').pluck().get() as number;
  } finally {
    db.close();
  }
}

test('appends keep the tree: its root at every size is the root of the chain, across tile boundaries', (t) => {
  const ledger = tempLedger(t);
  for (const n of [1, 254, 1, 1, 300, 255, 2, 700]) appendN(ledger, n);
  assert.equal(ledger.hasTree, true);
  const size = ledger.head().seq;
  assert.equal(size, 1514);
  for (const s of [1, 255, 256, 257, 511, 512, 513, 1024, size])
    assert.deepEqual(storedRoot(ledger, s), chainRoot(ledger, s), `size ${s}`);
  // Level 0 is the chain itself; level 1 is one partial tile of floor(1514 / 256) = 5 hashes.
  assert.equal(tileRows(ledger.path), 1);
});

test('two connections appending in turn keep one tree', (t) => {
  const first = tempLedger(t);
  const second = Ledger.open(first.path);
  t.after(() => second.close());
  for (let i = 0; i < 6; i += 1) {
    appendN(first, 100 + i);
    appendN(second, 37 * i + 1);
  }
  assert.deepEqual(storedRoot(first), chainRoot(first));
  assert.deepEqual(storedRoot(second), chainRoot(second));
});

test('a batch rolled back leaves no leaves in the tree', (t) => {
  let collide = false;
  let taken = '';
  const ids = (seq: number, attempt: number): string =>
    collide && seq % 2 === 0 ? taken : `LED-${(seq * 17 + attempt).toString(16).padStart(8, '0')}`;
  const ledger = tempLedger(t, { idSource: ids });
  const [entry] = appendN(ledger, 300) as LedgerEntry[];
  taken = (entry as LedgerEntry).id;
  collide = true;
  assert.throws(() => appendN(ledger, 5), { code: 'ERR_LEDGER_ID_EXHAUSTED' });
  collide = false;
  appendN(ledger, 3);
  assert.equal(ledger.head().seq, 303);
  assert.deepEqual(storedRoot(ledger), chainRoot(ledger));
});

test('a ledger from before trees gains its tree, built from its chain, at its next append', (t) => {
  const path = join(tempDir(t), 'old.sqlite');
  const before = Ledger.open(path, { create: true });
  appendN(before, 700);
  before.close();
  // What a ledger written before trees looks like: no merkle_tiles, no marker.
  const raw = new Database(path);
  raw.exec("DROP TABLE merkle_tiles; DELETE FROM ledger_meta WHERE key = 'merkle_tiles'");
  raw.close();
  const ledger = Ledger.open(path);
  t.after(() => ledger.close());
  assert.equal(ledger.hasTree, false);
  assert.deepEqual(storedRoot(ledger), chainRoot(ledger), 'read from the chain while it has no tree');
  appendN(ledger, 1);
  assert.equal(ledger.hasTree, true);
  assert.equal(tileRows(path), 1);
  assert.deepEqual(storedRoot(ledger), chainRoot(ledger));
  assert.deepEqual(storedRoot(ledger, 512), chainRoot(ledger, 512));
});

test('a ledger opened without its tree appends no tiles; an ordinary open builds them from the chain, and one with a tree refuses it', (t) => {
  const path = join(tempDir(t), 'without.sqlite');
  const without = Ledger.openWithoutTree(path, { create: true });
  appendN(without, 300);
  appendN(without, 20);
  assert.equal(without.hasTree, false);
  without.close();
  const raw = new Database(path, { readonly: true });
  const tables = raw.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'merkle_tiles'").pluck().get();
  raw.close();
  assert.equal(tables, 0);
  const ledger = Ledger.open(path);
  t.after(() => ledger.close());
  appendN(ledger, 1);
  assert.equal(ledger.hasTree, true);
  assert.deepEqual(storedRoot(ledger), chainRoot(ledger));
  // The file keeps a tree now: an append that would leave it behind is refused, and the chain is unchanged.
  const late = Ledger.openWithoutTree(path);
  t.after(() => late.close());
  assert.throws(() => appendN(late, 1), { code: 'ERR_INTERNAL', message: /keeps a Merkle tree/ });
  assert.equal(ledger.head().seq, 321);
  appendN(ledger, 300);
  assert.deepEqual(storedRoot(ledger), chainRoot(ledger));
});

test('an imported chain gets its tree in the import transaction', (t) => {
  const source = tempLedger(t);
  appendN(source, 600);
  const entries = [...source.rows()].map((row) => source.getBySeq(row.seq) as LedgerEntry);
  const target = Ledger.open(join(tempDir(t), 'imported.sqlite'), { create: true });
  t.after(() => target.close());
  target.importEntries(entries);
  assert.equal(target.hasTree, true);
  assert.deepEqual(storedRoot(target), chainRoot(source));
});

test("proofs read with the tree's size (a leaf's tile read once) and the store's memo of upper folds are the proofs of the chain", (t) => {
  const ledger = tempLedger(t);
  for (const n of [700, 300, 514]) appendN(ledger, n);
  const leaves = [...ledger.rows()].map((row) => entryLeaf(row.entry_hash));
  const plain = rangeHashOf(memoryTileSource(leaves));
  withLedgerTree(ledger, (tree) => {
    assert.ok(tree.source.memo, 'a SQLite source shares its memo');
    // Twice: the second round reads the upper folds from the memo the first filled.
    for (const round of [1, 2])
      for (const size of [1, 255, 256, 257, 1000, 1513, tree.size]) {
        const tiled = rangeHashOf(tree.source, size);
        for (const index of [0, 1, 128, 255, 256, 600, size - 1].filter((i) => i < size))
          assert.deepEqual(
            inclusionPath(index, size, tiled),
            inclusionPath(index, size, plain),
            `round ${round}: ${index} of ${size}`,
          );
        for (const old of [1, 256, 700].filter((o) => o < size))
          assert.deepEqual(consistencyPath(old, size, tiled), consistencyPath(old, size, plain), `${old} → ${size}`);
      }
  });
});
