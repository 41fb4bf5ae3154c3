// The Merkle tree of a PostgreSQL ledger, kept by the database itself in each append's transaction: after appends
// of every shape (one entry, a batch, a COPY batch, several writers), its tiles give the RFC 9162 root of the
// chain's leaves (recomputed here from the rows), the same tiles a SQLite ledger of the same chain keeps; a database
// laid out before trees gets its tree built from its chain when it is opened with create.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createDatabase, pgQuery, pgSkip, startPgServer, type PgServer } from '../../scripts/lib/pg-server.js';
import type { AppendInput } from '../../staging/PKG-KERNEL-001/HOT/kernel/ledger/entry.js';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';

const { PgLedger } = await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/pg/pg-ledger.js')>(
  'HOT/kernel/ledger/pg/pg-ledger.js',
);
const { entryLeaf, rootOf } = await fromDevRoot<
  typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/merkle/hash.js')
>('HOT/kernel/ledger/merkle/hash.js');
const { memoryTileSource, splitHashes, TreeEdge } = await fromDevRoot<
  typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/merkle/tiles.js')
>('HOT/kernel/ledger/merkle/tiles.js');

const skip = pgSkip();
let server: PgServer | undefined;
before(async () => {
  if (skip === false) server = await startPgServer();
});
after(() => server?.stop());

const input = (n: number): AppendInput => ({
  event_type: 'EXCHANGE',
  submission_id: `SUB-${n}`,
  decision: 'SUCCESS',
  reason: 'r',
  metadata: { session_id: `S${n % 5}`, n },
});

/** The chain's leaves and the stored tiles (level ≥ 1) of the database at `url`. */
async function treeOf(url: string): Promise<{ leaves: Buffer[]; tiles: Map<string, Buffer> }> {
  const rows = (await pgQuery(url, 'SELECT entry_hash FROM cplane_entries ORDER BY seq')).rows as {
    entry_hash: string;
  }[];
  const tiles = (await pgQuery(url, 'SELECT level, idx, hashes FROM cplane_merkle_tiles')).rows as {
    level: number;
    idx: string;
    hashes: Buffer;
  }[];
  return {
    leaves: rows.map((r) => entryLeaf(r.entry_hash)),
    tiles: new Map(tiles.map((t) => [`${t.level}/${t.idx}`, t.hashes])),
  };
}

/** The stored tiles agree with the tiles of the chain's leaves, and give its root. */
function assertTreeOfChain(tree: { leaves: Buffer[]; tiles: Map<string, Buffer> }): void {
  const expected = memoryTileSource(tree.leaves);
  const source = {
    hashes: (level: number, from: number, count: number): Buffer[] => {
      if (level === 0) return tree.leaves.slice(from, from + count);
      const out: Buffer[] = [];
      for (let at = from; at < from + count; at += 1) {
        const tile = splitHashes(tree.tiles.get(`${level}/${Math.floor(at / 256)}`) ?? Buffer.alloc(0));
        out.push(tile[at % 256] as Buffer);
      }
      return out;
    },
  };
  const size = tree.leaves.length;
  assert.deepEqual(TreeEdge.load(size, source).root(), rootOf(tree.leaves));
  for (const [key, bytes] of tree.tiles) {
    const [level, idx] = key.split('/').map(Number) as [number, number];
    assert.deepEqual(splitHashes(bytes), expected.hashes(level, idx * 256, splitHashes(bytes).length), `tile ${key}`);
  }
  const level1 = Math.floor(size / 256);
  assert.equal(tree.tiles.get('1/0')?.length ?? 0, Math.min(level1, 256) * 32);
}

test('every shape of append extends the tree in its transaction; two writers keep one tree', { skip }, async () => {
  const url = await createDatabase(server as PgServer, 'merkle_shapes');
  const a = await PgLedger.open(url, { create: true });
  const b = await PgLedger.open(url);
  try {
    let n = 0;
    for (const size of [1, 254, 1, 1, 300, 1000, 3, 255]) {
      await a.appendBatch(Array.from({ length: size }, () => input((n += 1))));
      await b.append(input((n += 1)));
    }
    await Promise.all([
      a.appendBatch(Array.from({ length: 200 }, () => input((n += 1)))),
      b.appendBatch(Array.from({ length: 200 }, () => input((n += 1)))),
    ]);
  } finally {
    await a.close();
    await b.close();
  }
  const tree = await treeOf(url);
  assert.equal(tree.leaves.length, 2223);
  assertTreeOfChain(tree);
});

test('a database laid out before trees gets its tree from its chain when opened with create', { skip }, async () => {
  const url = await createDatabase(server as PgServer, 'merkle_upgrade');
  const first = await PgLedger.open(url, { create: true });
  try {
    await first.appendBatch(Array.from({ length: 3000 }, (_, i) => input(i)));
  } finally {
    await first.close();
  }
  for (const drop of [
    'DROP TRIGGER cplane_entries_merkle ON cplane_entries',
    'DROP TABLE cplane_merkle_tiles',
    'DROP FUNCTION cplane_merkle_append()',
    'DROP FUNCTION cplane_merkle_push(bigint)',
  ])
    await pgQuery(url, drop);
  const reopened = await PgLedger.open(url, { create: true });
  try {
    await reopened.append(input(-1));
  } finally {
    await reopened.close();
  }
  assertTreeOfChain(await treeOf(url));
});
