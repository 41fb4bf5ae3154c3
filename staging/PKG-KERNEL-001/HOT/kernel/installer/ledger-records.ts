import { truncateText } from '../text.js';
import type { LedgerEntry } from '../ledger/entry.js';
import type { Ledger } from '../ledger/ledger.js';
import type { JournalLedgerRecord } from './journal.js';

export interface AnchoredEntry {
  entry: LedgerEntry;
  anchor: { seq: number; hash: string };
}

/** The position of an entry in the chain (the receipt's anchor). */
function seqOf(ledger: Ledger, id: string): number {
  return ledger.db.prepare('SELECT seq FROM entries WHERE id = ?').pluck().get(id) as number;
}

/**
 * Append the commit's ledger record once: when crash repair replays a commit whose record already
 * landed, the existing entry (found by its txn_id) is returned instead of a duplicate.
 */
export function appendOnce(
  ledger: Ledger,
  packageId: string,
  txnId: string,
  record: JournalLedgerRecord,
): AnchoredEntry {
  const existing = ledger
    .query({ submission_id: packageId, event_type: record.event_type, limit: 20 })
    .find((entry) => entry.metadata.txn_id === txnId);
  const entry =
    existing ?? ledger.append({ ...record, submission_id: packageId, metadata: { ...record.metadata, txn_id: txnId } });
  return { entry, anchor: { seq: seqOf(ledger, entry.id), hash: entry.entry_hash } };
}

/** INSTALL_FAILED: the one write a refused install makes. */
export function recordInstallFailed(
  ledger: Ledger,
  packageId: string,
  code: string,
  message: string,
  metadata: Record<string, unknown>,
): LedgerEntry {
  return ledger.append({
    event_type: 'INSTALL_FAILED',
    submission_id: packageId,
    decision: 'REJECTED',
    reason: truncateText(message, 500),
    metadata: { ...metadata, code },
  });
}
