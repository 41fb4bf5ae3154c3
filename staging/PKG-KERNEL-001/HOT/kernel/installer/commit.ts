import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fsyncDir, writeFileAtomic } from '../atomic.js';
import { sha256Digest } from '../canonical.js';
import { CpError, show } from '../errors.js';
import type { Ledger } from '../ledger/index.js';
import { OwnershipRegistry } from '../registry/ownership.js';
import { writeReceipt, type Receipt } from '../registry/receipt.js';
import { receiptDir } from '../root/layout.js';
import type { StepHook } from './hooks.js';
import { clearJournal, type Journal } from './journal.js';
import { appendOnce } from './ledger-records.js';

/**
 * Roll a journaled commit forward. Every step is idempotent, so the same function commits a fresh
 * install and repairs one that a crash interrupted at any point after the journal was written.
 */
export function applyJournal(root: string, journal: Journal, ledger: Ledger, hook: StepHook): Receipt | null {
  hook('after-journal', journal.package_id);
  placeFiles(root, journal, hook);
  hook('after-files', journal.package_id);
  removeFiles(root, journal.remove);
  if (journal.receipt) writeInstalledMeta(root, journal);
  const registry = OwnershipRegistry.open(root);
  try {
    if (journal.kind === 'uninstall') registry.removePackage(journal.package_id);
    else registry.setPackageFiles(journal.package_id, journal.owned, journal.transfers);
  } finally {
    registry.close();
  }
  for (const other of journal.updated_receipts) writeReceipt(root, other);
  hook('after-registry', journal.package_id);
  const { entry, anchor } = appendOnce(ledger, journal.package_id, journal.txn_id, journal.ledger);
  hook('after-ledger', journal.package_id);
  let receipt: Receipt | null = null;
  if (journal.receipt) {
    receipt = { ...journal.receipt, ledger_entry_id: entry.id, ledger_anchor: anchor };
    writeReceipt(root, receipt);
  } else {
    rmSync(receiptDir(root, journal.package_id), { recursive: true, force: true });
  }
  hook('after-receipt', journal.package_id);
  clearJournal(root);
  rmSync(join(root, journal.staging_dir), { recursive: true, force: true });
  return receipt;
}

function placeFiles(root: string, journal: Journal, hook: StepHook): void {
  const dirs = new Set<string>();
  let placed = 0;
  for (const file of journal.place) {
    const from = join(root, journal.staging_dir, file.path);
    const to = join(root, file.path);
    if (existsSync(from)) {
      mkdirSync(dirname(to), { recursive: true });
      renameSync(from, to);
      dirs.add(dirname(to));
      placed += 1;
      if (placed === 1) hook('mid-files', journal.package_id);
    } else if (!existsSync(to) || sha256Digest(readFileSync(to)) !== file.sha256) {
      throw new CpError('ERR_REPAIR_FAILED', `cannot roll forward ${show(journal.package_id)}: ${show(file.path)} is neither staged nor in place`, {
        hint: 'the staging area was removed by hand; restore the root from a backup', details: { txn_id: journal.txn_id, path: file.path },
      });
    }
  }
  for (const dir of dirs) fsyncDir(dir);
}

function removeFiles(root: string, paths: readonly string[]): void {
  const dirs = new Set<string>();
  for (const rel of paths) {
    rmSync(join(root, rel), { force: true });
    dirs.add(dirname(rel));
  }
  for (const dir of [...dirs].sort((a, b) => b.length - a.length)) pruneEmpty(root, dir);
}

/** Remove directories left empty by removed files, up to (not including) HOT itself. */
function pruneEmpty(root: string, relDir: string): void {
  let dir = relDir;
  while (dir.startsWith('HOT/')) {
    const abs = join(root, dir);
    if (!existsSync(abs) || readdirSync(abs).length > 0) return;
    rmdirSync(abs);
    dir = dirname(dir);
  }
}

function writeInstalledMeta(root: string, journal: Journal): void {
  const dir = receiptDir(root, journal.package_id);
  mkdirSync(dir, { recursive: true });
  for (const name of ['manifest.json', 'signature.json']) {
    const content = journal.installed_meta[name];
    if (content === undefined) rmSync(join(dir, name), { force: true });
    else writeFileAtomic(join(dir, name), content);
  }
}
