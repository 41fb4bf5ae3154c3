import type { AppendInput, AppendOptions, LedgerEntry } from '#kernel/ledger/index.js';

/**
 * A batch's fate in its group: committed with its entries' ids, or failed. `alone` says the group held this batch
 * only, so the failure is its own (a record fault of its records, say) and not another batch's.
 */
export type Grouped = { ok: true; ids: string[] } | { ok: false; error: unknown; alone: boolean };

interface Waiting {
  batch: AppendInput[];
  durable: boolean;
  resolve: (grouped: Grouped) => void;
}

/**
 * Group commit for callers with many exchanges in flight (the gateway): every batch that becomes ready in the
 * same turn of the event loop is appended in one transaction, so they share one fsync instead of one each.
 * A batch's promise resolves only after that transaction committed, with its entries' ids; if the group's
 * append fails, each batch is told so and takes the single-batch path (retries, degrade, spool) on its own, so one
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

  /**
   * `lone`: whether the caller has no other call in flight (route() from a CLI, a gateway at one call at a time).
   * A lone batch is written without waiting for the next turn of the event loop: nothing could join its group,
   * and the wait is idle time on every call.
   */
  constructor(
    private readonly append: (
      records: AppendInput[],
      options: Pick<AppendOptions, 'durable' | 'stored' | 'waitHere'>,
    ) => Promise<LedgerEntry[]>,
    private readonly lone: () => boolean = () => false,
  ) {}

  /** `durable: false`: this batch need not reach the disk before it resolves (the group may still carry it there). */
  commit(batch: AppendInput[], options: Pick<AppendOptions, 'durable'> = {}): Promise<Grouped> {
    return new Promise((resolve) => {
      this.queue.push({ batch, durable: options.durable !== false, resolve });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.writing || this.queue.length === 0) return;
    this.scheduled = true;
    const write = (): void => {
      this.scheduled = false;
      this.writing = true;
      void this.flush().finally(() => {
        this.writing = false;
        this.schedule();
      });
    };
    if (this.lone()) queueMicrotask(write);
    else setImmediate(write);
  }

  private async flush(): Promise<void> {
    const group = this.queue;
    this.queue = [];
    let entries: LedgerEntry[];
    try {
      const records = group.flatMap((w) => w.batch);
      // Only the ids are read back: the entries come as stored, without the text view a read would build.
      // A lone call's commit waits for the disk on this thread: no other call needs the event loop meanwhile.
      entries = await this.append(records, {
        durable: group.some((w) => w.durable),
        stored: true,
        waitHere: group.length === 1 && this.lone(),
      });
    } catch (error) {
      for (const waiting of group) waiting.resolve({ ok: false, error, alone: group.length === 1 });
      return;
    }
    this.stats.groups += 1;
    this.stats.batches += group.length;
    let at = 0;
    for (const waiting of group) {
      waiting.resolve({ ok: true, ids: entries.slice(at, at + waiting.batch.length).map((e) => e.id) });
      at += waiting.batch.length;
    }
  }
}
