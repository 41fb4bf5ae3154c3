import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Ledger } from '../ledger/index.js';
import { rootPaths } from '../root/layout.js';
import { applyJournal } from './commit.js';
import { noHook } from './hooks.js';
import { readJournal } from './journal.js';

export interface RepairReport {
  /** A commit that was interrupted after its journal was written, and is now complete. */
  rolled_forward: { txn_id: string; package_id: string; kind: string } | null;
  /** Staging directories of installs that died before their journal: discarded, the root never saw them. */
  rolled_back: string[];
}

/**
 * Bring a root back to a committed state (call with the root lock held): finish a journaled commit,
 * discard staging areas that no journal refers to.
 */
export function repairRoot(root: string, ledger: Ledger): RepairReport {
  const journal = readJournal(root);
  let rolledForward: RepairReport['rolled_forward'] = null;
  if (journal) {
    journal.ledger.metadata = { ...journal.ledger.metadata, repaired: true };
    applyJournal(root, journal, ledger, noHook);
    rolledForward = { txn_id: journal.txn_id, package_id: journal.package_id, kind: journal.kind };
  }
  const { txnDir } = rootPaths(root);
  const rolledBack: string[] = [];
  if (existsSync(txnDir)) {
    for (const name of readdirSync(txnDir).sort()) {
      rmSync(join(txnDir, name), { recursive: true, force: true });
      rolledBack.push(name);
    }
  }
  return { rolled_forward: rolledForward, rolled_back: rolledBack };
}
