import { Ledger, ledgerPathForRoot } from '../ledger/index.js';
import { acquireRootLock, type RootLock } from '../root/lock.js';
import { repairRoot, type RepairReport } from './repair.js';

export interface SessionOptions {
  lockTimeoutMs?: number | undefined;
  clock?: (() => number) | undefined;
}

/** A root opened for changes: the root lock held, the ledger open, any interrupted commit repaired. */
export interface RootSession {
  root: string;
  ledger: Ledger;
  repair: RepairReport;
  close(): void;
}

export function openRootSession(root: string, options: SessionOptions = {}): RootSession {
  const lock: RootLock = acquireRootLock(root, options.lockTimeoutMs === undefined ? {} : { timeoutMs: options.lockTimeoutMs });
  let ledger: Ledger | undefined;
  try {
    ledger = Ledger.open(ledgerPathForRoot(root), options.clock ? { clock: options.clock } : {});
    const repair = repairRoot(root, ledger);
    const opened = ledger;
    return {
      root, ledger: opened, repair,
      close(): void {
        opened.close();
        lock.release();
      },
    };
  } catch (error) {
    ledger?.close();
    lock.release();
    throw error;
  }
}

export async function withRootSession<T>(root: string, options: SessionOptions, fn: (session: RootSession) => Promise<T> | T): Promise<T> {
  const session = openRootSession(root, options);
  try {
    return await fn(session);
  } finally {
    session.close();
  }
}
