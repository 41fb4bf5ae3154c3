import { isCpError } from '#kernel/errors.js';
import type { AppendInput, AppendOptions, LedgerEntry } from '#kernel/ledger/index.js';
import { type LedgerStore, withAppendBatch } from '#kernel/ledger/store.js';

interface Waiting {
  batch: readonly AppendInput[];
  /**
   * A batch with `once` (a spool drain's) is written alone, never merged into a group; `durable` is merged (a group
   * is durable if any of its batches asks).
   */
  options?: AppendOptions;
  resolve: (entries: LedgerEntry[]) => void;
  reject: (error: unknown) => void;
}

/**
 * A store whose writers race for the chain's head (PostgreSQL): without this, every refusal, DISPATCH and EXCHANGE
 * of a busy host is its own append, and a burst of them loses the race to each other again and again. Here one
 * append is in flight per process; the batches that arrive meanwhile are written together next, each caller still
 * getting its own entries or its own error. A group the store refuses is retried batch by batch, so one bad batch
 * never costs the others their record; not when the store is unavailable, since the group may have landed (each
 * caller then takes its own path: spooled, and the spool never appends an EXCHANGE the chain holds).
 */
export function serialWriter(store: LedgerStore): LedgerStore {
  let queue: Waiting[] = [];
  let writing = false;
  const pump = async (): Promise<void> => {
    if (writing || queue.length === 0) return;
    writing = true;
    const group = queue;
    queue = [];
    try {
      await write(store, group);
    } finally {
      writing = false;
      void pump();
    }
  };
  const appendBatch = (batch: readonly AppendInput[], options?: AppendOptions): Promise<LedgerEntry[]> =>
    new Promise((resolve, reject) => {
      queue.push({ batch, ...(options === undefined ? {} : { options }), resolve, reject });
      void pump();
    });
  return withAppendBatch(store, appendBatch);
}

async function write(store: LedgerStore, group: readonly Waiting[]): Promise<void> {
  if (group.length > 1 && group.every((w) => w.options?.once === undefined)) {
    let entries: LedgerEntry[] | null = null;
    const durable = group.some((w) => w.options?.durable !== false);
    const stored = group.every((w) => w.options?.stored === true);
    const options: AppendOptions | undefined =
      durable && !stored ? undefined : { ...(durable ? {} : { durable: false }), ...(stored ? { stored: true } : {}) };
    try {
      entries = await store.appendBatch(
        group.flatMap((w) => w.batch),
        options,
      );
    } catch (error) {
      if (isCpError(error) && error.code === 'ERR_STORE_UNAVAILABLE') {
        for (const waiting of group) waiting.reject(error);
        return;
      }
    }
    if (entries !== null) {
      let at = 0;
      for (const waiting of group) {
        waiting.resolve(entries.slice(at, at + waiting.batch.length));
        at += waiting.batch.length;
      }
      return;
    }
  }
  for (const waiting of group) {
    try {
      waiting.resolve(await store.appendBatch(waiting.batch, waiting.options));
    } catch (error) {
      waiting.reject(error);
    }
  }
}
