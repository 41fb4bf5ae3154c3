import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { rootPaths } from '../root/layout.js';
import { entryKind, shapeError } from '../root/shape.js';
import { commitJournal } from './commit.js';
import type { RootHandles } from './handles.js';
import { noHook } from './hooks.js';
import { readJournal } from './journal.js';
import { checkJournalOnDisk } from './journal-check.js';

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
export async function repairRoot(handles: RootHandles): Promise<RepairReport> {
  const { root } = handles;
  const journal = readJournal(root);
  let rolledForward: RepairReport['rolled_forward'] = null;
  if (journal) {
    checkJournalOnDisk(root, journal, rootPaths(root).journal);
    journal.ledger.metadata = { ...journal.ledger.metadata, repaired: true };
    await commitJournal(handles, journal, noHook);
    rolledForward = { txn_id: journal.txn_id, package_id: journal.package_id, kind: journal.kind };
  }
  const { txnDir } = rootPaths(root);
  const rolledBack: string[] = [];
  const txnKind = entryKind(txnDir);
  if (txnKind !== 'absent' && txnKind !== 'directory') throw shapeError('HOT/registries/txn', txnKind, 'directory');
  if (txnKind === 'directory') {
    for (const name of readdirSync(txnDir).sort()) {
      rmSync(join(txnDir, name), { recursive: true, force: true });
      rolledBack.push(name);
    }
  }
  return { rolled_forward: rolledForward, rolled_back: rolledBack };
}
