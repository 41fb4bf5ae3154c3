import type Database from 'better-sqlite3';
import { CpError } from '../../errors.js';
import { hashHex } from '../schema.js';
import { entryLeaf, leafHash } from './hash.js';
import { splitHashes, type TileSource, TILE_WIDTH, TreeEdge } from './tiles.js';

/**
 * The Merkle tree's tiles of level ≥ 1 (tlog-tiles layout, one row per tile, its hashes concatenated). Level 0 is
 * not stored again: its hashes are the leaves of the entries' own entry_hash column, so tree and chain cannot
 * disagree about a leaf. Created by the first append of a ledger without it (optional in the schema check).
 */
export const MERKLE_DDL = `CREATE TABLE IF NOT EXISTS merkle_tiles (
  level INTEGER NOT NULL,
  idx INTEGER NOT NULL,
  hashes BLOB NOT NULL,
  PRIMARY KEY (level, idx)
) STRICT`;
/** ledger_meta key marking a ledger whose tree covers its chain. */
export const MERKLE_META_KEY = 'merkle_tiles';
const MERKLE_META_VALUE = 'tlog-tiles-v1';
/** Entries read per chunk when building or catching up. */
const CHUNK = 4096;

export function treeDamaged(message: string, details: Record<string, unknown>): CpError {
  return new CpError('ERR_LEDGER_TREE_DAMAGED', message, {
    hint: 'the Merkle tiles disagree with the chain; run `cplane ledger verify`, and restore the ledger from a copy',
    details,
  });
}

/** Per open database: the folds of its upper tiles (TileSource.memo). */
const memos = new WeakMap<Database.Database, Map<string, Buffer>>();

/** The tiles of a SQLite ledger as a TileSource: level 0 from the chain, the rest from merkle_tiles. */
export function sqliteTileSource(db: Database.Database): TileSource {
  let memo = memos.get(db);
  if (memo === undefined) {
    memo = new Map();
    memos.set(db, memo);
  }
  // Prepared on first use: merkle_tiles does not exist until a ledger's first append lays it out.
  let leaves: Database.Statement | undefined;
  let tile: Database.Statement | undefined;
  return {
    memo,
    hashes(level, from, count) {
      if (level === 0) {
        // The stored column as it is (32 bytes in a version 2 file, hex text in version 1): no hex round trip.
        leaves ??= db.prepare('SELECT entry_hash FROM entries WHERE seq > ? AND seq <= ? ORDER BY seq').pluck();
        const hashes = (leaves.all(from, from + count) as (Buffer | string)[]).map((h) =>
          typeof h === 'string' ? entryLeaf(h) : leafHash(h),
        );
        if (hashes.length !== count)
          throw treeDamaged(`the chain has no entries #${from + 1}…#${from + count}`, { from, count });
        return hashes;
      }
      const out: Buffer[] = [];
      for (let at = from; at < from + count; ) {
        const index = Math.floor(at / TILE_WIDTH);
        tile ??= db.prepare('SELECT hashes FROM merkle_tiles WHERE level = ? AND idx = ?').pluck();
        const bytes = tile.get(level, index) as Buffer | undefined;
        const hashes = bytes === undefined ? [] : splitHashes(bytes);
        const offset = at - index * TILE_WIDTH;
        const take = Math.min(from + count - at, TILE_WIDTH - offset);
        if (hashes.length < offset + take)
          throw treeDamaged(
            `Merkle tile ${level}/${index} holds ${hashes.length} hashes, the tree needs ${offset + take}`,
            {
              level,
              index,
            },
          );
        out.push(...hashes.slice(offset, offset + take));
        at += take;
      }
      return out;
    },
  };
}

/** The tree of a SQLite ledger, kept by its appends inside their transaction (Ledger.appendLocked). */
export class SqliteTree {
  private edge: TreeEdge | undefined;
  private laidOut = false;
  private readonly source: TileSource;
  private readonly stmts;
  private put: Database.Statement | undefined;

  constructor(private readonly db: Database.Database) {
    this.source = sqliteTileSource(db);
    this.stmts = {
      meta: db.prepare('SELECT value FROM ledger_meta WHERE key = ?').pluck(),
      setMeta: db.prepare('INSERT OR REPLACE INTO ledger_meta (key, value) VALUES (?, ?)'),
      chunk: db.prepare(`SELECT ${hashHex('entry_hash')} FROM entries WHERE seq > ? ORDER BY seq LIMIT ?`).pluck(),
    };
  }

  /** Whether this ledger has its tree (a ledger from before trees gains it at its next append). */
  has(): boolean {
    if (!this.laidOut) this.laidOut = this.stmts.meta.get(MERKLE_META_KEY) === MERKLE_META_VALUE;
    return this.laidOut;
  }

  /**
   * Under the write lock, before a batch is built on a chain of `size` entries: the edge of the tree of `size`,
   * caught up with what other connections appended, or the whole tree built from the chain when it has none.
   */
  prepare(size: number): void {
    if (!this.has()) {
      this.build(size);
      return;
    }
    if (this.edge !== undefined && this.edge.size > size) this.edge = undefined;
    if (this.edge === undefined) {
      this.edge = TreeEdge.load(size, this.source);
      return;
    }
    // Another connection appended and wrote its tiles: only the edge moves.
    this.pushFromChain(this.edge, size);
    this.edge.takeWrites();
  }

  /** The tree laid out from the chain's first `size` entries, in the caller's transaction. */
  build(size: number): void {
    this.db.exec(MERKLE_DDL);
    this.db.prepare('DELETE FROM merkle_tiles').run();
    const edge = new TreeEdge();
    this.pushFromChain(edge, size, () => this.write(edge));
    this.write(edge);
    this.stmts.setMeta.run(MERKLE_META_KEY, MERKLE_META_VALUE);
    this.laidOut = true;
    this.edge = edge;
  }

  /**
   * A batch's entries, inserted in the caller's transaction after prepare(): their leaves pushed and the tiles they
   * completed or changed written, once per batch. Hashed together after the inserts, not between them, so the
   * hashing runs in one tight loop (in cache) rather than one hash among each row's SQLite and JSON work.
   */
  append(entries: readonly { entry_hash: string }[]): void {
    const edge = this.edge as TreeEdge;
    for (let i = 0; i < entries.length; i += 1) edge.pushEntry((entries[i] as { entry_hash: string }).entry_hash);
    this.write(edge);
  }

  /** After a rolled-back transaction the edge may hold leaves the chain does not: read it again next time. */
  invalidate(): void {
    this.edge = undefined;
    this.laidOut = false;
  }

  private write(edge: TreeEdge): void {
    const writes = edge.takeWrites();
    if (writes.length === 0) return;
    this.put ??= this.db.prepare('INSERT OR REPLACE INTO merkle_tiles (level, idx, hashes) VALUES (?, ?, ?)');
    for (const w of writes) this.put.run(w.level, w.index, w.hashes);
  }

  private pushFromChain(edge: TreeEdge, size: number, afterChunk?: () => void): void {
    while (edge.size < size) {
      const hashes = this.stmts.chunk.all(edge.size, Math.min(CHUNK, size - edge.size)) as string[];
      if (hashes.length === 0) throw treeDamaged(`the chain ends before #${size}`, { size });
      for (const hash of hashes) edge.pushEntry(hash);
      afterChunk?.();
    }
  }
}
