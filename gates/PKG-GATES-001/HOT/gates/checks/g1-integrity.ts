import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Receipt } from '../../kernel/registry/receipt.js';
import type { OwnedFile } from '../../kernel/registry/ownership.js';
import type { Ledger } from '../../kernel/ledger/index.js';
import { defineGate, verdict, type Finding } from '../gate.js';
import { ledgerOf, ownedFilesOf, receiptsOf } from '../root-state.js';

/** G1: owned files hash to their digests; the ownership registry, the receipts and the ledger's install records agree. */
export default defineGate({
  id: 'G1',
  name: 'INTEGRITY',
  describe: 'every owned file hashes to its recorded digest; registry, receipts and ledger INSTALLED records agree',
  run(ctx) {
    const rows = ownedFilesOf(ctx);
    const receipts = receiptsOf(ctx);
    const errors: Finding[] = [...hashFiles(ctx.root, rows), ...registryVsReceipts(rows, receipts)];
    errors.push(...receiptsVsLedger(receipts, ledgerOf(ctx)));
    return verdict(this, errors, `${rows.length} files verified; registry, ${receipts.size} receipts and ledger agree`);
  },
});

function hashFiles(root: string, rows: readonly OwnedFile[]): Finding[] {
  const errors: Finding[] = [];
  for (const row of rows) {
    let data: Buffer;
    try {
      data = readFileSync(join(root, row.path));
    } catch {
      continue; // a missing file is G0's finding
    }
    const digest = `sha256:${createHash('sha256').update(data).digest('hex')}`;
    if (digest !== row.sha256 || data.length !== row.size) {
      errors.push({ code: 'DIGEST_MISMATCH', message: `${row.path} does not match its recorded digest (owned by ${row.package_id})`, path: row.path });
    }
  }
  return errors;
}

function registryVsReceipts(rows: readonly OwnedFile[], receipts: ReadonlyMap<string, Receipt>): Finding[] {
  const errors: Finding[] = [];
  const fromReceipts = new Map<string, string>();
  for (const receipt of receipts.values()) {
    for (const file of receipt.files) fromReceipts.set(file.path, `${receipt.package_id} ${file.sha256} ${file.size}`);
  }
  const fromRegistry = new Map(rows.map((row) => [row.path, `${row.package_id} ${row.sha256} ${row.size}`]));
  for (const [path, value] of fromRegistry) {
    const other = fromReceipts.get(path);
    if (other === undefined) errors.push({ code: 'REGISTRY_WITHOUT_RECEIPT', message: `${path} is in the ownership registry but in no receipt`, path });
    else if (other !== value) errors.push({ code: 'REGISTRY_RECEIPT_MISMATCH', message: `${path}: registry says ${value}, receipt says ${other}`, path });
  }
  for (const path of fromReceipts.keys()) {
    if (!fromRegistry.has(path)) errors.push({ code: 'RECEIPT_WITHOUT_REGISTRY', message: `${path} is in a receipt but not in the ownership registry`, path });
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
        errors.push({ code: 'RECEIPT_LEDGER_MISMATCH', message: `${receipt.package_id}: receipt ${key} ${JSON.stringify(receipt[key])} but ledger ${entry.id} says ${JSON.stringify(md[key])}` });
      }
    }
  }
  return errors;
}
