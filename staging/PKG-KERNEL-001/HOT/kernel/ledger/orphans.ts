import { CpError, show } from '../errors.js';
import type { LedgerEntry } from './entry.js';
import { rowToEntry, type EntryRow, type Ledger } from './ledger.js';
import { ROW_COLUMNS } from './query.js';

/** How long a DISPATCH may wait for its EXCHANGE before it counts as orphaned (a crashed send). */
export const DEFAULT_ORPHAN_TIMEOUT_MS = 5 * 60_000;

export interface OrphanOptions {
  timeoutMs?: number;
  /** Epoch milliseconds; defaults to the wall clock. */
  now?: number;
}

// DISPATCH rows come from the event_type index; the EXCHANGE lookup uses the dispatch_entry_id index.
const ORPHANS_SQL = `SELECT ${ROW_COLUMNS} FROM entries AS d
  WHERE d.event_type = 'DISPATCH' AND d.timestamp <= ?
    AND NOT EXISTS (SELECT 1 FROM entries AS e WHERE e.dispatch_entry_id = d.id AND e.event_type = 'EXCHANGE')
  ORDER BY d.seq ASC`;

/** DISPATCH markers older than the timeout that no EXCHANGE links to (metadata.dispatch_entry_id), oldest first. */
export function listOrphans(ledger: Ledger, options: OrphanOptions = {}): LedgerEntry[] {
  return (ledger.statement(ORPHANS_SQL).all(orphanCutoff(options)) as EntryRow[]).map(rowToEntry);
}

/** The time before which a DISPATCH without its EXCHANGE is an orphan (ISO-8601), the options checked. */
export function orphanCutoff(options: OrphanOptions): string {
  const timeoutMs = options.timeoutMs ?? DEFAULT_ORPHAN_TIMEOUT_MS;
  const now = options.now ?? Date.now();
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 0) {
    throw new CpError(
      'ERR_LEDGER_QUERY_INVALID',
      `orphan timeout must be a non-negative integer of milliseconds, got ${show(timeoutMs)}`,
      {
        hint: 'pass --timeout-ms N with N >= 0',
        details: { field: 'timeoutMs' },
      },
    );
  }
  if (!Number.isFinite(now)) {
    throw new CpError(
      'ERR_LEDGER_QUERY_INVALID',
      `orphan reference time must be epoch milliseconds, got ${show(now)}`,
      { hint: 'pass now as a number', details: { field: 'now' } },
    );
  }
  return new Date(now - timeoutMs).toISOString();
}

export { ORPHANS_SQL };
