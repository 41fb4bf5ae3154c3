import { type Warning, warning } from '#kernel/catalogue/define.js';
import { toCpError } from '#kernel/errors.js';
import {
  type CheckpointHead,
  newestRootCheckpoint,
  writeRootCheckpoint,
  writeRootCheckpointOf,
  type Ledger,
  type WrittenCheckpoint,
} from '#kernel/ledger/index.js';
import { pgCheckpointHead } from '#kernel/ledger/pg/pg-checks.js';
import type { PgLedger } from '#kernel/ledger/pg/pg-ledger.js';
import type { RouterConfig } from './config.js';

export interface RouterCheckpointOptions {
  root: string;
  ledger: Ledger;
  config: RouterConfig['checkpoint'];
  clock?: () => number;
  /** Told the size of each checkpoint newly written (the gateway pushes it to its witnesses). */
  onWritten?: (seq: number) => void;
}

/**
 * When a checkpoint is due: once the head is `every_entries` past the newest checkpoint, or has moved and the newest
 * is `every_seconds` old. The newest checkpoint is read from the root, so every process routing into the root
 * shares one schedule.
 */
function checkpointSchedule(root: string, config: NonNullable<RouterConfig['checkpoint']>, clock: () => number) {
  let last: { seq: number; ms: number } | undefined;
  const due = (headSeq: number): boolean =>
    last === undefined ||
    headSeq - last.seq >= config.every_entries ||
    (headSeq > last.seq && clock() - last.ms >= config.every_seconds * 1000);
  return {
    /** Due by what this process last knew (cheap: no file read). */
    maybeDue: (headSeq: number): boolean => last === undefined || due(headSeq),
    /** Due by the root's newest checkpoint: another process may have written one since. */
    dueNow(headSeq: number): boolean {
      const newest = newestRootCheckpoint(root);
      last = newest ? { seq: newest.seq, ms: Date.parse(newest.time) } : { seq: 0, ms: Number.NEGATIVE_INFINITY };
      return due(headSeq);
    },
    written(written: WrittenCheckpoint | null): void {
      // No root key (a root bootstrapped before checkpoints): nothing to write, now or later.
      last = written
        ? { seq: written.checkpoint.seq, ms: Date.parse(written.checkpoint.time) }
        : { seq: Number.POSITIVE_INFINITY, ms: Number.POSITIVE_INFINITY };
    },
  };
}

function failed(error: unknown): Warning {
  const coded = toCpError(error);
  return warning('CHECKPOINT_FAILED', `the ledger head was not checkpointed (${coded.code}: ${coded.message})`);
}

/**
 * The router's periodic checkpoint, run after each route: sign the head of the root's ledger with the root key when
 * one is due. Never throws into a route: a failure is the response's warning.
 */
export function routerCheckpointer(options: RouterCheckpointOptions): (() => Warning | null) | undefined {
  const { root, ledger, config } = options;
  if (!config) return undefined;
  const clock = options.clock ?? Date.now;
  const schedule = checkpointSchedule(root, config, clock);
  return () => {
    try {
      const head = ledger.head().seq;
      if (!schedule.maybeDue(head) || !schedule.dueNow(head)) return null;
      const written = writeRootCheckpoint(root, ledger, { now: clock });
      schedule.written(written);
      if (written?.written) options.onWritten?.(written.checkpoint.seq);
      return null;
    } catch (error) {
      return failed(error);
    }
  };
}

export interface StoreCheckpointOptions {
  root: string;
  /** The shared chain (PostgreSQL) this root's router appends to. */
  store: PgLedger;
  config: RouterConfig['checkpoint'];
  clock?: () => number;
  /** Told the size of each checkpoint newly written. */
  onWritten?: (seq: number) => void;
}

/**
 * routerCheckpointer for a router on a shared store: the head of the PostgreSQL chain, signed with this root's key
 * into this root's checkpoint directory (each host its own root, its own checkpoints of the one chain), on the same
 * schedule. One check at a time: a call made while one is in flight returns at once, so a busy host reads the head
 * once per round trip rather than once per exchange. Never rejects: a failure is the warning it resolves to.
 */
export function storeCheckpointer(options: StoreCheckpointOptions): (() => Promise<Warning | null>) | undefined {
  const { root, store, config } = options;
  if (!config) return undefined;
  const clock = options.clock ?? Date.now;
  const schedule = checkpointSchedule(root, config, clock);
  const check = async (): Promise<Warning | null> => {
    try {
      const head: CheckpointHead | null = await pgCheckpointHead(store);
      if (head === null || !schedule.maybeDue(head.seq) || !schedule.dueNow(head.seq)) return null;
      const written = writeRootCheckpointOf(root, () => head, { now: clock });
      schedule.written(written);
      if (written?.written) options.onWritten?.(written.checkpoint.seq);
      return null;
    } catch (error) {
      return failed(error);
    }
  };
  let running = false;
  return async () => {
    // The check in flight covers this call too; its caller (who awaits it) hears of a failure, once.
    if (running) return null;
    running = true;
    try {
      return await check();
    } finally {
      running = false;
    }
  };
}
