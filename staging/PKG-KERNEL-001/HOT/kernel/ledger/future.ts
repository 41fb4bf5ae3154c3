import { CpError, show } from '../errors.js';
import { DEFAULT_MAX_CLOCK_SKEW_MS, type Ledger } from './ledger.js';

export interface FutureDatedEntry {
  seq: number;
  id: string;
  event_type: string;
  timestamp: string;
}

export interface FutureDatedOptions {
  /** The checker's clock, epoch milliseconds. */
  now: number;
  maxSkewMs?: number;
  /** At most this many, in chain order (default 20). */
  limit?: number;
}

// No index on timestamp in most ledgers: a scan, which the checks that call this (G4) already pay for the chain.
const FUTURE_SQL = 'SELECT seq, id, event_type, timestamp FROM entries WHERE timestamp > ? ORDER BY seq LIMIT ?';

/**
 * Entries dated more than the allowed skew after `now`: written by a clock that ran ahead, they would
 * otherwise pass for recent (a DISPATCH never ages into an orphan).
 */
export function listFutureDated(ledger: Ledger, options: FutureDatedOptions): FutureDatedEntry[] {
  const { now } = options;
  if (!Number.isFinite(now)) {
    throw new CpError('ERR_LEDGER_QUERY_INVALID', `reference time must be epoch milliseconds, got ${show(now)}`, {
      hint: 'pass now as a number',
      details: { field: 'now' },
    });
  }
  const cutoff = new Date(now + (options.maxSkewMs ?? DEFAULT_MAX_CLOCK_SKEW_MS)).toISOString();
  return ledger.statement(FUTURE_SQL).all(cutoff, options.limit ?? 20) as FutureDatedEntry[];
}
