import type { AppendInput } from '#kernel/ledger/index.js';
import { type LedgerStore, withAppendBatch } from '#kernel/ledger/store.js';
import { foldedSettlement } from '#budgeter/records.js';

/**
 * The writer with a report of what landed: after a batch is appended, `landed` hears the submission ids of its
 * records of the given kinds (the budget's records, so the budget store drops the copies it kept until now), and
 * the request ids whose settlement an EXCHANGE of the batch carries folded (the same copies, in their other form).
 * Reported only once the append resolved: a batch that failed, or was spooled instead, stays kept.
 */
export function reportingWriter(
  store: LedgerStore,
  kinds: readonly string[],
  landed: (submissionIds: string[]) => void,
): LedgerStore {
  const watched = new Set(kinds);
  return withAppendBatch(store, async (batch: readonly AppendInput[], options) => {
    const entries = await store.appendBatch(batch, options);
    const ids: string[] = [];
    for (const input of batch) {
      if (watched.has(input.event_type)) ids.push(input.submission_id);
      else {
        const folded = foldedSettlement(input);
        if (folded !== null) ids.push(folded);
      }
    }
    if (ids.length > 0) landed(ids);
    return entries;
  });
}
