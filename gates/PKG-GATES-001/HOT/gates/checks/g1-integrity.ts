import { constants } from 'node:buffer';
import { sha256Digest } from '#kernel/canonical.js';
import { quote } from '#kernel/errors.js';
import type { Receipt, ReceiptFile } from '#kernel/registry/receipt.js';
import type { OwnedFile } from '#kernel/registry/ownership.js';
import type { Ledger } from '#kernel/ledger/index.js';
import { defineGate, verdict, type Finding } from '../gate.js';
import { readOwnedFile } from '../owned-file.js';
import { recordedDigestsVsManifests, receiptsVsInstallRecords, transfersAuthorized } from '../provenance.js';
import { ledgerOf, ownedFilesOf, ownedIndexOf, receiptsOf } from '../root-state.js';

/** G1: owned files hash to their digests; the ownership registry, the receipts and the ledger's install records agree. */
export default defineGate({
  id: 'G1',
  name: 'INTEGRITY',
  describe:
    "every owned file hashes to its recorded digest, which its package's installed manifest declares; registry, receipts and ledger install records agree",
  run(ctx) {
    const rows = ownedFilesOf(ctx);
    const receipts = receiptsOf(ctx);
    const errors: Finding[] = [...hashFiles(ctx.root, rows), ...registryVsReceipts(ownedIndexOf(ctx), receipts)];
    errors.push(...receiptsVsLedger(receipts, ledgerOf(ctx)));
    // The recorded digests are only as good as the signed manifest and the install record behind them.
    errors.push(...recordedDigestsVsManifests(ctx), ...receiptsVsInstallRecords(ctx), ...transfersAuthorized(ctx));
    return verdict(this, errors, `${rows.length} files verified; registry, ${receipts.size} receipts and ledger agree`);
  },
});

/**
 * Every owned file's bytes, hashed: the floor of this gate. One reused buffer, sized from the registry plus
 * one byte (a file that grew reads past its size, so no stat is needed), and one-shot SHA-256.
 */
function hashFiles(root: string, rows: readonly OwnedFile[]): Finding[] {
  const errors: Finding[] = [];
  let buffer = Buffer.allocUnsafe(1 << 16);
  for (const row of rows) {
    const mismatch = (): Finding => ({
      code: 'DIGEST_MISMATCH',
      message: `${quote(row.path)} does not match its recorded digest (owned by ${row.package_id})`,
      path: row.path,
    });
    // A size no buffer can hold (a damaged registry row) matches no file this gate could read.
    if (!Number.isSafeInteger(row.size) || row.size < 0 || row.size >= constants.MAX_LENGTH) {
      errors.push(mismatch());
      continue;
    }
    if (buffer.length <= row.size) buffer = Buffer.allocUnsafe(row.size + 1);
    const length = readOwnedFile(root, row.path, buffer, row.size + 1);
    if (length === 'missing') continue; // G0's finding
    if (typeof length !== 'number') {
      errors.push({
        code: 'OWNED_FILE_UNREADABLE',
        message: `${JSON.stringify(row.path)} (owned by ${row.package_id}) cannot be verified: it is ${length}`,
        path: row.path,
      });
      continue;
    }
    if (length !== row.size || sha256Digest(buffer.subarray(0, length)) !== row.sha256) errors.push(mismatch());
  }
  return errors;
}

function registryVsReceipts(
  registry: ReadonlyMap<string, OwnedFile>,
  receipts: ReadonlyMap<string, Receipt>,
): Finding[] {
  const errors: Finding[] = [];
  const fromReceipts = new Map<string, { package_id: string; file: ReceiptFile }>();
  for (const receipt of receipts.values()) {
    for (const file of receipt.files) fromReceipts.set(file.path, { package_id: receipt.package_id, file });
  }
  for (const [path, row] of registry) {
    const claim = fromReceipts.get(path);
    if (claim === undefined)
      errors.push({
        code: 'REGISTRY_WITHOUT_RECEIPT',
        message: `${quote(path)} is in the ownership registry but in no receipt`,
        path,
      });
    else if (claim.package_id !== row.package_id || claim.file.sha256 !== row.sha256 || claim.file.size !== row.size) {
      const receiptSays = `${claim.package_id} ${claim.file.sha256} ${claim.file.size}`;
      errors.push({
        code: 'REGISTRY_RECEIPT_MISMATCH',
        message: `${quote(path)}: registry says ${row.package_id} ${row.sha256} ${row.size}, receipt says ${receiptSays}`,
        path,
      });
    }
  }
  for (const path of fromReceipts.keys()) {
    if (!registry.has(path))
      errors.push({
        code: 'RECEIPT_WITHOUT_REGISTRY',
        message: `${quote(path)} is in a receipt but not in the ownership registry`,
        path,
      });
  }
  return errors;
}

function receiptsVsLedger(receipts: ReadonlyMap<string, Receipt>, ledger: Ledger): Finding[] {
  const errors: Finding[] = [];
  for (const receipt of receipts.values()) {
    const entry = ledger.get(receipt.ledger_entry_id);
    if (!entry) continue; // a missing record is G4's finding
    const md = entry.metadata;
    for (const key of ['version', 'archive_integrity', 'manifest_digest'] as const) {
      if (md[key] !== receipt[key]) {
        errors.push({
          code: 'RECEIPT_LEDGER_MISMATCH',
          message: `${receipt.package_id}: receipt ${key} ${JSON.stringify(receipt[key])} but ledger ${entry.id} says ${JSON.stringify(md[key])}`,
        });
      }
    }
  }
  return errors;
}
