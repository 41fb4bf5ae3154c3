import { rmSync } from 'node:fs';
import { READ_LIMITS, readTextBounded } from '../bounded-read.js';
import { writeFileAtomic } from '../atomic.js';
import { CpError, show } from '../errors.js';
import type { OwnershipTransfer } from '../registry/ownership.js';
import type { Receipt, ReceiptFile } from '../registry/receipt.js';
import { rootPaths } from '../root/layout.js';
import { entryKind } from '../root/shape.js';
import { checkJournal, journalError } from './journal-check.js';

export type TxnKind = 'install' | 'upgrade' | 'uninstall';

export interface JournalLedgerRecord {
  event_type: string;
  decision: string;
  reason: string;
  metadata: Record<string, unknown>;
}

/**
 * The commit intent (HOT/registries/journal.json). Written atomically once the staged files are complete
 * and verified, so from then on the commit can always be rolled forward; every step it names is idempotent.
 */
export interface Journal {
  journal_version: 1;
  txn_id: string;
  kind: TxnKind;
  package_id: string;
  /** Root-relative staging directory holding the new files at their root-relative paths. */
  staging_dir: string;
  place: { path: string; sha256: string; size: number }[];
  remove: string[];
  /** What the package owns after the commit (empty for uninstall). */
  owned: ReceiptFile[];
  transfers: OwnershipTransfer[];
  /** Files written to HOT/installed/<PKG>/ besides the receipt (manifest.json, signature.json). */
  installed_meta: Record<string, string>;
  /** Receipts of packages that lose files to this one through `replaces`. */
  updated_receipts: Receipt[];
  /** The new receipt without its ledger fields (null for uninstall). */
  receipt: Omit<Receipt, 'ledger_entry_id' | 'ledger_anchor'> | null;
  ledger: JournalLedgerRecord;
}

export function writeJournal(root: string, journal: Journal): void {
  writeFileAtomic(rootPaths(root).journal, `${JSON.stringify(journal)}\n`);
}

/** The journal, validated (journal-check.ts) before anything acts on it; null when there is none. */
export function readJournal(root: string): Journal | null {
  const path = rootPaths(root).journal;
  const kind = entryKind(path);
  if (kind === 'absent') return null;
  // Never opened unless it is a regular file: a FIFO planted here would hang every command that repairs.
  if (kind !== 'file') throw journalError(path, `is a ${kind}, not a regular file`);
  const text = readTextBounded(path, {
    maxBytes: READ_LIMITS.state,
    what: 'the install journal',
    unreadableCode: 'ERR_JOURNAL_INVALID',
  });
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    throw new CpError('ERR_JOURNAL_INVALID', `the install journal ${show(path)} is unreadable`, {
      hint: 'the root was edited by hand or its disk is damaged; restore the root from a backup',
      details: { path },
      cause,
    });
  }
  return checkJournal(value, path);
}

/**
 * Not flushed: a journal that survives a crash only makes the next command replay a commit that is
 * already complete, which every step tolerates (the ledger record is found by its txn_id).
 */
export function clearJournal(root: string): void {
  rmSync(rootPaths(root).journal, { force: true });
}
