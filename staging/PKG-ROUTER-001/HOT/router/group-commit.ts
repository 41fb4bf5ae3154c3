import type { AppendInput, AppendOptions, LedgerEntry } from '#kernel/ledger/index.js';

interface Waiting {
  batch: AppendInput[];
  durable: boolean;
  resolve: (ids: string[] | null) => void;
}

/**
 * Group commit for callers with many exchanges in flight (the gateway): every batch that becomes ready in the
 * same turn of the event loop is appended in one transaction, so they share one fsync instead of one each.
 * A batch's promise resolves only after that transaction committed, with its entries' ids; if the group's
 * append fails, each batch gets null and takes the single-batch path (retries, degrade, spool) on its own, so one
 * bad batch never costs the others their record. A group is durable (fsynced) if any of its batches asks; one
 * that none asks for is committed without waiting for the disk, made durable by the next durable commit.
 */
export class GroupCommit {
  private queue: Waiting[] = [];
  private scheduled = false;
  /** A group being written: the next one waits for it (a store that answers later, PostgreSQL, gathers more). */
  private writing = false;
  /** Transactions written and batches carried (a group of one is a plain append). */
  readonly stats = { groups: 0, batches: 0 };

  constructor(
    private readonly append: (
      records: AppendInput[],
      options?: Pick<AppendOptions, 'durable'>,
    ) => Promise<LedgerEntry[]>,
  ) {}

  /** `durable: false`: this batch need not reach the disk before it resolves (the group may still carry it there). */
  commit(batch: AppendInput[], options: Pick<AppendOptions, 'durable'> = {}): Promise<string[] | null> {
    return new Promise((resolve) => {
      this.queue.push({ batch, durable: options.durable !== false, resolve });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.writing || this.queue.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.writing = true;
      void this.flush().finally(() => {
        this.writing = false;
        this.schedule();
      });
    });
  }

  private async flush(): Promise<void> {
    const group = this.queue;
    this.queue = [];
    let entries: LedgerEntry[];
    try {
      const records = group.flatMap((w) => w.batch);
      entries = await (group.some((w) => w.durable) ? this.append(records) : this.append(records, { durable: false }));
    } catch {
      for (const waiting of group) waiting.resolve(null);
      return;
    }
    this.stats.groups += 1;
    this.stats.batches += group.length;
    let at = 0;
    for (const waiting of group) {
      waiting.resolve(entries.slice(at, at + waiting.batch.length).map((e) => e.id));
      at += waiting.batch.length;
    }
  }
}
