import type pg from 'pg';
import { coded, connectionUnusable, ignoreDropped } from '../pg/pg-errors.js';
import type { PgReader } from '../pg/pg-reader.js';
import { PG_ROW_COLUMNS } from '../pg/pg-query.js';
import { entryRowOf } from '../pg/pg-rows.js';
import type { EntryRow } from '../rows.js';
import { entryLeaf } from './hash.js';
import { treeDamaged } from './sqlite-tree.js';
import { splitHashes, type TileSource, TILE_WIDTH } from './tiles.js';
import type { LedgerTree } from './tree-view.js';
import type { ChainRoots } from './note-checkpoints.js';
import { noTree, type TreeCheck, TreeChecker } from './tree-check.js';

/** Thrown by a snapshot's TileSource for a tile not read yet: `compute` reads it and runs its function again. */
class TileMiss {
  constructor(
    readonly level: number,
    readonly index: number,
  ) {}
}

/** Re-runs of one `compute` before it gives up: each run reads at least one tile, a proof needs O(levels) of them. */
const MAX_RUNS = 256;

/**
 * A PostgreSQL ledger's tree read in one REPEATABLE READ snapshot (the same tree as the SQLite file's, tiles of
 * level ≥ 1 in cplane_merkle_tiles, level 0 the entries' entry_hash). The proof code is synchronous: `compute`
 * runs it on the tiles read so far, reads the tile it missed, and runs it again (it must be pure).
 */
export class PgTreeSnapshot {
  private readonly tiles = new Map<string, Buffer[]>();
  readonly tree: LedgerTree;

  private constructor(
    private readonly client: pg.PoolClient,
    size: number,
    ledgerId: string,
  ) {
    this.tree = { size, ledgerId, source: this.source() };
  }

  static async open<T>(store: PgReader, fn: (snapshot: PgTreeSnapshot) => Promise<T>): Promise<T> {
    const client = await coded(store.pool.connect());
    client.on('error', ignoreDropped);
    let failure: unknown;
    try {
      await coded(client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY'));
      const r = await coded(
        client.query(
          `SELECT seq, entry_hash FROM cplane_entries WHERE seq = 1
           UNION ALL (SELECT seq, entry_hash FROM cplane_entries ORDER BY seq DESC LIMIT 1)`,
        ),
      );
      const rows = r.rows as { seq: string; entry_hash: string }[];
      const size = rows.length === 0 ? 0 : Number((rows[rows.length - 1] as { seq: string }).seq);
      return await fn(new PgTreeSnapshot(client, size, rows[0]?.entry_hash ?? ''));
    } catch (error) {
      failure = error;
      throw error;
    } finally {
      await client.query('ROLLBACK').catch(() => undefined);
      client.off('error', ignoreDropped);
      client.release(failure !== undefined && connectionUnusable(failure) ? (failure as Error) : undefined);
    }
  }

  /** `fn` over the tree, with every tile it reads loaded from the snapshot. */
  async compute<T>(fn: (tree: LedgerTree) => T): Promise<T> {
    for (let run = 0; ; run += 1) {
      try {
        return fn(this.tree);
      } catch (error) {
        if (!(error instanceof TileMiss) || run >= MAX_RUNS) throw error;
        await this.tile(error.level, error.index);
      }
    }
  }

  /** The hashes of tile `index` of `level` as stored at this size (level 0: the leaf hashes). */
  async tile(level: number, index: number): Promise<Buffer[]> {
    const key = `${level}/${index}`;
    const cached = this.tiles.get(key);
    if (cached !== undefined) return cached;
    const hashes =
      level === 0
        ? (await this.entryHashes(index * TILE_WIDTH, TILE_WIDTH)).map(entryLeaf)
        : await this.storedTile(level, index);
    this.tiles.set(key, hashes);
    return hashes;
  }

  /** The entry hashes (hex) of entries #from+1 … #from+count within the snapshot's size. */
  async entryHashes(from: number, count: number): Promise<string[]> {
    const r = await coded(
      this.client.query('SELECT entry_hash FROM cplane_entries WHERE seq > $1 AND seq <= $2 ORDER BY seq', [
        from,
        Math.min(from + count, this.tree.size),
      ]),
    );
    return (r.rows as { entry_hash: string }[]).map((row) => row.entry_hash);
  }

  /** The stored row of entry `id`, or undefined. */
  async entryRow(id: string): Promise<EntryRow | undefined> {
    const r = await coded(this.client.query(`SELECT ${PG_ROW_COLUMNS} FROM cplane_entries WHERE id = $1`, [id]));
    const row = r.rows[0] as Record<string, unknown> | undefined;
    return row === undefined ? undefined : entryRowOf(row);
  }

  /** Every stored tile of level ≥ 1 (`level/index` → bytes), or null when the store has no tile table. */
  async storedTiles(): Promise<Map<string, Buffer> | null> {
    const table = await coded(this.client.query("SELECT to_regclass('cplane_merkle_tiles') IS NOT NULL AS present"));
    if ((table.rows[0] as { present: boolean }).present !== true) return null;
    const r = await coded(this.client.query('SELECT level, idx, hashes FROM cplane_merkle_tiles'));
    const tiles = new Map<string, Buffer>();
    for (const row of r.rows as { level: number; idx: string; hashes: Buffer }[])
      tiles.set(`${row.level}/${row.idx}`, row.hashes);
    return tiles;
  }

  private async storedTile(level: number, index: number): Promise<Buffer[]> {
    const r = await coded(
      this.client.query('SELECT hashes FROM cplane_merkle_tiles WHERE level = $1 AND idx = $2', [level, index]),
    );
    const bytes = (r.rows[0] as { hashes: Buffer } | undefined)?.hashes;
    return bytes === undefined ? [] : splitHashes(bytes);
  }

  private source(): TileSource {
    return {
      hashes: (level, from, count) => {
        const out: Buffer[] = [];
        for (let at = from; at < from + count; ) {
          const index = Math.floor(at / TILE_WIDTH);
          const hashes = this.tiles.get(`${level}/${index}`);
          if (hashes === undefined) throw new TileMiss(level, index);
          const offset = at - index * TILE_WIDTH;
          const take = Math.min(from + count - at, TILE_WIDTH - offset);
          if (hashes.length < offset + take)
            throw treeDamaged(
              `Merkle tile ${level}/${index} holds ${hashes.length} hashes, the tree needs ${offset + take}`,
              { level, index },
            );
          out.push(...hashes.slice(offset, offset + take));
          at += take;
        }
        return out;
      },
    };
  }
}

/** Entries read per query when the chain is walked. */
const WALK_CHUNK = 4096;

/** checkLedgerTree on PostgreSQL: the stored tiles against the tree recomputed from the chain, in one snapshot. */
export async function checkPgTree(
  store: PgReader,
  sizes: ReadonlySet<number>,
): Promise<{ check: TreeCheck; roots: ChainRoots }> {
  return PgTreeSnapshot.open(store, async (snapshot) => {
    const { size, ledgerId } = snapshot.tree;
    const stored = await snapshot.storedTiles();
    const checker = new TreeChecker(stored ?? new Map(), sizes);
    for (let from = 0; from < size; from += WALK_CHUNK)
      for (const hash of await snapshot.entryHashes(from, WALK_CHUNK)) checker.push(hash);
    const check = stored === null ? noTree(size) : checker.finish();
    return {
      check,
      roots: {
        ledgerId,
        size,
        rootAt: (s) => checker.rootAt(s),
        tilesDamagedFrom: stored === null ? Number.POSITIVE_INFINITY : checker.damagedFrom,
      },
    };
  });
}
