import type Database from 'better-sqlite3';
import * as crypto from 'node:crypto';
import { createHash } from 'node:crypto';
import { CpError } from '../errors.js';
import { BlockDamage, PACK_MIN_BYTES, packBlock, unpackBlock } from './block-text.js';
import { GENESIS_HASH, HASH_PATTERN, type AppendInput } from './entry.js';
import { type HashedPiece, PieceMemo } from './piece-memo.js';
import { wellFormed } from '../text.js';

/**
 * The exchange content store: an EXCHANGE's prompt and response are kept once per distinct block beside the
 * chain, and the entry commits to them by digest.
 *
 * - A **block** is a piece of text; its digest is the SHA-256 (lowercase hex) of its UTF-8 bytes.
 * - A **list** is an ordered run of blocks, named by a hash chain over their digests: the empty list is 64 zeros,
 *   and appending block `b` to list `L` gives `sha256hex(L + b)` (the two 64-character hex strings, ASCII).
 *   A conversation that grows by a turn extends the list of the turn before it, so it stores only the new nodes.
 * - An EXCHANGE written through the store holds `metadata.content = {prompt: LIST, response: LIST}` in place of
 *   `prompt`/`response`; its entry_hash is computed over the entry as stored, exactly as for any entry.
 */

/** An exchange's content as a writer gives it: ordered pieces whose concatenation is each side's text. */
export interface ContentInput {
  prompt: readonly string[];
  response: readonly string[];
}

/** What `metadata.content` holds: the list digest of each side. */
export interface ContentRefs {
  prompt: string;
  response: string;
}

export const EMPTY_LIST = GENESIS_HASH;

/** Characters of inflated block text a store keeps for reads (a 150k-token conversation is about 0.6 Mi). */
export const INFLATED_MAX_CHARS = 8 << 20;

/** Upper bound on the pieces of one side (a conversation of this many messages is already far past any context window). */
export const MAX_PIECES = 100_000;

/**
 * `text` is ANY so it can hold a block compressed (a BLOB; block-text.ts): a STRICT table refuses a BLOB in a TEXT
 * column. Files laid out before hold `text TEXT` (LEGACY_BLOCKS_DDL): they stay valid and are read the same way,
 * and their new blocks are stored uncompressed (export and import a ledger to compress it).
 */
export const CONTENT_DDL = `
CREATE TABLE IF NOT EXISTS content_blocks (
  digest BLOB PRIMARY KEY,
  size INTEGER NOT NULL,
  text ANY,
  redacted_by TEXT
) STRICT;
CREATE TABLE IF NOT EXISTS content_lists (
  digest BLOB PRIMARY KEY,
  parent BLOB NOT NULL,
  block BLOB NOT NULL
) WITHOUT ROWID, STRICT;
CREATE TRIGGER IF NOT EXISTS content_blocks_no_delete BEFORE DELETE ON content_blocks
  BEGIN SELECT RAISE(ABORT, 'content blocks are redacted, never deleted'); END;
CREATE TRIGGER IF NOT EXISTS content_blocks_redact_only BEFORE UPDATE ON content_blocks
  WHEN NEW.digest IS NOT OLD.digest OR NEW.size IS NOT OLD.size OR NEW.text IS NOT NULL OR NEW.redacted_by IS NULL OR OLD.text IS NULL
  BEGIN SELECT RAISE(ABORT, 'a content block changes only by redaction'); END;
CREATE TRIGGER IF NOT EXISTS content_lists_no_update BEFORE UPDATE ON content_lists
  BEGIN SELECT RAISE(ABORT, 'content lists are append-only'); END;
CREATE TRIGGER IF NOT EXISTS content_lists_no_delete BEFORE DELETE ON content_lists
  BEGIN SELECT RAISE(ABORT, 'content lists are append-only'); END;
`;

/** content_blocks as laid out before blocks were compressed: still a valid ledger's schema. */
export const LEGACY_BLOCKS_DDL = `
CREATE TABLE IF NOT EXISTS content_blocks (
  digest BLOB PRIMARY KEY,
  size INTEGER NOT NULL,
  text TEXT,
  redacted_by TEXT
) STRICT;
`;

export const CONTENT_OBJECTS = [
  'content_blocks',
  'content_lists',
  'content_blocks_no_delete',
  'content_blocks_redact_only',
  'content_lists_no_update',
  'content_lists_no_delete',
] as const;

/** node:crypto's one-shot hash (Node >= 20.12): a fraction of createHash's cost on the short inputs of a list. */
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;

export function blockDigest(text: string): string {
  return oneShot ? oneShot('sha256', text, 'hex') : createHash('sha256').update(text, 'utf8').digest('hex');
}

/** Both digests are ASCII hex, so their concatenation's UTF-8 bytes are exactly its 128 characters. */
export function listDigest(parent: string, block: string): string {
  return oneShot
    ? oneShot('sha256', parent + block, 'hex')
    : createHash('sha256')
        .update(parent + block)
        .digest('hex');
}

/** Shared by every ledger of the process: a digest depends on the text alone, whichever file stores it. */
export const pieceMemo = new PieceMemo(
  (text) => blockDigest(text),
  (parent, block) => listDigest(parent, block),
);

/** One side prepared outside the write lock: its blocks, their digests and the list node after each. */
export interface PreparedSide {
  head: string;
  texts: string[];
  blocks: string[];
  nodes: string[];
}

export interface PreparedContent {
  prompt: PreparedSide;
  response: PreparedSide;
}

/** Checks the writer's pieces (strings, bounded) and hashes them; empty pieces add nothing and are dropped. */
export function prepareContent(input: unknown, where: string): PreparedContent {
  const record = input as Record<string, unknown> | null;
  if (typeof record !== 'object' || record === null || Array.isArray(record)) throw badContent(where, 'an object');
  const extra = Object.keys(record).filter((key) => key !== 'prompt' && key !== 'response');
  if (extra.length > 0) throw badContent(where, `only prompt and response (not ${extra.join(', ')})`);
  return {
    prompt: prepareSide(record.prompt, `${where}.prompt`, pieceMemo),
    // A response is new text each time (it comes back only inside the next prompt, as a piece of its own JSON):
    // remembering it would only take room from the prompts'.
    response: prepareSide(record.response, `${where}.response`, undefined),
  };
}

function prepareSide(pieces: unknown, where: string, memo: PieceMemo | undefined): PreparedSide {
  if (!Array.isArray(pieces) || pieces.length > MAX_PIECES || !pieces.every((p) => typeof p === 'string')) {
    throw badContent(where, `an array of at most ${MAX_PIECES} strings`);
  }
  const side: PreparedSide = { head: EMPTY_LIST, texts: [], blocks: [], nodes: [] };
  for (const piece of pieces as string[]) {
    if (piece.length === 0) continue;
    const hashed = memo ? memo.hashed(piece, side.head) : hashPiece(piece, side.head);
    side.head = hashed.node;
    side.texts.push(hashed.text);
    side.blocks.push(hashed.block);
    side.nodes.push(hashed.node);
  }
  return side;
}

function hashPiece(piece: string, parent: string): HashedPiece {
  // Hashed as stored: a lone surrogate would reach SQLite as U+FFFD and the digest would never match again.
  const text = wellFormed(piece);
  const block = blockDigest(text);
  return { piece, text, block, node: listDigest(parent, block) };
}

function badContent(where: string, wanted: string): CpError {
  return new CpError('ERR_LEDGER_ENTRY_INVALID', `${where} must be ${wanted}`, {
    hint: 'pass content as {prompt: string[], response: string[]}: the pieces of each side, in order',
    details: { field: where },
  });
}

/** `metadata.content` of an entry written through the store, or undefined for any other entry. */
export function contentRefs(metadata: Record<string, unknown>): ContentRefs | undefined {
  const content = metadata.content as Record<string, unknown> | undefined;
  if (typeof content !== 'object' || content === null || Array.isArray(content)) return undefined;
  const { prompt, response } = content;
  return typeof prompt === 'string' &&
    HASH_PATTERN.test(prompt) &&
    typeof response === 'string' &&
    HASH_PATTERN.test(response)
    ? { prompt, response }
    : undefined;
}

/** One side read back: its text, the REDACTED entries that removed parts of it, and whether anything is missing. */
export interface ReadSide {
  text: string;
  redacted_by: string[];
  missing: boolean;
}

const WALK_SQL = `WITH RECURSIVE walk(digest, parent, block, depth) AS (
  SELECT digest, parent, block, 0 FROM content_lists WHERE digest = unhex(?)
  UNION ALL
  SELECT l.digest, l.parent, l.block, w.depth + 1 FROM content_lists l JOIN walk w ON l.digest = w.parent
  WHERE w.depth < ${MAX_PIECES}
) SELECT lower(hex(w.digest)), lower(hex(w.parent)), lower(hex(w.block)), b.text, b.redacted_by, b.digest IS NOT NULL, b.size FROM walk w
  LEFT JOIN content_blocks b ON b.digest = w.block ORDER BY w.depth DESC`;

/** The walk from `head` back to the node whose parent is the given stop list (a previous turn's prompt). */
const WALK_SINCE_SQL = `WITH RECURSIVE walk(digest, parent, block, depth) AS (
  SELECT digest, parent, block, 0 FROM content_lists WHERE digest = unhex(?)
  UNION ALL
  SELECT l.digest, l.parent, l.block, w.depth + 1 FROM content_lists l JOIN walk w ON l.digest = w.parent
  WHERE w.depth < ${MAX_PIECES} AND w.parent <> unhex(?)
) SELECT lower(hex(w.parent)), b.text, b.redacted_by, b.digest IS NOT NULL, b.size, lower(hex(w.block)) FROM walk w
  LEFT JOIN content_blocks b ON b.digest = w.block ORDER BY w.depth DESC`;

/** A list's blocks one by one, oldest first: what a reader shows piece by piece (a message, a tool). */
export interface ReadPieces {
  pieces: string[];
  /** Whether the pieces continue the `since` list (false: it is not a prefix of this one, all pieces are given). */
  continues: boolean;
  redacted_by: string[];
  missing: boolean;
}

/**
 * The store's statements on one connection, prepared when first needed (a ledger without content never pays).
 * Digests are stored as their 32 bytes (half the size of the hex, in every row and key) and cross the SQL
 * boundary as hex: `unhex(?)` in, `lower(hex(…))` out.
 */
export class ContentStore {
  private present: boolean | undefined;
  /**
   * Text of compressed blocks read lately, by digest: a conversation's reads inflate the same system prompt and
   * history once, not once per turn. Taken only while the row still holds its BLOB (a redacted row reads NULL
   * first), and dropped whole past its budget. Reads never re-hash (verify and export inflate afresh).
   */
  private readonly inflated = new Map<string, string>();
  private inflatedChars = 0;
  /** Whether content_blocks takes compressed blocks (laid out with `text ANY`; see LEGACY_BLOCKS_DDL). */
  private packs: boolean | undefined;
  private stmts:
    | {
        hasList: Database.Statement;
        block: Database.Statement;
        hasBlock: Database.Statement;
        insertBlock: Database.Statement;
        insertList: Database.Statement;
        walk: Database.Statement;
        walkSince: Database.Statement;
        parent: Database.Statement;
      }
    | undefined;

  constructor(private readonly db: Database.Database) {}

  /** Whether this file has the content tables (they are laid out by the first write that stores content). */
  exists(): boolean {
    if (this.present) return true;
    this.present =
      (this.db
        .prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'content_lists'")
        .pluck()
        .get() as number) > 0;
    return this.present;
  }

  private statements(): NonNullable<ContentStore['stmts']> {
    this.stmts ??= {
      hasList: this.db.prepare('SELECT 1 FROM content_lists WHERE digest = unhex(?)').pluck(),
      block: this.db.prepare('SELECT size, text, redacted_by FROM content_blocks WHERE digest = unhex(?)').raw(),
      hasBlock: this.db.prepare('SELECT 1 FROM content_blocks WHERE digest = unhex(?)').pluck(),
      insertBlock: this.db.prepare(
        'INSERT INTO content_blocks (digest, size, text) VALUES (unhex(?), ?, ?) ON CONFLICT (digest) DO NOTHING',
      ),
      insertList: this.db.prepare(
        'INSERT INTO content_lists (digest, parent, block) VALUES (unhex(?), unhex(?), unhex(?)) ON CONFLICT (digest) DO NOTHING',
      ),
      walk: this.db.prepare(WALK_SQL).raw(),
      walkSince: this.db.prepare(WALK_SINCE_SQL).raw(),
      parent: this.db.prepare('SELECT lower(hex(parent)) FROM content_lists WHERE digest = unhex(?)').pluck(),
    };
    return this.stmts;
  }

  /** Inside the caller's write transaction: lays the tables out on first use. */
  ensure(): void {
    if (this.exists()) return;
    this.db.exec(CONTENT_DDL);
    this.present = true;
    this.packs = true;
  }

  /** What to store for a new block: compressed when this file's layout takes it and it saves (block-text.ts). */
  private stored(text: string, size: number): string | Buffer {
    this.packs ??= /\btext ANY\b/.test(
      (this.db
        .prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'content_blocks'")
        .pluck()
        .get() as string | undefined) ?? '',
    );
    return this.packs ? packBlock(text, size) : text;
  }

  /**
   * A new block, unless its digest is stored already (the same text at another place of another conversation):
   * a large block is looked up first, so it is not compressed only for the insert to be a no-op.
   */
  private insertBlock(digest: string, text: string): void {
    const s = this.statements();
    const size = Buffer.byteLength(text, 'utf8');
    if (size >= PACK_MIN_BYTES && s.hasBlock.get(digest) !== undefined) return;
    s.insertBlock.run(digest, size, this.stored(text, size));
  }

  /**
   * Stores one side inside the caller's write transaction. Only the nodes past the longest prefix already
   * stored are written: a conversation's next turn finds its previous turn's list and adds the new messages.
   */
  storeSide(side: PreparedSide): void {
    const s = this.statements();
    let known = side.nodes.length;
    while (known > 0 && s.hasList.get(side.nodes[known - 1]) === undefined) known -= 1;
    for (let i = known; i < side.nodes.length; i += 1) {
      this.insertBlock(side.blocks[i] as string, side.texts[i] as string);
      s.insertList.run(side.nodes[i], i === 0 ? EMPTY_LIST : side.nodes[i - 1], side.blocks[i]);
    }
  }

  /** A stored block's text for a read: TEXT as it is, a BLOB inflated (or taken from the recent ones). */
  private readText(digest: string, stored: unknown, size: unknown): string | BlockDamage {
    if (typeof stored === 'string') return stored;
    const hit = this.inflated.get(digest);
    if (hit !== undefined) return hit;
    const text = unpackBlock(stored, size);
    if (typeof text === 'string') {
      if (this.inflatedChars + text.length > INFLATED_MAX_CHARS) {
        this.inflated.clear();
        this.inflatedChars = 0;
      }
      if (text.length <= INFLATED_MAX_CHARS) {
        this.inflated.set(digest, text);
        this.inflatedChars += text.length;
      }
    }
    return text;
  }

  /** Drops redacted blocks from the recent texts, so this process does not keep them in memory either. */
  forget(digests: readonly string[]): void {
    for (const digest of digests) {
      const text = this.inflated.get(digest);
      if (text === undefined) continue;
      this.inflated.delete(digest);
      this.inflatedChars -= text.length;
    }
  }

  /** The list `digest` without its last block (its parent node); undefined when the node is not stored. */
  parentOf(digest: string): string | undefined {
    if (digest === EMPTY_LIST || !this.exists()) return undefined;
    return this.statements().parent.get(digest) as string | undefined;
  }

  /** Whether the list `digest` is stored (the empty list always is). */
  hasList(digest: string): boolean {
    return digest === EMPTY_LIST || (this.exists() && this.statements().hasList.get(digest) !== undefined);
  }

  /** Whether the block `digest` is stored (with its text or redacted). */
  hasBlock(digest: string): boolean {
    return this.exists() && this.statements().hasBlock.get(digest) !== undefined;
  }

  /**
   * A block as an export line carries it (its text, never its compressed bytes), or undefined when it is not
   * there. A compressed block that does not inflate to its recorded size is ERR_LEDGER_DAMAGED.
   */
  block(digest: string): ContentBlockLine | undefined {
    if (!this.exists()) return undefined;
    const row = this.statements().block.get(digest) as [number, unknown, string | null] | undefined;
    return row === undefined ? undefined : blockLine(digest, ...row);
  }

  /** Inserts blocks and list nodes as given (an import that was verified first). */
  insertRaw(blocks: readonly ContentBlockLine[], lists: readonly ContentListLine[]): void {
    const s = this.statements();
    const redacted = this.db.prepare(
      'INSERT INTO content_blocks (digest, size, text, redacted_by) VALUES (unhex(?), ?, NULL, ?) ON CONFLICT (digest) DO NOTHING',
    );
    for (const b of blocks) {
      if (b.text === undefined) redacted.run(b.digest, b.size, b.redacted_by ?? null);
      else s.insertBlock.run(b.digest, b.size, this.stored(b.text, b.size));
    }
    for (const l of lists) s.insertList.run(l.digest, l.parent, l.block);
  }

  /**
   * A list's text. A redacted block reads as `[REDACTED:<entry id>]`; a block or node that is not there (the
   * file was edited: verify says so) reads as `[MISSING:<digest>]`, and a compressed block that does not inflate
   * as `[DAMAGED:<digest>]` (both set `missing`), so reading never throws on a damaged store.
   */
  read(head: string): ReadSide {
    const out: ReadSide = { text: '', redacted_by: [], missing: false };
    if (head === EMPTY_LIST) return out;
    if (!this.exists()) return { text: `[MISSING:${head}]`, redacted_by: [], missing: true };
    const rows = this.statements().walk.all(head) as [
      string,
      string,
      string,
      unknown,
      string | null,
      number,
      unknown,
    ][];
    const oldest = rows[0];
    if (oldest === undefined || oldest[1] !== EMPTY_LIST) {
      out.missing = true;
      out.text = `[MISSING:${oldest === undefined ? head : oldest[1]}]`;
    }
    const parts: string[] = [out.text];
    for (const [, , block, stored, redactedBy, present, size] of rows) {
      if (stored !== null) {
        const text = this.readText(block, stored, size);
        if (text instanceof BlockDamage) {
          out.missing = true;
          parts.push(`[DAMAGED:${block}]`);
        } else parts.push(text);
      } else if (present === 1 && redactedBy !== null) {
        parts.push(`[REDACTED:${redactedBy}]`);
        if (!out.redacted_by.includes(redactedBy)) out.redacted_by.push(redactedBy);
      } else {
        out.missing = true;
        parts.push(`[MISSING:${block}]`);
      }
    }
    out.text = parts.join('');
    return out;
  }

  /**
   * The blocks of `head` after the list `since` (a conversation's previous turn), or all of them when `since`
   * is not a prefix of it; markers as in read(). The walk stops at `since`, so a long conversation's turn costs
   * only its new messages.
   */
  readPieces(head: string, since: string = EMPTY_LIST): ReadPieces {
    const out: ReadPieces = { pieces: [], continues: since === EMPTY_LIST, redacted_by: [], missing: false };
    if (head === EMPTY_LIST || head === since) return { ...out, continues: true };
    if (!this.exists()) return { ...out, pieces: [`[MISSING:${head}]`], missing: true };
    let rows = this.statements().walkSince.all(head, since) as [
      string,
      unknown,
      string | null,
      number,
      unknown,
      string,
    ][];
    let first = rows[0];
    if (since !== EMPTY_LIST && first?.[0] !== since) {
      rows = this.statements().walkSince.all(head, EMPTY_LIST) as typeof rows;
      first = rows[0];
    } else out.continues = true;
    if (first === undefined || (first[0] !== EMPTY_LIST && first[0] !== since)) {
      out.missing = true;
      out.pieces.push(`[MISSING:${first === undefined ? head : first[0]}]`);
    }
    for (const [, stored, redactedBy, present, size, block] of rows) {
      if (stored !== null) {
        const text = this.readText(block, stored, size);
        if (text instanceof BlockDamage) {
          out.missing = true;
          out.pieces.push('[DAMAGED]');
        } else out.pieces.push(text);
      } else if (present === 1 && redactedBy !== null) {
        out.pieces.push(`[REDACTED:${redactedBy}]`);
        if (!out.redacted_by.includes(redactedBy)) out.redacted_by.push(redactedBy);
      } else {
        out.missing = true;
        out.pieces.push('[MISSING]');
      }
    }
    return out;
  }

  /** A list's nodes, oldest first (for export); a broken list yields the part that is there. */
  walkNodes(head: string): [digest: string, parent: string, block: string][] {
    if (head === EMPTY_LIST || !this.exists()) return [];
    const rows = this.statements().walk.all(head) as [string, string, string][];
    return rows.map(([digest, parent, block]) => [digest, parent, block]);
  }
}

/** An export line holding a block: its text, or, once redacted, the REDACTED entry that removed it. */
export interface ContentBlockLine {
  digest: string;
  size: number;
  text?: string;
  redacted_by?: string;
}

/**
 * A content_blocks row as an export line or a copy carries it: its text, never its compressed bytes. A
 * compressed block that does not inflate to its recorded size is ERR_LEDGER_DAMAGED.
 */
export function blockLine(digest: string, size: number, stored: unknown, redactedBy: string | null): ContentBlockLine {
  if (stored === null) return { digest, size, ...(redactedBy === null ? {} : { redacted_by: redactedBy }) };
  const text = unpackBlock(stored, size);
  if (text instanceof BlockDamage)
    throw new CpError('ERR_LEDGER_DAMAGED', `content block ${digest} is damaged: ${text.why}`, {
      hint: 'run `cplane ledger verify`; restore the ledger from a copy or an export (`cplane ledger import`)',
      details: { digest },
    });
  return { digest, size, text };
}

export interface ContentListLine {
  digest: string;
  parent: string;
  block: string;
}

/** The content an export carries, checked as it is read: each block hashes to its digest, each node to its own. */
export interface ImportContent {
  blocks: ContentBlockLine[];
  lists: ContentListLine[];
}

/**
 * A record with its content written inline (`metadata.prompt`/`response`), as entries before the store were: the
 * form handed to a caller when no store took the record, readable as it is and still appendable.
 */
export function inlineContent(input: AppendInput): AppendInput {
  if (input.content === undefined) return input;
  const { content, ...rest } = input;
  return {
    ...rest,
    metadata: { ...(input.metadata ?? {}), prompt: content.prompt.join(''), response: content.response.join('') },
  };
}
