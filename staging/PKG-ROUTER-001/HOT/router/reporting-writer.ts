import type { AppendInput, AppendOptions, LedgerEntry } from '#kernel/ledger/index.js';
import type { LedgerStore } from '#kernel/ledger/store.js';

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
  const report = (batch: readonly AppendInput[]): void => {
    const ids = batch.filter((input) => watched.has(input.event_type)).map((input) => input.submission_id);
    if (ids.length > 0) landed(ids);
  };
  return {
    backend: store.backend,
    headAnchor: () => store.headAnchor(),
    get: (id) => store.get(id),
    query: (query) => store.query(query),
    rows: (fromSeq) => store.rows(fromSeq),
    hasExchange: (sessionId, dispatchId) => store.hasExchange(sessionId, dispatchId),
    contentProblems: () => store.contentProblems(),
    close: () => store.close(),
    async appendBatch(batch: readonly AppendInput[], options?: AppendOptions): Promise<LedgerEntry[]> {
      const entries = await store.appendBatch(batch, options);
      report(batch);
      return entries;
    },
    async append(input: AppendInput): Promise<LedgerEntry> {
      const entry = await store.append(input);
      report([input]);
      return entry;
    },
  };
}
