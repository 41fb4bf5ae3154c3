import { randomBytes } from 'node:crypto';
import { canonicalJson, sha256Hex } from '../canonical.js';

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
}

/** A point in the chain: the head's 1-based sequence number and its entry_hash. Empty ledger: seq 0, GENESIS_HASH. */
export interface Anchor {
  seq: number;
  hash: string;
}

export const GENESIS_HASH = '0'.repeat(64);
export const ENTRY_ID_PATTERN = /^LED-[a-f0-9]{8}$/;
export const ENTRY_FIELDS = ['id', 'event_type', 'submission_id', 'decision', 'reason', 'metadata', 'timestamp', 'previous_hash', 'entry_hash'] as const;

export type IdSource = () => string;
export type Clock = () => number;

export const randomEntryId: IdSource = () => `LED-${randomBytes(4).toString('hex')}`;

/**
 * The hash input: RFC 8785 canonical JSON of the entry without `entry_hash`
 * (eight fields, including `previous_hash`), UTF-8 encoded, SHA-256, lowercase hex.
 */
export function computeEntryHash(entry: Omit<LedgerEntry, 'entry_hash'>): string {
  return sha256Hex(hashInput(entry));
}

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

export function formatAnchor(anchor: Anchor): string {
  return `${anchor.seq}:${anchor.hash}`;
}
