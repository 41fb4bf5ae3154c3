import type { Ledger } from '../ledger/ledger.js';
import type { OwnershipRegistry } from '../registry/ownership.js';

/** The open state of a root that a commit writes to. */
export interface RootHandles {
  root: string;
  ledger: Ledger;
  registry: OwnershipRegistry;
}
