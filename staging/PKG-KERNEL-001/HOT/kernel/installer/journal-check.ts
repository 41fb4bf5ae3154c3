import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { CpError, show } from '../errors.js';
import { checkReceipt } from '../registry/receipt.js';
import { isGovernedFilePath } from '../root/governed-file-path.js';
import { PACKAGE_ID } from '../root/layout.js';
import { assertNoLinkedAncestor, entryKind } from '../root/shape.js';
import type { Journal } from './journal.js';

/**
 * A journal on disk is untrusted input: whoever can write HOT/registries/ can plant one, and repair acts on
 * it (renames, deletes) before any gate runs. Everything it names is checked first: ids are single path
 * segments of the expected form, the staging directory is the transaction's own under HOT/registries/txn/,
 * and every file path is a governed root-relative path (never `..`, never absolute, never root state).
 */
const TXN_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
const DIGEST = /^sha256:[0-9a-f]{64}$/;
const KINDS = ['install', 'upgrade', 'uninstall'];
const META_FILES = ['manifest.json', 'signature.json'];

export function journalError(path: string, why: string, offending?: unknown): CpError {
  return new CpError(
    'ERR_JOURNAL_INVALID',
    `the install journal ${show(path)} ${why}${offending === undefined ? '' : `: ${show(offending)}`}`,
    {
      hint: 'a journal is only ever written by the installer; this one was planted or damaged. Move it aside (nothing was changed) and run cplane verify',
      details: { path, ...(offending === undefined ? {} : { offending }) },
    },
  );
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

export function checkJournal(value: unknown, path: string): Journal {
  const bad = (why: string, offending?: unknown): CpError => journalError(path, why, offending);
  if (!isObj(value)) throw bad('is not a JSON object');
  if (value.journal_version !== 1) throw bad('has an unknown journal_version', value.journal_version);
  if (typeof value.txn_id !== 'string' || !TXN_ID.test(value.txn_id)) throw bad('has a malformed txn_id', value.txn_id);
  if (typeof value.kind !== 'string' || !KINDS.includes(value.kind)) throw bad('has an unknown kind', value.kind);
  const id = value.package_id;
  if (typeof id !== 'string' || !PACKAGE_ID.test(id) || id.length > 64) throw bad('has a malformed package_id', id);
  if (value.staging_dir !== `HOT/registries/txn/${value.txn_id}`)
    throw bad("names a staging directory other than its transaction's", value.staging_dir);
  const files = (key: string, withDigest: boolean): void => {
    const list = value[key];
    if (!Array.isArray(list)) throw bad(`has no ${key} array`);
    for (const item of list) {
      const p = withDigest ? (isObj(item) ? item.path : undefined) : item;
      if (!isGovernedFilePath(p)) throw bad(`names a path outside the governed tree in ${key}`, p ?? item);
      if (withDigest) {
        const f = item as Obj;
        if (
          typeof f.sha256 !== 'string' ||
          !DIGEST.test(f.sha256) ||
          !Number.isSafeInteger(f.size) ||
          (f.size as number) < 0
        )
          throw bad(`has a malformed ${key} entry`, item);
      }
    }
  };
  files('place', true);
  files('remove', false);
  files('owned', true);
  if (!Array.isArray(value.transfers)) throw bad('has no transfers array');
  for (const t of value.transfers) {
    if (
      !isObj(t) ||
      !isGovernedFilePath(t.path) ||
      t.txn_id !== value.txn_id ||
      t.to_package !== id ||
      typeof t.from_package !== 'string' ||
      !PACKAGE_ID.test(t.from_package)
    ) {
      throw bad('has a malformed transfer', t);
    }
  }
  if (!isObj(value.installed_meta)) throw bad('has no installed_meta object');
  for (const [name, text] of Object.entries(value.installed_meta)) {
    if (!META_FILES.includes(name) || typeof text !== 'string')
      throw bad('names an installed file other than manifest.json/signature.json', name);
  }
  if (!Array.isArray(value.updated_receipts)) throw bad('has no updated_receipts array');
  for (const r of value.updated_receipts) {
    const receipt = checkReceipt(r, `${path}#updated_receipts`);
    if (!PACKAGE_ID.test(receipt.package_id) || receipt.package_id === id)
      throw bad('updates a receipt it may not', receipt.package_id);
    for (const f of receipt.files)
      if (!isGovernedFilePath(f.path)) throw bad('names a path outside the governed tree in updated_receipts', f.path);
  }
  const receipt = value.receipt;
  if (value.kind === 'uninstall' ? receipt !== null : !isObj(receipt))
    throw bad(`has a receipt that does not fit kind ${value.kind}`);
  if (isObj(receipt)) {
    if (receipt.package_id !== id) throw bad('carries a receipt for another package', receipt.package_id);
    if (!Array.isArray(receipt.files)) throw bad('carries a receipt without files');
    for (const f of receipt.files)
      if (!isObj(f) || !isGovernedFilePath(f.path))
        throw bad('names a path outside the governed tree in its receipt', isObj(f) ? f.path : f);
  }
  const ledger = value.ledger;
  if (
    !isObj(ledger) ||
    typeof ledger.event_type !== 'string' ||
    typeof ledger.decision !== 'string' ||
    typeof ledger.reason !== 'string' ||
    !isObj(ledger.metadata)
  ) {
    throw bad('has a malformed ledger record');
  }
  return value as unknown as Journal;
}

/**
 * What a journal names on disk is what it claims to be, checked before repair acts on it: the staging
 * directory and every directory above a file it places, removes or stages are real directories inside the
 * root (no link anywhere on the way), and every staged file is a regular file. A link planted in the staging
 * area would otherwise be renamed into a governed path, or a linked directory carry the rename out of the root.
 */
export function checkJournalOnDisk(root: string, journal: Journal, path: string): void {
  const memo = new Set<string>();
  const staging = journal.staging_dir;
  const stagingKind = entryKind(join(root, staging));
  if (stagingKind !== 'absent' && stagingKind !== 'directory')
    throw journalError(path, `names a staging directory that is a ${stagingKind}`, staging);
  const guarded = (rel: string): void => {
    try {
      assertNoLinkedAncestor(root, rel, memo);
    } catch (cause) {
      throw new CpError(
        'ERR_JOURNAL_INVALID',
        `the install journal ${show(path)} names ${show(rel)}, and ${(cause as CpError).message}`,
        {
          hint: 'nothing was changed; remove the link or restore the root from a backup, then run cplane verify',
          details: { path, offending: rel },
          cause,
        },
      );
    }
  };
  for (const file of journal.place) {
    guarded(file.path);
    const staged = `${staging}/${file.path}`;
    guarded(staged);
    const kind = entryKind(join(root, staged));
    if (kind !== 'absent' && kind !== 'file')
      throw journalError(path, `stages a ${kind} where a regular file belongs`, staged);
    const placed = entryKind(join(root, file.path));
    if (placed !== 'absent' && placed !== 'file')
      throw journalError(path, `would place a file over a ${placed}`, file.path);
  }
  for (const rel of journal.remove) guarded(rel);
  if (stagingKind === 'directory') checkStagedTree(root, journal, path);
}

/** Placing may rename a staged directory whole, so the staging area may hold nothing but the journal's files. */
function checkStagedTree(root: string, journal: Journal, path: string): void {
  const listed = new Set(journal.place.map((file) => file.path));
  const walk = (rel: string): void => {
    for (const entry of readdirSync(join(root, journal.staging_dir, rel), { withFileTypes: true })) {
      const child = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory()) walk(child);
      else if (!entry.isFile() || !listed.has(child))
        throw journalError(
          path,
          `finds ${entry.isFile() ? 'a file it does not list' : 'a link or special file'} in its staging area`,
          `${journal.staging_dir}/${child}`,
        );
    }
  };
  walk('');
}
