import { HASH_SIZE } from './hash.js';
import { tilePath, TILE_WIDTH, type TileWrite, TreeEdge } from './tiles.js';

/** One stored tile that is not the tile the chain's tree has at its place. */
export interface TileFinding {
  code: 'ERR_LEDGER_TREE_DAMAGED';
  level: number;
  index: number;
  /** Its tlog-tiles path at the chain's size (`tile/1/000.p/5`). */
  path: string;
  problem: 'edited' | 'missing' | 'width' | 'extra' | 'unreadable';
  message: string;
  hint: string;
}

export interface TreeCheck {
  /** false: the ledger has no tree yet (it gains one at its next append); nothing was compared. */
  present: boolean;
  ok: boolean;
  size: number;
  /** The root recomputed from the chain (base64); the tiles are judged against it, never the other way round. */
  root: string;
  /** Stored tiles compared (level ≥ 1; level 0 is the chain's own entry_hash). */
  tiles: number;
  problems: TileFinding[];
}

const HINT =
  'the Merkle tiles are derived data: restore the ledger from a copy, or rebuild them from the chain (SQLite: `cplane ledger export` and `ledger import` into a new file) once the chain itself verifies';

/** A bound on the findings kept: a tree rewritten wholesale is named by its first tiles. */
const MAX_FINDINGS = 100;

/**
 * The tree recomputed from the chain, leaf by leaf, against the stored tiles (`stored`: `level/index` → bytes). Each
 * full tile is compared as it completes, the partial edge at the end; stored tiles the tree has no place for are
 * named too. The roots at `sizes` (the checkpoint notes' sizes) are kept for the notes' check.
 */
export class TreeChecker {
  private readonly edge = new TreeEdge();
  private readonly seen = new Set<string>();
  private readonly problems: TileFinding[] = [];
  private readonly roots = new Map<number, Buffer>();
  private compared = 0;
  /** The smallest tree size whose root, read from the stored tiles, is not the chain's (Infinity: none). */
  damagedFrom = Number.POSITIVE_INFINITY;

  constructor(
    private readonly stored: ReadonlyMap<string, Buffer>,
    private readonly sizes: ReadonlySet<number> = new Set(),
  ) {}

  push(entryHash: string): void {
    this.edge.pushEntry(entryHash);
    if (this.edge.size % TILE_WIDTH === 0) for (const write of this.edge.takeFull()) this.compare(write);
    if (this.sizes.has(this.edge.size)) this.roots.set(this.edge.size, this.edge.root());
  }

  /** The root the chain's tree has at `size` (one of `sizes`, or the final size), once pushed. */
  rootAt(size: number): Buffer | undefined {
    return size === this.edge.size ? this.edge.root() : this.roots.get(size);
  }

  finish(): TreeCheck {
    const size = this.edge.size;
    for (const write of this.edge.takeWrites()) this.compare(write);
    for (const key of this.stored.keys()) {
      if (this.seen.has(key)) continue;
      const [level, index] = key.split('/').map(Number) as [number, number];
      this.find(
        level,
        index,
        'extra',
        `stored Merkle tile ${level}/${index} has no place in the tree of the chain's ${size} entries: entries were removed from the chain, or the tile was added`,
      );
    }
    return {
      present: true,
      ok: this.problems.length === 0,
      size,
      root: this.edge.root().toString('base64'),
      tiles: this.compared,
      problems: this.problems,
    };
  }

  private compare(write: TileWrite): void {
    const key = `${write.level}/${write.index}`;
    this.seen.add(key);
    this.compared += 1;
    const bytes = this.stored.get(key);
    const width = write.hashes.length / HASH_SIZE;
    const path = tilePath(write.level, write.index, width);
    if (bytes === undefined) {
      this.wrongFrom(write.level, write.index, 0);
      this.find(write.level, write.index, 'missing', `Merkle tile ${path} is missing`, width);
      return;
    }
    if (bytes.equals(write.hashes)) return;
    const hashAt = (b: Buffer, i: number): Buffer => b.subarray(i * HASH_SIZE, (i + 1) * HASH_SIZE);
    let at = 0;
    while (at < width && hashAt(bytes, at).equals(hashAt(write.hashes, at))) at += 1;
    this.wrongFrom(write.level, write.index, at);
    if (bytes.length !== write.hashes.length) {
      this.find(
        write.level,
        write.index,
        'width',
        `Merkle tile ${path} holds ${bytes.length} bytes (${Math.floor(bytes.length / HASH_SIZE)} hashes); the chain's tree has ${width} hashes there`,
        width,
      );
      return;
    }
    // Hash `at` of this tile is the root of 256^level leaves: the entries it covers.
    const span = TILE_WIDTH ** write.level;
    const first = (write.index * TILE_WIDTH + at) * span + 1;
    this.find(
      write.level,
      write.index,
      'edited',
      `Merkle tile ${path} was edited: its hash ${at} (over entries #${first}…#${first + span - 1}) is not the one the chain gives`,
      width,
    );
  }

  /**
   * Hash `at` of a tile is wrong or absent: a tree read from the stored tiles has another root at every size that
   * covers the whole of that hash's span.
   */
  private wrongFrom(level: number, index: number, at: number): void {
    this.damagedFrom = Math.min(this.damagedFrom, (index * TILE_WIDTH + at + 1) * TILE_WIDTH ** level);
  }

  private find(
    level: number,
    index: number,
    problem: TileFinding['problem'],
    message: string,
    width = TILE_WIDTH,
  ): void {
    if (this.problems.length >= MAX_FINDINGS) return;
    this.problems.push({
      code: 'ERR_LEDGER_TREE_DAMAGED',
      level,
      index,
      path: tilePath(level, index, width),
      problem,
      message,
      hint: HINT,
    });
  }
}

/** The report of a ledger without a tree. */
export function noTree(size: number): TreeCheck {
  return { present: false, ok: true, size, root: '', tiles: 0, problems: [] };
}

/** The report of a tree that could not be walked at all (the chain or the tile table unreadable). */
export function treeUnreadable(size: number, error: unknown): TreeCheck {
  const message = `the Merkle tree could not be checked: ${error instanceof Error ? error.message : String(error)}`;
  return {
    present: true,
    ok: false,
    size,
    root: '',
    tiles: 0,
    problems: [
      {
        code: 'ERR_LEDGER_TREE_DAMAGED',
        level: 0,
        index: 0,
        path: 'tile/',
        problem: 'unreadable',
        message,
        hint: HINT,
      },
    ],
  };
}

/** Human lines for a tree check. */
export function treeLines(check: TreeCheck): string[] {
  if (!check.present) return ['merkle tree: none yet (laid out from the chain at the next append or `ledger prove`)'];
  const lines = check.problems.slice(0, 20).map((p) => `tree ${p.code} ${p.path}: ${p.message}\n  hint: ${p.hint}`);
  if (check.problems.length > 20) lines.push(`… and ${check.problems.length - 20} more (--json lists them)`);
  lines.push(
    check.ok
      ? `merkle tree: ${check.tiles} tiles match the chain; root of ${check.size}: ${check.root}`
      : `merkle tree DAMAGED: ${check.problems.length} of ${check.tiles} tiles disagree with the chain (its root of ${check.size}: ${check.root})`,
  );
  return lines;
}
