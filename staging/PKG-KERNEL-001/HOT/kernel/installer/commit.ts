import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { sha256Digest } from '../canonical.js';
import { CpError, show, toCpError } from '../errors.js';
import { writeRootCheckpoint } from '../ledger/checkpoint-store.js';
import type { Receipt } from '../registry/receipt.js';
import { receiptDir, rootPaths } from '../root/layout.js';
import { assertNoLinkedAncestor, entryKind } from '../root/shape.js';
import { fsyncAll } from './durable.js';
import type { RootHandles } from './handles.js';
import type { StepHook } from './hooks.js';
import { clearJournal, type Journal } from './journal.js';
import { appendOnce } from './ledger-records.js';

/**
 * applyJournal, for a fresh commit or a repair. A failure while the journal is still in place (a full disk, an I/O
 * error) leaves the root between the two versions until a later command rolls it forward; the error says that, and
 * which command finishes it, rather than the cause's own "nothing was left half-done".
 */
export async function commitJournal(handles: RootHandles, journal: Journal, hook: StepHook): Promise<Receipt | null> {
  try {
    return await applyJournal(handles, journal, hook);
  } catch (error) {
    if (entryKind(rootPaths(handles.root).journal) !== 'file') throw error;
    const coded = toCpError(error);
    throw new CpError(
      coded.code,
      `${coded.message}; the ${journal.kind} of ${journal.package_id} (${journal.txn_id}) is journaled but not finished`,
      {
        hint: `deal with ${coded.code} first, then run any command that opens the root (cplane verify --root R): it finishes the ${journal.kind}; until then the root holds part of it`,
        details: { ...coded.details, package_id: journal.package_id, txn_id: journal.txn_id, commit_pending: true },
        cause: error,
      },
    );
  }
}

/**
 * Roll a journaled commit forward. Every step is idempotent, so the same function commits a fresh
 * install and repairs one that a crash interrupted at any point after the journal was written.
 */
export async function applyJournal(handles: RootHandles, journal: Journal, hook: StepHook): Promise<Receipt | null> {
  const { root, ledger, registry, receipts } = handles;
  hook('after-journal', journal.package_id);
  const { touched, moved } = placeFiles(root, journal, hook);
  touched.push(...removeFiles(root, journal.remove));
  if (journal.receipt) touched.push(...writeInstalledMeta(root, journal));
  // The renames and the installed manifest must be durable before the registry and receipt claim them.
  await fsyncAll(touched);
  hook('after-files', journal.package_id);
  if (journal.kind === 'uninstall') registry.removePackage(journal.package_id);
  else registry.setPackageFiles(journal.package_id, journal.owned, journal.transfers);
  for (const other of journal.updated_receipts) receipts.write(other);
  hook('after-registry', journal.package_id);
  const { entry, anchor } = appendOnce(ledger, journal.package_id, journal.txn_id, journal.ledger);
  hook('after-ledger', journal.package_id);
  let receipt: Receipt | null = null;
  if (journal.receipt) {
    receipt = { ...journal.receipt, ledger_entry_id: entry.id, ledger_anchor: anchor };
    receipts.write(receipt);
  } else {
    receipts.remove(journal.package_id);
  }
  hook('after-receipt', journal.package_id);
  clearJournal(root);
  removeStaging(root, journal, moved);
  // The commit is complete; the signed head now anchors it outside the database too (no root key: an older root).
  if (!handles.deferCheckpoint) writeRootCheckpoint(root, ledger);
  return receipt;
}

/**
 * Move staged files into place; returns the directories whose entries changed and the directories moved
 * whole. Where a whole directory is new to the root, the staged directory is renamed in one step instead
 * of file by file: the staging area holds nothing but this commit's files, and one rename is as atomic as many.
 */
function placeFiles(root: string, journal: Journal, hook: StepHook): { touched: string[]; moved: string[] } {
  const touched = new Set<string>();
  const present = new Set<string>();
  const moved: string[] = [];
  let placed = 0;
  for (const file of journal.place) {
    if (moved.some((dir) => file.path.startsWith(`${dir}/`))) continue;
    const from = join(root, journal.staging_dir, file.path);
    if (!existsSync(from)) {
      assertInPlace(root, journal, file);
      continue;
    }
    const missing = firstMissingDir(root, file.path, present);
    const rel = missing ?? file.path;
    renameSync(join(root, journal.staging_dir, rel), join(root, rel));
    if (missing) moved.push(missing);
    touched.add(dirname(join(root, rel)));
    placed += 1;
    if (placed === 1) hook('mid-files', journal.package_id);
  }
  return { touched: [...touched], moved };
}

/**
 * After placeFiles the staging area holds only the directories stageFiles made, now empty (a directory
 * moved whole is gone with its subdirectories), so rmdir them deepest first: one call each, where Node's
 * recursive rm lstats each one, tries rmdir, reads it, and tries again. A directory already gone is fine
 * (a repaired commit moved it before the crash); anything else left over falls back to the recursive rm.
 */
function removeStaging(root: string, journal: Journal, moved: readonly string[]): void {
  const base = join(root, journal.staging_dir);
  const dirs = new Set<string>();
  for (const file of journal.place) {
    for (let dir = dirname(file.path); dir !== '.' && !dirs.has(dir); dir = dirname(dir)) dirs.add(dir);
  }
  const left = [...dirs].filter((dir) => !moved.some((m) => dir === m || dir.startsWith(`${m}/`)));
  try {
    // A child's path is longer than its parent's, so longest first is deepest first.
    for (const dir of left.sort((a, b) => b.length - a.length)) rmdirIfPresent(join(base, dir));
    rmdirIfPresent(base);
  } catch {
    rmSync(base, { recursive: true, force: true });
  }
}

function rmdirIfPresent(dir: string): void {
  try {
    rmdirSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/** The first ancestor directory of `relPath` that does not exist in the root yet, or null. */
function firstMissingDir(root: string, relPath: string, present: Set<string>): string | null {
  const parts = relPath.split('/').slice(0, -1);
  for (let i = 1; i <= parts.length; i += 1) {
    const dir = parts.slice(0, i).join('/');
    if (present.has(dir)) continue;
    if (!existsSync(join(root, dir))) return dir;
    present.add(dir);
  }
  return null;
}

/** Crash repair: a file no longer staged must already be in place with its digest. */
function assertInPlace(root: string, journal: Journal, file: { path: string; sha256: string }): void {
  const to = join(root, file.path);
  // lstat first: only a regular file is opened (a FIFO would block the read forever).
  if (entryKind(to) !== 'file' || sha256Digest(readFileSync(to)) !== file.sha256) {
    throw new CpError(
      'ERR_REPAIR_FAILED',
      `cannot roll forward ${show(journal.package_id)}: ${show(file.path)} is neither staged nor in place`,
      {
        hint: 'the staging area was removed by hand; restore the root from a backup',
        details: { txn_id: journal.txn_id, path: file.path },
      },
    );
  }
}

/** Remove files (and the directories they leave empty); returns the surviving directories that changed. */
function removeFiles(root: string, paths: readonly string[]): string[] {
  const dirs = new Set<string>();
  const judged = new Set<string>();
  for (const rel of paths) {
    // A receipt names what an uninstall deletes: a linked directory on the way would carry the delete out of the root.
    assertNoLinkedAncestor(root, rel, judged);
    rmSync(join(root, rel), { force: true });
    dirs.add(dirname(rel));
  }
  for (const dir of [...dirs].sort((a, b) => b.length - a.length)) pruneEmpty(root, dir);
  const changed = new Set<string>();
  for (const dir of dirs) {
    let survivor = dir;
    while (!existsSync(join(root, survivor))) survivor = dirname(survivor);
    changed.add(join(root, survivor));
  }
  return [...changed];
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

/** HOT/installed/<PKG>/manifest.json (+ signature.json), by rename; returns what to flush. */
function writeInstalledMeta(root: string, journal: Journal): string[] {
  const dir = receiptDir(root, journal.package_id);
  mkdirSync(dir, { recursive: true });
  const flush = [dir];
  for (const name of ['manifest.json', 'signature.json']) {
    const content = journal.installed_meta[name];
    const target = join(dir, name);
    if (content === undefined) {
      rmSync(target, { force: true });
    } else {
      const tmp = `${target}.${journal.txn_id}.tmp`;
      // The name is known once the journal is: whatever sits there (a leftover, a planted link or FIFO) is removed, never written through.
      rmSync(tmp, { force: true });
      writeFileSync(tmp, content, { flag: 'wx' });
      renameSync(tmp, target);
      flush.push(target);
    }
  }
  return flush;
}
