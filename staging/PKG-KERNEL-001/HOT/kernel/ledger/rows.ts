import { CpError } from '../errors.js';
import type { HashColumns, LedgerEntry } from './entry.js';

/** A stored row: the hashed columns plus the chain position and the hash. */
export interface EntryRow extends HashColumns {
  seq: number;
  entry_hash: string;
}

/**
 * A row as an array, in ROW_COLUMNS order: the cheap shape for walking the whole chain. The last element is
 * 1 when metadata is well-formed JSON whose top level is an object (checked by SQLite, without a JS parse).
 */
export type RawRow = [number, string, string, string, string, string, string, string, string, string, number];

/** A stored row's metadata; text that is not a JSON object means the file was edited outside cplane. */
export function parseStoredMetadata(row: { id: string; metadata: string }): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(row.metadata);
  } catch {
    value = undefined;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new CpError('ERR_LEDGER_DAMAGED', `ledger entry ${row.id} has metadata that is not a JSON object`, {
      hint: 'run `cplane ledger verify` to see what was edited; restore the ledger from a copy or an export',
      details: { entry: row.id, metadata: row.metadata.slice(0, 200) },
    });
  }
  return value as Record<string, unknown>;
}

export function rowToEntry(row: EntryRow): LedgerEntry {
  return {
    id: row.id,
    event_type: row.event_type,
    submission_id: row.submission_id,
    decision: row.decision,
    reason: row.reason,
    metadata: parseStoredMetadata(row),
    timestamp: row.timestamp,
    previous_hash: row.previous_hash,
    entry_hash: row.entry_hash,
  };
}

/**
 * Metadata with `content` replaced by the text it stands for, keys in sorted order. Text given as pieces is
 * joined when first read: the hot path (the router keeps only the entry's id) never pays for joining a
 * 150k-token conversation it already has.
 */
export function readView(
  metadata: Record<string, unknown>,
  prompt: string | readonly string[],
  response: string | readonly string[],
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const keys = Object.keys(metadata).filter((key) => key !== 'content');
  keys.push('prompt', 'response');
  for (const key of keys.sort()) {
    if (key !== 'prompt' && key !== 'response') {
      // defineProperty: a stored "__proto__" key stays data, never a prototype change.
      if (key === '__proto__')
        Object.defineProperty(out, key, { value: metadata[key], enumerable: true, writable: true, configurable: true });
      else out[key] = metadata[key];
      continue;
    }
    const value = key === 'prompt' ? prompt : response;
    if (typeof value === 'string') {
      Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
      continue;
    }
    Object.defineProperty(out, key, {
      enumerable: true,
      configurable: true,
      get() {
        const joined = (value as readonly string[]).join('');
        Object.defineProperty(out, key, { value: joined, enumerable: true, writable: true, configurable: true });
        return joined;
      },
    });
  }
  return out;
}
