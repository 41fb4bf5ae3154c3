import type { AppendInput } from '#kernel/ledger/index.js';
import { type LedgerStore, withAppendBatch } from '#kernel/ledger/store.js';

/**
 * The writer with a report of what landed: after a batch is appended, `landed` hears the submission ids of its
 * records of the given kinds (the budget's records, so the budget store drops the copies it kept until now).
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
    const ids = batch.filter((input) => watched.has(input.event_type)).map((input) => input.submission_id);
    if (ids.length > 0) landed(ids);
    return entries;
  });
}
