import { randomBytes } from 'node:crypto';
import { canonicalJson, sha256Hex } from '../canonical.js';
import { CpError, show } from '../errors.js';

/** The LedgerEntry contract (SPEC §4). Never add top-level fields: new data goes in `metadata`. */
export interface LedgerEntry {
  id: string;
  event_type: string;
  submission_id: string;
  decision: string;
  reason: string;
  metadata: Record<string, unknown>;
  timestamp: string;
  previous_hash: string;
  entry_hash: string;
}

export interface AppendInput {
  event_type: string;
  submission_id: string;
  decision: string;
  reason: string;
  metadata?: Record<string, unknown>;
  /**
   * Exchange content kept in the content store (content.ts): each side's pieces, in order. The entry then holds
   * `metadata.content` (their list digests) instead of `prompt`/`response`, and reads show the text again.
   */
  content?: { prompt: readonly string[]; response: readonly string[] };
}

/** A point in the chain: the head's 1-based sequence number and its entry_hash. Empty ledger: seq 0, GENESIS_HASH. */
export interface Anchor {
  seq: number;
  hash: string;
}

export const GENESIS_HASH = '0'.repeat(64);
export const ENTRY_ID_PATTERN = /^LED-[a-f0-9]{8}$/;
export const ENTRY_FIELDS = [
  'id',
  'event_type',
  'submission_id',
  'decision',
  'reason',
  'metadata',
  'timestamp',
  'previous_hash',
  'entry_hash',
] as const;

/** Draws the id for the entry at `seq`; `attempt` counts the draws for that entry (a taken id is drawn again). */
export type IdSource = (seq: number, attempt: number) => string;
export type Clock = () => number;

const ID_POOL_BYTES = 4096;
let idPool = Buffer.alloc(0);
let idPoolOffset = 0;

/** `LED-` + 8 random hex digits. Random bytes are drawn 4 KiB at a time: one syscall per 1024 ids, not per id. */
export const randomEntryId: IdSource = () => {
  if (idPoolOffset + 4 > idPool.length) {
    idPool = randomBytes(ID_POOL_BYTES);
    idPoolOffset = 0;
  }
  idPoolOffset += 4;
  return `LED-${idPool.toString('hex', idPoolOffset - 4, idPoolOffset)}`;
};

/** Each byte's two lowercase hex digits. */
const HEX_BYTES = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

/**
 * A value mod 2^32 as the 8 lowercase hex digits ids (and ledger_meta's `id_start`) are written in: four table
 * lookups, where a radix toString and a pad cost each append two strings and most of this function's time.
 */
export function idDigits(value: number): string {
  const v = value >>> 0;
  return `${HEX_BYTES[v >>> 24]}${HEX_BYTES[(v >>> 16) & 255]}${HEX_BYTES[(v >>> 8) & 255]}${HEX_BYTES[v & 255]}`;
}

export function formatEntryId(value: number): string {
  return `LED-${idDigits(value)}`;
}

/** The number an id spells (ids are 8 hex digits). */
export function entryIdValue(id: string): number {
  return Number.parseInt(id.slice(4), 16);
}

/**
 * Ids in chain order from a per-ledger random start (mod 2^32). Random ids put every append on a random page
 * of the id index: at a million entries that is a cache miss and a split-prone page per append, and a batch
 * rewrites most of the index. Consecutive ids keep the index growing at its right edge. They are unique by
 * construction; the one way to meet a taken id is an imported chain, and then the draw falls back to random.
 */
export function sequentialEntryIds(start: number): IdSource {
  return (seq, attempt) => (attempt === 0 ? formatEntryId(start + seq) : randomEntryId(seq, attempt));
}

/**
 * The hash input: RFC 8785 canonical JSON of the entry without `entry_hash`
 * (eight fields, including `previous_hash`), UTF-8 encoded, SHA-256, lowercase hex.
 */
export function computeEntryHash(entry: Omit<LedgerEntry, 'entry_hash'>): string {
  return sha256Hex(hashInput(entry));
}

/** The reference hash input: canonical JSON of the eight hashed fields, straight from the definition. */
export function hashInput(entry: Omit<LedgerEntry, 'entry_hash'>): string {
  return canonicalJson({
    id: entry.id,
    event_type: entry.event_type,
    submission_id: entry.submission_id,
    decision: entry.decision,
    reason: entry.reason,
    metadata: entry.metadata,
    timestamp: entry.timestamp,
    previous_hash: entry.previous_hash,
  });
}

/** The hashed fields as stored: strings, with `metadata` already in canonical JSON. */
export interface HashColumns {
  id: string;
  event_type: string;
  submission_id: string;
  decision: string;
  reason: string;
  metadata: string;
  timestamp: string;
  previous_hash: string;
}

/**
 * The same bytes as `hashInput`, assembled from columns without re-parsing metadata: RFC 8785 sorts these
 * eight keys in exactly this order and serialises strings as JSON.stringify does, so when `metadata` is
 * canonical JSON the result is identical (proved by the equivalence tests).
 */
export function hashInputFromColumns(c: HashColumns): string {
  return hashInputOf(
    c.id,
    c.event_type,
    c.submission_id,
    c.decision,
    c.reason,
    c.metadata,
    c.timestamp,
    c.previous_hash,
  );
}

/** `hashInputFromColumns` without the columns object, for the append path. */
export function hashInputOf(
  id: string,
  eventType: string,
  submissionId: string,
  decision: string,
  reason: string,
  metadataJson: string,
  timestamp: string,
  previousHash: string,
): string {
  const x = NEEDS_ESCAPE;
  // The append path's columns (kinds, ids, hashes, timestamps) rarely hold anything to escape: quoted in the one
  // template, each value is one piece of it rather than a quoted string of its own.
  if (
    !(
      x.test(decision) ||
      x.test(eventType) ||
      x.test(id) ||
      x.test(previousHash) ||
      x.test(reason) ||
      x.test(submissionId) ||
      x.test(timestamp)
    )
  )
    return `{"decision":"${decision}","event_type":"${eventType}","id":"${id}","metadata":${metadataJson},"previous_hash":"${previousHash}","reason":"${reason}","submission_id":"${submissionId}","timestamp":"${timestamp}"}`;
  const q = quoted;
  return `{"decision":${q(decision)},"event_type":${q(eventType)},"id":${q(id)},"metadata":${metadataJson},"previous_hash":${q(previousHash)},"reason":${q(reason)},"submission_id":${q(submissionId)},"timestamp":${q(timestamp)}}`;
}

/** What JSON.stringify escapes in a string: a quote, a backslash, a control character, a surrogate (if lone). */
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/**
 * JSON.stringify(text), its call skipped for text with nothing to escape (ids, hex hashes, timestamps, kinds):
 * then the JSON is the text between quotes. A paired surrogate also takes JSON.stringify, which keeps it as it is.
 */
export function quoted(text: string): string {
  return NEEDS_ESCAPE.test(text) ? JSON.stringify(text) : `"${text}"`;
}

export const HASH_PATTERN = /^[0-9a-f]{64}$/;
export const TIMESTAMP_PATTERN = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** Parse `SEQ:HASH` (as printed by `cplane ledger head`). */
export function parseAnchor(text: string): Anchor {
  const match = /^(\d{1,15}):([0-9a-f]{64})$/.exec(text.trim());
  if (!match) {
    throw new CpError('ERR_LEDGER_ANCHOR_INVALID', `anchor ${show(text)} is not SEQ:HASH`, {
      hint: 'pass the anchor printed by `cplane ledger head`, e.g. 42:<64 lowercase hex>',
      details: { anchor: text },
    });
  }
  return { seq: Number(match[1]), hash: match[2] as string };
}

export function formatAnchor(anchor: Anchor): string {
  return `${anchor.seq}:${anchor.hash}`;
}
