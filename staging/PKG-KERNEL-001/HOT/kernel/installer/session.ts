// ledger.js, not the ledger's index: the index also loads export/import (and ajv), which installing never uses.
import { Ledger, ledgerPathForRoot } from '../ledger/ledger.js';
import { OwnershipRegistry } from '../registry/ownership.js';
import { acquireRootLock, type RootLock } from '../root/lock.js';
import { assertRootShape } from '../root/shape.js';
import type { RootHandles } from './handles.js';
import { ReceiptCache } from './receipt-cache.js';
import { repairRoot, type RepairReport } from './repair.js';

export interface SessionOptions {
  lockTimeoutMs?: number | undefined;
  clock?: (() => number) | undefined;
}

/** A root opened for changes: the root lock held, ledger and registry open, any interrupted commit repaired. */
export interface RootSession extends RootHandles {
  repair: RepairReport;
  close(): void;
}

export async function openRootSession(root: string, options: SessionOptions = {}): Promise<RootSession> {
  assertRootShape(root);
  const lock: RootLock = acquireRootLock(
    root,
    options.lockTimeoutMs === undefined ? {} : { timeoutMs: options.lockTimeoutMs },
  );
  let ledger: Ledger | undefined;
  let registry: OwnershipRegistry | undefined;
  try {
    ledger = Ledger.open(ledgerPathForRoot(root), options.clock ? { clock: options.clock } : {});
    registry = OwnershipRegistry.open(root);
    const handles: RootHandles = { root, ledger, registry, receipts: new ReceiptCache(root) };
    const repair = await repairRoot(handles);
    return {
      ...handles,
      repair,
      close(): void {
        handles.registry.close();
        handles.ledger.close();
        lock.release();
      },
    };
  } catch (error) {
    registry?.close();
    ledger?.close();
    lock.release();
    throw error;
  }
}

export async function withRootSession<T>(
  root: string,
  options: SessionOptions,
  fn: (session: RootSession) => Promise<T> | T,
): Promise<T> {
  const session = await openRootSession(root, options);
  try {
    return await fn(session);
  } finally {
    session.close();
  }
}
