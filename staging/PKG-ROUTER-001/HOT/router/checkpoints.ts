import { type Warning, warning } from '#kernel/catalogue/define.js';
import { toCpError } from '#kernel/errors.js';
import { newestRootCheckpoint, writeRootCheckpoint, type Ledger } from '#kernel/ledger/index.js';
import type { RouterConfig } from './config.js';

export interface RouterCheckpointOptions {
  root: string;
  ledger: Ledger;
  config: RouterConfig['checkpoint'];
  clock?: () => number;
}

/**
 * The router's periodic checkpoint, run after each route: once the head is `every_entries` past the newest checkpoint,
 * or has moved and the newest is `every_seconds` old, sign it. The newest checkpoint is read from the root, so every
 * process routing into the root shares one schedule. Never throws into a route: a failure is the response's warning.
 */
export function routerCheckpointer(options: RouterCheckpointOptions): (() => Warning | null) | undefined {
  const { root, ledger, config } = options;
  if (!config) return undefined;
  const clock = options.clock ?? Date.now;
  let last: { seq: number; ms: number } | undefined;
  const due = (headSeq: number): boolean =>
    last === undefined ||
    headSeq - last.seq >= config.every_entries ||
    (headSeq > last.seq && clock() - last.ms >= config.every_seconds * 1000);
  return () => {
    try {
      const head = ledger.head().seq;
      if (last !== undefined && !due(head)) return null;
      // Another process may have written one since: the root's newest decides.
      const newest = newestRootCheckpoint(root);
      last = newest ? { seq: newest.seq, ms: Date.parse(newest.time) } : { seq: 0, ms: Number.NEGATIVE_INFINITY };
      if (!due(head)) return null;
      const written = writeRootCheckpoint(root, ledger, { now: clock });
      // No root key (a root bootstrapped before checkpoints): nothing to write, now or later.
      last = written
        ? { seq: written.checkpoint.seq, ms: Date.parse(written.checkpoint.time) }
        : { seq: Number.POSITIVE_INFINITY, ms: Number.POSITIVE_INFINITY };
      return null;
    } catch (error) {
      const coded = toCpError(error);
      return warning('CHECKPOINT_FAILED', `the ledger head was not checkpointed (${coded.code}: ${coded.message})`);
    }
  };
}
