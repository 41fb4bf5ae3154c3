import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { READ_LIMITS, readTextBounded } from '../bounded-read.js';
import { writeFileAtomic } from '../atomic.js';
import { CpError, show } from '../errors.js';
import { parseIntegrity } from '../archive/sri.js';
import { isGovernedFilePath } from '../root/governed-file-path.js';
import { PACKAGE_ID, receiptDir, receiptPath, rootPaths } from '../root/layout.js';
import { entryKind } from '../root/shape.js';

export type ReceiptSignatureStatus = 'valid' | 'unsigned' | 'invalid' | 'untrusted_key';

export interface ReceiptFile {
  path: string;
  sha256: string;
  size: number;
  classification: string;
}

export interface ReceiptDependency {
  package_id: string;
  version: string;
}

/** HOT/installed/<PKG>/receipt.json — schema: PKG-SCHEMAS-001 HOT/schemas/receipt.schema.json. */
export interface Receipt {
  receipt_version: 1;
  package_id: string;
  version: string;
  layer: number;
  dependencies: ReceiptDependency[];
  replaces: string[];
  archive_file: string;
  /** SRI of the archive (`sha512-…`); a receipt written before SRI holds `sha256:<hex>`, still read as is. */
  archive_integrity: string;
  /** sha256 of the canonical manifest (what the signature covers). */
  manifest_digest: string;
  /** The files this package owns now (sorted by path). */
  files: ReceiptFile[];
  /** Files a later package took over through `replaces`. */
  transferred_out: { path: string; to_package: string; txn_id: string }[];
  signature: { status: ReceiptSignatureStatus; key_id: string | null; dev_waiver: boolean };
  installed_at: string;
  previous_version: string | null;
  txn_id: string;
  ledger_entry_id: string;
  /** The ledger head right after this install's INSTALLED/PACKAGE_UPGRADED append. */
  ledger_anchor: { seq: number; hash: string };
}

/** Returns the receipt as a later read will see it: parsed from the text written, sharing no objects with `receipt`. */
export function writeReceipt(root: string, receipt: Receipt): Receipt {
  const path = receiptPath(root, receipt.package_id);
  const text = `${JSON.stringify(receipt, null, 2)}\n`;
  mkdirSync(receiptDir(root, receipt.package_id), { recursive: true });
  writeFileAtomic(path, text);
  return parseReceipt(text, path);
}

export function readReceipt(root: string, packageId: string): Receipt | null {
  const path = receiptPath(root, packageId);
  const kind = entryKind(path);
  if (kind === 'absent') return null;
  if (kind !== 'file') throw badReceipt(path, `is a ${kind}, not a regular file`);
  const receipt = parseReceipt(
    readTextBounded(path, { maxBytes: READ_LIMITS.state, what: 'a receipt', unreadableCode: 'ERR_RECEIPT_INVALID' }),
    path,
  );
  if (receipt.package_id !== packageId)
    throw badReceipt(path, `is for ${show(receipt.package_id)}, not for the package whose directory holds it`);
  return receipt;
}

/** A receipt from its text (read by the caller, e.g. once for several gates); `path` names it in errors. */
export function parseReceipt(text: string, path: string): Receipt {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    throw badReceipt(path, 'is not JSON', cause);
  }
  return checkReceipt(value, path);
}

/** Every installed package's receipt, by package id. */
export function listReceipts(root: string): Map<string, Receipt> {
  const dir = rootPaths(root).installed;
  const out = new Map<string, Receipt>();
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir).sort()) {
    const receipt = readReceipt(root, name);
    if (receipt) out.set(name, receipt);
  }
  return out;
}

/** Parse-and-validate at the edge: a receipt the installer trusts has every field it relies on. */
export function checkReceipt(value: unknown, path: string): Receipt {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw badReceipt(path, 'is not an object');
  const r = value as Record<string, unknown>;
  const str = (key: string): void => {
    if (typeof r[key] !== 'string') throw badReceipt(path, `has no string ${key}`);
  };
  [
    'package_id',
    'version',
    'archive_integrity',
    'manifest_digest',
    'installed_at',
    'txn_id',
    'ledger_entry_id',
  ].forEach(str);
  if (!PACKAGE_ID.test(r.package_id as string) || (r.package_id as string).length > 64)
    throw badReceipt(path, `has a malformed package_id ${show(r.package_id)}`);
  if (r.receipt_version !== 1) throw badReceipt(path, `has receipt_version ${show(r.receipt_version)}, expected 1`);
  checkArchiveIntegrity(r.archive_integrity as string, path);
  if (typeof r.layer !== 'number') throw badReceipt(path, 'has no numeric layer');
  for (const key of ['files', 'dependencies', 'replaces', 'transferred_out']) {
    if (!Array.isArray(r[key])) throw badReceipt(path, `has no ${key} array`);
  }
  for (const file of r.files as unknown[]) {
    const f = file as Record<string, unknown> | null;
    if (!f || typeof f.path !== 'string' || typeof f.sha256 !== 'string' || typeof f.size !== 'number') {
      throw badReceipt(path, `has a malformed files entry ${show(file)}`);
    }
    // Commands delete and read what a receipt names: only governed paths inside the root.
    if (!isGovernedFilePath(f.path))
      throw badReceipt(path, `names ${show(f.path)}, which is not a governed path inside the root`);
  }
  const anchor = r.ledger_anchor as Record<string, unknown> | null | undefined;
  if (!anchor || typeof anchor.seq !== 'number' || typeof anchor.hash !== 'string')
    throw badReceipt(path, 'has no ledger_anchor {seq, hash}');
  const sig = r.signature as Record<string, unknown> | null | undefined;
  if (!sig || typeof sig.status !== 'string' || typeof sig.dev_waiver !== 'boolean')
    throw badReceipt(path, 'has no signature {status, key_id, dev_waiver}');
  return value as Receipt;
}

/**
 * Receipts written before archives carried SRI strings recorded `sha256:<hex>`. They stay readable: the value is
 * provenance compared with the ledger's record of the same install (G1), never used to re-check an archive, and
 * the next install or upgrade of the package writes the SRI form.
 */
const LEGACY_ARCHIVE_DIGEST = /^sha256:[0-9a-f]{64}$/;

function checkArchiveIntegrity(value: string, path: string): void {
  if (LEGACY_ARCHIVE_DIGEST.test(value)) return;
  try {
    parseIntegrity(value, 'archive_integrity');
  } catch (cause) {
    throw badReceipt(path, `has a malformed archive_integrity: ${(cause as Error).message}`, cause);
  }
}

function badReceipt(path: string, why: string, cause?: unknown): CpError {
  return new CpError('ERR_RECEIPT_INVALID', `receipt ${show(path)} ${why}`, {
    hint: 'the root state was edited by hand; run cplane verify, then reinstall the package',
    details: { path },
    cause,
  });
}

/** A root's packages as `cplane list` and the console show them: by layer, then id. */
export interface InstalledPackage {
  package_id: string;
  version: string;
  layer: number;
  files: number;
  signature: ReceiptSignatureStatus;
  dev_waiver: boolean;
  installed_at: string;
  ledger_anchor: Receipt['ledger_anchor'];
}

export function installedPackages(root: string): InstalledPackage[] {
  return [...listReceipts(root).values()]
    .sort((a, b) => a.layer - b.layer || (a.package_id < b.package_id ? -1 : 1))
    .map((r) => ({
      package_id: r.package_id,
      version: r.version,
      layer: r.layer,
      files: r.files.length,
      signature: r.signature.status,
      dev_waiver: r.signature.dev_waiver,
      installed_at: r.installed_at,
      ledger_anchor: r.ledger_anchor,
    }));
}
