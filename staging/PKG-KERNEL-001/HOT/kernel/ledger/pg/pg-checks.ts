import { CpError, show } from '../../errors.js';
import { type ChainView, checkCheckpoints } from '../checkpoint.js';
import {
  type CheckpointSources,
  finishReport,
  gatherCheckpoints,
  type RootCheckpointReport,
} from '../checkpoint-check.js';
import type { FutureDatedEntry, FutureDatedOptions } from '../future.js';
import { DEFAULT_MAX_CLOCK_SKEW_MS } from '../ledger.js';
import { type StoreVerify, verifyStore } from '../store.js';
import type { PgLedger } from './pg-ledger.js';

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
  const r = await store.pool.query(
    `SELECT id, event_type, timestamp, metadata::jsonb -> 'dispatch_entry_id' AS link FROM cplane_entries
     WHERE event_type IN ('DISPATCH', 'EXCHANGE') ORDER BY seq`,
  );
  return (r.rows as { id: string; event_type: 'DISPATCH' | 'EXCHANGE'; timestamp: string; link: unknown }[]).map(
    (row) => ({ ...row, link: row.link ?? undefined }),
  );
}
