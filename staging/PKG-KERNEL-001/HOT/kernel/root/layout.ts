import { join } from 'node:path';
import { unsafePathReason } from '../manifest/paths.js';

/**
 * The layout of an installed root (SPEC §3.4). Everything under HOT/ is governed (owned by exactly one
 * package) except the three state directories, which the installer and the ledger write.
 */
export const STATE_DIRS = ['installed', 'ledger', 'registries'] as const;

export interface RootPaths {
  root: string;
  hot: string;
  installed: string;
  ledgerDir: string;
  registries: string;
  ownershipDb: string;
  lockDb: string;
  journal: string;
  /** Per-transaction staging directories live here, inside the root so renames stay on one filesystem. */
  txnDir: string;
  trust: string;
}

export function rootPaths(root: string): RootPaths {
  const hot = join(root, 'HOT');
  const registries = join(hot, 'registries');
  return {
    root,
    hot,
    installed: join(hot, 'installed'),
    ledgerDir: join(hot, 'ledger'),
    registries,
    ownershipDb: join(registries, 'ownership.sqlite'),
    lockDb: join(registries, 'lock.sqlite'),
    journal: join(registries, 'journal.json'),
    txnDir: join(registries, 'txn'),
    trust: join(registries, 'trust.json'),
  };
}

/** A package id as the manifest schema allows it: a single safe path segment (it names HOT/installed/<PKG>/). */
export const PACKAGE_ID = /^PKG-[A-Z0-9-]+-\d{3}$/;

export function receiptDir(root: string, packageId: string): string {
  return join(root, 'HOT', 'installed', packageId);
}

export function receiptPath(root: string, packageId: string): string {
  return join(receiptDir(root, packageId), 'receipt.json');
}

/**
 * Whether a root-relative path (`HOT/kernel/x.js`, forward slashes) lies in a governed directory:
 * under HOT/ and not inside installed/, ledger/ or registries/. Gates use this to find orphans.
 */
export function isGovernedPath(relPath: string): boolean {
  const parts = relPath.split('/');
  if (parts.length < 2 || parts[0] !== 'HOT') return false;
  if (parts.some((part) => part === '' || part === '.' || part === '..')) return false;
  const top = parts[1] as string;
  return !(STATE_DIRS as readonly string[]).includes(top);
}

/**
 * A governed file path as a manifest may declare it (plain relative segments, no control characters):
 * the only kind of path a receipt, registry row or journal may name. State files name paths that
 * commands rename, delete and read, so anything else there is refused before it is acted on.
 */
export function isGovernedFilePath(value: unknown): value is string {
  return (
    typeof value === 'string' &&
    value.length <= 4096 &&
    !/[\u0000-\u001f\u007f]/.test(value) &&
    unsafePathReason(value) === null &&
    isGovernedPath(value)
  );
}
