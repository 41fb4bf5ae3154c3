import { CpError, show } from '../../errors.js';
import { type ChainView, type CheckpointHead, checkCheckpoints } from '../checkpoint.js';
import {
  type CheckpointSources,
  finishReport,
  gatherCheckpoints,
  type RootCheckpointReport,
} from '../checkpoint-check.js';
import type { FutureDatedEntry, FutureDatedOptions } from '../future.js';
import type { LedgerEntry } from '../entry.js';
import { DEFAULT_MAX_CLOCK_SKEW_MS, parseStoredMetadata, rowToEntry } from '../ledger.js';
import { type OrphanOptions, orphanCutoff } from '../orphans.js';
import { type StoreVerify, verifyStore } from '../store.js';
import { entryRowOf, type PgLedger, storeError } from './pg-ledger.js';

export interface PgChainCheck {
  result: StoreVerify;
  checkpoints: RootCheckpointReport;
  /** The head and the entries at every checkpoint's seq and at `extraSeqs`, read after the walk. */
  view: ChainView;
}

/**
 * The PostgreSQL chain re-hashed end to end, then checked against the root's signed checkpoints and the files
 * given. `ledger verify --store` and gate G4 (on a root whose store is PostgreSQL) both call this, so the two
 * never judge the same chain differently. `extraSeqs` are positions the caller also wants read (G4: the
 * receipts' anchors), in the same view as the checkpoints.
 */
export async function verifyPgChain(
  store: PgLedger,
  sources: CheckpointSources,
  extraSeqs: readonly number[] = [],
): Promise<PgChainCheck> {
  const result = await verifyStore(store);
  const gathered = gatherCheckpoints(sources);
  const seqs = gathered.found.flatMap((f) => ('checkpoint' in f ? [f.checkpoint.seq] : []));
  const view = await store.chainView([...seqs, ...extraSeqs]);
  const checkpoints = finishReport(checkCheckpoints(view, gathered.found, gathered.keys), gathered);
  return { result, checkpoints, view };
}

/** Entries dated beyond the allowed skew after `now` (listFutureDated, on PostgreSQL). */
export async function pgFutureDated(store: PgLedger, options: FutureDatedOptions): Promise<FutureDatedEntry[]> {
  if (!Number.isFinite(options.now)) {
    throw new CpError(
      'ERR_LEDGER_QUERY_INVALID',
      `reference time must be epoch milliseconds, got ${show(options.now)}`,
      {
        hint: 'pass now as a number',
        details: { field: 'now' },
      },
    );
  }
  const cutoff = new Date(options.now + (options.maxSkewMs ?? DEFAULT_MAX_CLOCK_SKEW_MS)).toISOString();
  const r = await store.pool.query(
    'SELECT seq, id, event_type, timestamp FROM cplane_entries WHERE timestamp > $1 ORDER BY seq LIMIT $2',
    [cutoff, options.limit ?? 20],
  );
  return (r.rows as { seq: string; id: string; event_type: string; timestamp: string }[]).map((row) => ({
    ...row,
    seq: Number(row.seq),
  }));
}

/** A DISPATCH or EXCHANGE as gate G6 needs it: an EXCHANGE's link is its metadata.dispatch_entry_id. */
export interface DispatchRecord {
  id: string;
  event_type: 'DISPATCH' | 'EXCHANGE';
  timestamp: string;
  link: unknown;
}

/** Every DISPATCH and EXCHANGE in chain order, without their content (one query; the gate only links them). */
export async function pgDispatchRecords(store: PgLedger): Promise<DispatchRecord[]> {
  // jsonb refuses a row whose metadata holds \u0000 (a provider's bytes in an error text): such rows, and only they,
  // come back as text and are read here.
  const read = (asText: string) =>
    store.pool.query(
      `SELECT id, event_type, timestamp,
         CASE WHEN strpos(metadata, $1) = 0 THEN metadata::jsonb -> 'dispatch_entry_id' END AS link,
         CASE WHEN strpos(metadata, $1) > 0 THEN metadata END AS raw
       FROM cplane_entries WHERE event_type IN ('DISPATCH', 'EXCHANGE') ORDER BY seq`,
      [asText],
    );
  // Metadata edited into text that is not JSON fails the cast (22P02): read again with every row as text (an empty
  // needle is found in any), so the row is named as damaged below, as SQLite's reader names it.
  const r = await read('\\u0000').catch((error: unknown) => {
    if ((error as { code?: unknown }).code !== '22P02') throw error;
    return read('');
  });
  type Row = { id: string; event_type: 'DISPATCH' | 'EXCHANGE'; timestamp: string; link: unknown; raw: string | null };
  return (r.rows as Row[]).map(({ raw, ...row }) => ({
    ...row,
    link: (raw === null ? row.link : parseStoredMetadata({ id: row.id, metadata: raw }).dispatch_entry_id) ?? undefined,
  }));
}

// An EXCHANGE names its DISPATCH in metadata, found in the canonical JSON text (jsonb refuses the \u0000 an EXCHANGE
// may hold) among the later entries of the DISPATCH's session (the session index), as PgLedger.hasExchange does.
const PG_ORPHANS_SQL = `SELECT seq, id, event_type, submission_id, decision, reason, metadata, timestamp, previous_hash,
  entry_hash FROM cplane_entries AS d
  WHERE d.event_type = 'DISPATCH' AND d.timestamp <= $1
    AND NOT EXISTS (SELECT 1 FROM cplane_entries AS e WHERE e.session_id IS NOT DISTINCT FROM d.session_id
      AND e.seq > d.seq AND e.event_type = 'EXCHANGE'
      AND strpos(e.metadata, '"dispatch_entry_id":"' || d.id || '"') > 0)
  ORDER BY d.seq`;

/** listOrphans on PostgreSQL: DISPATCH markers older than the timeout that no EXCHANGE links to, oldest first. */
export async function pgOrphans(store: PgLedger, options: OrphanOptions = {}): Promise<LedgerEntry[]> {
  const r = await store.pool.query(PG_ORPHANS_SQL, [orphanCutoff(options)]);
  return r.rows.map((row) => rowToEntry(entryRowOf(row)));
}

/**
 * checkpointHead on PostgreSQL: entry #1 (the chain's identity) and the head, in one statement, so both are read
 * in one snapshot; null for an empty chain.
 */
export async function pgCheckpointHead(store: PgLedger): Promise<CheckpointHead | null> {
  let rows: { seq: string; id: string; entry_hash: string }[];
  try {
    rows = (
      await store.pool.query(
        `SELECT seq, id, entry_hash FROM cplane_entries WHERE seq = 1
         UNION ALL (SELECT seq, id, entry_hash FROM cplane_entries ORDER BY seq DESC LIMIT 1)`,
      )
    ).rows;
  } catch (error) {
    throw storeError(error);
  }
  const first = rows.find((r) => Number(r.seq) === 1);
  const last = rows[rows.length - 1];
  if (first === undefined || last === undefined) return null;
  return { ledger_id: first.entry_hash, seq: Number(last.seq), hash: last.entry_hash, entry_id: last.id };
}
