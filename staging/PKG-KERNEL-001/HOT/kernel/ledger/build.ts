import { sha256Hex } from '../canonical.js';
import { type Clock, hashInputOf, type IdSource, type LedgerEntry } from './entry.js';
import type { PreparedAppend } from './prepare.js';

/** Where a batch is chained on: the head's position, hash and timestamp ('' for an empty chain). */
export interface ChainHead {
  seq: number;
  hash: string;
  latest: string;
}

/** An entry as built for a store to write: the entry and its metadata's canonical JSON (what is hashed and stored). */
export interface Built {
  entry: LedgerEntry;
  metadataJson: string;
}

/**
 * The writer's clock as ISO-8601 timestamps, formatted once per millisecond (a batch appended within one
 * millisecond formats it once). `refuse` may throw for a reading the store will not write (SQLite's skew limit).
 */
export class Timestamps {
  private lastMs = Number.NaN;
  private lastIso = '';

  constructor(
    private readonly clock: Clock,
    private readonly refuse?: (ms: number, limitMs: number) => void,
  ) {}

  /** The clock's reading, never earlier than `latest`: time order is chain order, whatever the clock did. */
  next(latest: string, limitMs = Number.POSITIVE_INFINITY): string {
    const ms = this.clock();
    if (this.refuse !== undefined && !(ms <= limitMs)) this.refuse(ms, limitMs);
    if (ms !== this.lastMs) {
      this.lastMs = ms;
      this.lastIso = new Date(ms).toISOString();
    }
    return this.lastIso > latest ? this.lastIso : latest;
  }
}

/**
 * An entry's hashed columns in the order hashInputOf takes them, which is also the order of the SQLite insert's
 * columns after `seq`: the one list of what a row stores and its hash covers.
 */
export function hashedColumns(
  entry: LedgerEntry,
  metadataJson: string,
): [string, string, string, string, string, string, string, string] {
  return [
    entry.id,
    entry.event_type,
    entry.submission_id,
    entry.decision,
    entry.reason,
    metadataJson,
    entry.timestamp,
    entry.previous_hash,
  ];
}

/** An entry's hash over its columns as stored: the one formula of every store. */
export function entryHash(entry: LedgerEntry, metadataJson: string): string {
  // hashedColumns' order, passed without its array: the append path builds one hash per entry.
  return sha256Hex(
    hashInputOf(
      entry.id,
      entry.event_type,
      entry.submission_id,
      entry.decision,
      entry.reason,
      metadataJson,
      entry.timestamp,
      entry.previous_hash,
    ),
  );
}

/** Runs the SQLite insert (insertRowSql: seq, hashedColumns' order, entry_hash) for one built entry. */
export function runInsert(insert: { run(...params: unknown[]): unknown }, seq: number, built: Built): void {
  const { entry } = built;
  insert.run(
    seq,
    entry.id,
    entry.event_type,
    entry.submission_id,
    entry.decision,
    entry.reason,
    built.metadataJson,
    entry.timestamp,
    entry.previous_hash,
    entry.entry_hash,
  );
}

/** Gives `entry` the id `id` and the hash that goes with it (a store drawing another id for a taken one). */
export function reidentify(built: Built, id: string): void {
  built.entry.id = id;
  built.entry.entry_hash = entryHash(built.entry, built.metadataJson);
}

/**
 * The entries of `prepared`, chained on `head`: each with its id (attempt 0 of `ids` at its position), its
 * timestamp and its hash. Built one at a time as they are taken, so a store may write some while the rest are
 * built, and may give a built entry another id (reidentify) before taking the next: the next links to the hash
 * the entry has then. The one builder of the SQLite and PostgreSQL ledgers.
 */
export function* buildEntries(
  prepared: readonly PreparedAppend[],
  head: ChainHead,
  ids: IdSource,
  stamps: Timestamps,
  limitMs?: number,
): Generator<Built> {
  let previous = head.hash;
  let latest = head.latest;
  for (let i = 0; i < prepared.length; i += 1) {
    const input = prepared[i] as PreparedAppend;
    latest = stamps.next(latest, limitMs);
    const entry: LedgerEntry = {
      id: ids(head.seq + i + 1, 0),
      event_type: input.event_type,
      submission_id: input.submission_id,
      decision: input.decision,
      reason: input.reason,
      metadata: input.metadata,
      timestamp: latest,
      previous_hash: previous,
      entry_hash: '',
    };
    const built: Built = { entry, metadataJson: input.metadataJson };
    entry.entry_hash = entryHash(entry, input.metadataJson);
    yield built;
    previous = entry.entry_hash;
  }
}
