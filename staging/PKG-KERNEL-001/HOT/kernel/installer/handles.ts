import type { Ledger } from '../ledger/ledger.js';
import type { OwnershipRegistry } from '../registry/ownership.js';
import type { ReceiptCache } from './receipt-cache.js';

/** The open state of a root that a commit writes to. */
export interface RootHandles {
  root: string;
  ledger: Ledger;
  registry: OwnershipRegistry;
  /** Commits write receipts through it, so it stays in step with the disk. */
  receipts: ReceiptCache;
  /** A batch signs one checkpoint after its last commit instead of one per commit (each costs two fsyncs). */
  deferCheckpoint?: boolean;
}
