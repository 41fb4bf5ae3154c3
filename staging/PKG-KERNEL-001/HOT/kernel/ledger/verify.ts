import { sha256Hex } from '../canonical.js';
import { checkStructure } from './file-check.js';
import { computeEntryHash, GENESIS_HASH, hashInputFromColumns, type Anchor } from './entry.js';
import { rowToEntry, type EntryRow, type Ledger, type RawRow } from './ledger.js';
import type { SchemaProblem } from './schema-check.js';
import { hashHex } from './schema.js';
import { blockDigest, contentRefs, EMPTY_LIST, listDigest } from './content.js';
import { BlockDamage, unpackBlock } from './block-text.js';

export type VerifyProblem =
  | 'edited'
  | 'hash_edited'
  | 'broken_link'
  | 'deleted'
  | 'reordered'
  | 'truncated'
  | 'anchor_mismatch'
  | 'unreadable';

export interface VerifyResult {
  ok: boolean;
  entries: number;
  /** The last entry that verified (seq 0 and the genesis hash when none did). */
  head: Anchor;
  /** The first bad entry (by id when it still exists) and why. */
  first_bad?: { seq: number; id: string | null; problem: VerifyProblem; message: string };
  /** How the file's schema differs from the ledger's (present only when it does): the chain may verify, the ledger does not. */
  schema_problems?: SchemaProblem[];
  /** The content store, when the ledger has one: what was checked, what was redacted, what is wrong. */
  content?: ContentCheck;
}

export type ContentProblemKind =
  | 'block_edited'
  | 'block_deleted'
  | 'block_restored'
  | 'block_missing'
  | 'list_edited'
  | 'list_missing';

export interface ContentCheck {
  blocks: number;
  lists: number;
  redacted_blocks: number;
  /** The first problems found (at most MAX_CONTENT_PROBLEMS), each naming the digest. */
  problems: { kind: ContentProblemKind; digest: string; message: string }[];
  problem_count: number;
}

const MAX_CONTENT_PROBLEMS = 20;

/**
 * What the chain walk gathers for the content check: whether any entry commits to content, the lists it found
 * missing (checked as it walks, so a million exchanges hold no million digests in memory), and what each
 * REDACTED entry names.
 */
interface ContentClaims {
  referenced: boolean;
  missing: [head: string, id: string][];
  missingCount: number;
  redactions: Map<string, Set<string>>;
}

type Problem = NonNullable<VerifyResult['first_bad']>;

/**
 * Recompute the chain from genesis inside one read snapshot; stop at the first bad entry and say which
 * and why. A deleted tail is invisible from inside the file, so pass the anchor recorded earlier.
 */
export function verifyLedger(ledger: Ledger, options: { anchor?: Anchor } = {}): VerifyResult {
  const result = ledger.snapshot(() => {
    // Damage to the b-trees (an index, a page's structure) is a damaged ledger, not a chain problem.
    checkStructure(ledger.db, ledger.path);
    const exists = ledger.content.exists();
    const claims: ContentClaims = {
      referenced: false,
      missing: [],
      missingCount: 0,
      redactions: new Map(),
    };
    const chain = walkChain(ledger, options.anchor, claims);
    if (!claims.referenced && !exists) return chain;
    const content = checkContent(ledger, claims);
    return { ...chain, ok: chain.ok && content.problem_count === 0, content };
  });
  const schema = ledger.schemaProblems;
  return schema.length === 0 ? result : { ...result, ok: false, schema_problems: [...schema] };
}

function walkChain(ledger: Ledger, anchor: Anchor | undefined, claims: ContentClaims): VerifyResult {
  let previous = GENESIS_HASH;
  let count = 0;
  let anchorHash: string | undefined = anchor?.seq === 0 ? GENESIS_HASH : undefined;
  const fail = (problem: Problem): VerifyResult => ({
    ok: false,
    entries: count,
    head: { seq: count, hash: previous },
    first_bad: problem,
  });

  for (const chunk of ledger.rawChunks()) {
    for (let i = 0; i < chunk.length; i += 1) {
      const row = chunk[i] as RawRow;
      const seq = row[0];
      if (seq !== count + 1) return fail(gap(count + 1, row));
      const problem = checkRow(ledger, row, previous, chunk[i + 1]);
      if (problem) return fail(problem);
      if (row[6].includes('"content":{') || row[2] === 'REDACTED') gatherClaims(ledger, row, claims);
      previous = row[9];
      count = seq;
      if (anchor && seq === anchor.seq) anchorHash = previous;
    }
  }
  const head: Anchor = { seq: count, hash: previous };
  const bad = anchor ? checkAnchor(ledger, anchor, head, anchorHash) : undefined;
  return bad ? { ok: false, entries: count, head, first_bad: bad } : { ok: true, entries: count, head };
}

function gap(expected: number, row: RawRow): Problem {
  return {
    seq: expected,
    id: null,
    problem: 'deleted',
    message: `entry #${expected} is missing: the next entry present is #${row[0]} (${row[1]})`,
  };
}

/** The one row's checks: its link to the entry before, then its own hash. */
function checkRow(ledger: Ledger, row: RawRow, previous: string, next: RawRow | undefined): Problem | undefined {
  const [seq, id] = row;
  // The fast path splices stored metadata into the hash input, so it must be exactly one JSON object.
  const recomputed = row[10] === 1 ? recomputeHash(row) : undefined;
  if (recomputed === undefined) {
    return { seq, id, problem: 'unreadable', message: `entry ${id} (#${seq}) has metadata that is not a JSON object` };
  }
  const intact = recomputed === row[9];
  if (row[8] !== previous) return linkProblem(ledger, row, intact);
  if (intact) return undefined;
  if (nextPreviousHash(ledger, seq, next) === recomputed) {
    return {
      seq,
      id,
      problem: 'hash_edited',
      message: `entry ${id} (#${seq}) has an entry_hash that was changed: its content still hashes to what the next entry links to`,
    };
  }
  return {
    seq,
    id,
    problem: 'edited',
    message: `entry ${id} (#${seq}) does not hash to its entry_hash: its content was edited`,
  };
}

/** The stored bytes first (fast); on a mismatch, the definition itself, in case metadata was stored non-canonically. */
function recomputeHash(row: RawRow): string | undefined {
  const [, id, event_type, submission_id, decision, reason, metadata, timestamp, previous_hash] = row;
  const fast = sha256Hex(
    hashInputFromColumns({ id, event_type, submission_id, decision, reason, metadata, timestamp, previous_hash }),
  );
  if (fast === row[9]) return fast;
  try {
    const entry = rowToEntry(toEntryRow(row));
    return computeEntryHash(entry);
  } catch {
    return undefined;
  }
}

function nextPreviousHash(ledger: Ledger, seq: number, next: RawRow | undefined): string | undefined {
  if (next) return next[0] === seq + 1 ? next[8] : undefined;
  return ledger.db
    .prepare(`SELECT ${hashHex('previous_hash')} FROM entries WHERE seq = ?`)
    .pluck()
    .get(seq + 1) as string | undefined;
}

/**
 * The row does not link to the entry before it. If the row itself is intact its previous_hash is genuine, so
 * find what it links to: a later entry means rows were swapped; no entry at all means the entry it followed
 * was deleted (and the rows after renumbered to hide the gap).
 */
function linkProblem(ledger: Ledger, row: RawRow, intact: boolean): Problem {
  const [seq, id] = row;
  if (!intact) {
    return {
      seq,
      id,
      problem: 'broken_link',
      message: `entry ${id} (#${seq}) does not link to the entry before it and does not hash to its entry_hash`,
    };
  }
  // Failure path only: a full scan is acceptable once the chain is already known to be broken.
  const target = ledger.db
    .prepare(`SELECT seq FROM entries WHERE ${hashHex('entry_hash')} = ? ORDER BY seq LIMIT 1`)
    .pluck()
    .get(row[8]) as number | undefined;
  if (target !== undefined && target > seq) {
    return {
      seq,
      id,
      problem: 'reordered',
      message: `entry ${id} (#${seq}) links to entry #${target}, which comes after it: entries were reordered`,
    };
  }
  if (target === undefined) {
    return {
      seq,
      id,
      problem: 'deleted',
      message: `entry ${id} (#${seq}) links to an entry that is no longer in the ledger: entries before it were deleted and the rest renumbered`,
    };
  }
  return {
    seq,
    id,
    problem: 'broken_link',
    message: `entry ${id} (#${seq}) links to entry #${target} instead of the entry before it`,
  };
}

function checkAnchor(
  ledger: Ledger,
  anchor: Anchor,
  head: Anchor,
  anchorHash: string | undefined,
): Problem | undefined {
  if (head.seq < anchor.seq) {
    return {
      seq: head.seq + 1,
      id: null,
      problem: 'truncated',
      message: `ledger ends at #${head.seq} but the anchor is #${anchor.seq}: entries were removed from the tail`,
    };
  }
  if (anchorHash !== anchor.hash) {
    const id = anchor.seq === 0 ? null : (ledger.getBySeq(anchor.seq)?.id ?? null);
    return {
      seq: anchor.seq,
      id,
      problem: 'anchor_mismatch',
      message: `entry #${anchor.seq} does not have the anchor's hash: the chain was rewritten up to the anchor`,
    };
  }
  return undefined;
}

function toEntryRow(row: RawRow): EntryRow {
  const [seq, id, event_type, submission_id, decision, reason, metadata, timestamp, previous_hash, entry_hash] = row;
  return { seq, id, event_type, submission_id, decision, reason, metadata, timestamp, previous_hash, entry_hash };
}

function gatherClaims(ledger: Ledger, row: RawRow, claims: ContentClaims): void {
  const metadata = JSON.parse(row[6]) as Record<string, unknown>;
  const refs = contentRefs(metadata);
  if (refs !== undefined) {
    claims.referenced = true;
    for (const head of [refs.prompt, refs.response]) {
      if (ledger.content.hasList(head)) continue;
      claims.missingCount += 1;
      if (claims.missing.length < MAX_CONTENT_PROBLEMS) claims.missing.push([head, row[1]]);
    }
  }
  if (row[2] === 'REDACTED' && Array.isArray(metadata.blocks)) {
    claims.redactions.set(row[1], new Set(metadata.blocks.filter((b): b is string => typeof b === 'string')));
  }
}

/**
 * Every stored block hashes to its digest (or was removed by a REDACTED entry of the chain that names it),
 * every list node hashes to its own digest over a parent and a block that are there, and every list an entry
 * commits to is there. A block edited, deleted or swapped, or a redaction whose record is gone, is a FAIL.
 */
function checkContent(ledger: Ledger, claims: ContentClaims): ContentCheck {
  const check: ContentCheck = { blocks: 0, lists: 0, redacted_blocks: 0, problems: [], problem_count: 0 };
  const problem = (kind: ContentProblemKind, digest: string, message: string): void => {
    check.problem_count += 1;
    if (check.problems.length < MAX_CONTENT_PROBLEMS) check.problems.push({ kind, digest, message });
  };
  const db = ledger.db;
  const exists = ledger.content.exists();
  if (exists) {
    // A block a REDACTED entry removed never holds text again (a store keeps a redacted row on a re-insert of the
    // same text), so text there was put back outside the ledger, and it hashes right: the digest cannot tell.
    const removedBy = new Map<string, string>();
    for (const [id, named] of claims.redactions) for (const digest of named) removedBy.set(digest, id);
    const blocks = db.prepare('SELECT lower(hex(digest)), size, text, redacted_by FROM content_blocks').raw();
    for (const [digest, size, stored, by] of blocks.iterate() as IterableIterator<
      [string, unknown, unknown, string | null]
    >) {
      check.blocks += 1;
      if (stored !== null) {
        const text = unpackBlock(stored, size);
        if (text instanceof BlockDamage)
          problem('block_edited', digest, `content block ${digest} is damaged: ${text.why}: it was edited`);
        else if (blockDigest(text) !== digest || Buffer.byteLength(text, 'utf8') !== size)
          problem('block_edited', digest, `content block ${digest} does not hash to its digest: it was edited`);
        else if (removedBy.has(digest))
          problem(
            'block_restored',
            digest,
            `content block ${digest} holds text, but REDACTED entry ${removedBy.get(digest)} removed it: the text was put back outside the ledger`,
          );
      } else if (by !== null && claims.redactions.get(by)?.has(digest)) {
        check.redacted_blocks += 1;
      } else {
        problem(
          'block_deleted',
          digest,
          `content block ${digest} has no text and no REDACTED entry in the chain names it: it was removed outside \`cplane ledger redact\``,
        );
      }
    }
    const lists = db
      .prepare('SELECT lower(hex(digest)), lower(hex(parent)), lower(hex(block)) FROM content_lists')
      .raw();
    for (const [digest, parent, block] of lists.iterate() as IterableIterator<[string, string, string]>) {
      check.lists += 1;
      if (listDigest(parent, block) !== digest)
        problem('list_edited', digest, `content list node ${digest} does not hash to its digest: it was edited`);
    }
    const orphans = db
      .prepare(
        `SELECT lower(hex(l.digest)), lower(hex(l.parent)), lower(hex(l.block)), p.digest IS NOT NULL, b.digest IS NOT NULL FROM content_lists l
         LEFT JOIN content_lists p ON p.digest = l.parent LEFT JOIN content_blocks b ON b.digest = l.block
         WHERE (l.parent != unhex(?) AND p.digest IS NULL) OR b.digest IS NULL`,
      )
      .raw();
    for (const [digest, parent, block, hasParent, hasBlock] of orphans.iterate(EMPTY_LIST) as IterableIterator<
      [string, string, string, number, number]
    >) {
      if (hasBlock === 0)
        problem('block_missing', block, `content block ${block} (in list node ${digest}) is missing: it was deleted`);
      if (parent !== EMPTY_LIST && hasParent === 0)
        problem('list_missing', parent, `content list node ${parent} (parent of ${digest}) is missing: it was deleted`);
    }
  }
  for (const [head, id] of claims.missing)
    problem('list_missing', head, `content list ${head} of entry ${id} is missing: it was deleted`);
  check.problem_count += claims.missingCount - claims.missing.length;
  return check;
}
