import { canonicalJson, sha256Digest } from '#kernel/canonical.js';
import { isCpError, quote, show } from '#kernel/errors.js';
import { checkReplaceAuthority } from '#kernel/installer/replace-authority.js';
import type { LedgerEntry } from '#kernel/ledger/index.js';
import type { Manifest } from '#kernel/manifest/index.js';
import { readTrustStore } from '#kernel/signing/index.js';
import type { Receipt } from '#kernel/registry/receipt.js';
import type { GateContext, Finding } from './gate.js';
import { installedJson, ledgerOf, ownedFilesOf, receiptsOf } from './root-state.js';

/*
 * The chain that makes a recorded digest worth anything: trust store → signature (or a dev waiver the
 * hash-chained ledger recorded) → installed manifest → asset digest → bytes. The registry and the receipts
 * are only copies of the manifest's digests; an attacker who edits both to match a swapped file still
 * cannot edit the signed manifest, and a receipt only counts when the installer's own ledger record
 * (same package, txn id and manifest digest, and the package's latest lifecycle record) stands behind it.
 */

const INSTALL_EVENTS = new Set(['INSTALLED', 'PACKAGE_UPGRADED']);
const LIFECYCLE_EVENTS = [...INSTALL_EVENTS, 'PACKAGE_UNINSTALLED'];

type Assets = Map<string, { sha256: string; size: number }>;

/**
 * The installed manifest's assets, by path, when that manifest is the one the receipt pinned (its canonical
 * digest equals the receipt's manifest_digest); null otherwise.
 */
function pinnedAssets(ctx: GateContext, receipt: Receipt): Assets | null {
  const manifest = installedJson(ctx, receipt.package_id, 'manifest.json') as Manifest | undefined;
  if (manifest === undefined || manifest === null || typeof manifest !== 'object' || !Array.isArray(manifest.assets))
    return null;
  let digest: string;
  try {
    digest = sha256Digest(canonicalJson(manifest));
  } catch {
    return null;
  }
  if (digest !== receipt.manifest_digest) return null;
  return new Map(manifest.assets.map((a) => [a.path, { sha256: a.sha256, size: a.size }]));
}

/** G1: every recorded digest (receipt file, registry row) is the digest its package's pinned manifest declares. */
export function recordedDigestsVsManifests(ctx: GateContext): Finding[] {
  const errors: Finding[] = [];
  const receipts = receiptsOf(ctx);
  const assetsOf = new Map<string, Assets | null>();
  for (const receipt of receipts.values()) {
    const assets = pinnedAssets(ctx, receipt);
    assetsOf.set(receipt.package_id, assets);
    if (assets === null) {
      errors.push({
        code: 'MANIFEST_UNPINNED',
        path: `HOT/installed/${receipt.package_id}/manifest.json`,
        message: `${receipt.package_id}: the installed manifest is missing or no longer hashes to the receipt's manifest_digest, so none of its recorded digests can be trusted`,
      });
      continue;
    }
    for (const file of receipt.files) errors.push(...againstManifest(assets, receipt.package_id, file, 'receipt'));
  }
  for (const row of ownedFilesOf(ctx)) {
    const assets = assetsOf.get(row.package_id);
    // No receipt at all is registryVsReceipts' finding; an unpinned manifest was reported above.
    if (assets) errors.push(...againstManifest(assets, row.package_id, row, 'registry'));
  }
  return errors;
}

function againstManifest(
  assets: Assets,
  packageId: string,
  file: { path: string; sha256: string; size: number },
  where: string,
): Finding[] {
  const asset = assets.get(file.path);
  if (!asset) {
    return [
      {
        code: 'NOT_IN_MANIFEST',
        path: file.path,
        message: `${quote(file.path)}: the ${where} says ${packageId} owns it, but ${packageId}'s manifest does not ship it`,
      },
    ];
  }
  if (asset.sha256 !== file.sha256 || asset.size !== file.size) {
    return [
      {
        code: 'DIGEST_NOT_SIGNED',
        path: file.path,
        message: `${quote(file.path)}: the ${where} records ${file.sha256} ${file.size}, ${packageId}'s manifest declares ${asset.sha256} ${asset.size}`,
      },
    ];
  }
  return [];
}

/** Every INSTALLED / PACKAGE_UPGRADED / PACKAGE_UNINSTALLED record, oldest first, grouped by package. */
function lifecycleRecords(ctx: GateContext): Map<string, LedgerEntry[]> {
  const ledger = ledgerOf(ctx);
  const byPackage = new Map<string, LedgerEntry[]>();
  const all = LIFECYCLE_EVENTS.flatMap((event_type) => ledger.query({ event_type, order: 'oldest' }));
  const seq = ledger.db.prepare('SELECT seq FROM entries WHERE id = ?').pluck();
  const position = new Map(all.map((e) => [e.id, seq.get(e.id) as number]));
  all.sort((a, b) => (position.get(a.id) as number) - (position.get(b.id) as number));
  for (const entry of all) {
    const list = byPackage.get(entry.submission_id) ?? [];
    list.push(entry);
    byPackage.set(entry.submission_id, list);
  }
  return byPackage;
}

/**
 * G1: each receipt is backed by the installer's record of that very install — the package's latest
 * lifecycle record, carrying the receipt's txn id, manifest digest and signature verdict — and every package
 * the ledger says is installed has a receipt. A receipt copied in by hand, or restored after an uninstall
 * or an upgrade, has no such record.
 */
export function receiptsVsInstallRecords(ctx: GateContext): Finding[] {
  const errors: Finding[] = [];
  const receipts = receiptsOf(ctx);
  const records = lifecycleRecords(ctx);
  for (const receipt of receipts.values()) {
    const latest = records.get(receipt.package_id)?.at(-1);
    const problem = installRecordProblem(receipt, latest);
    if (problem) {
      errors.push({
        code: 'RECEIPT_NOT_INSTALLED',
        path: `HOT/installed/${receipt.package_id}/receipt.json`,
        message: `${receipt.package_id}: ${problem}`,
      });
    }
  }
  for (const [packageId, list] of records) {
    const latest = list.at(-1) as LedgerEntry;
    if (INSTALL_EVENTS.has(latest.event_type) && !receipts.has(packageId)) {
      errors.push({
        code: 'INSTALLED_WITHOUT_RECEIPT',
        message: `${packageId}: the ledger's ${latest.event_type} record ${latest.id} says it is installed, but it has no receipt`,
      });
    }
  }
  return errors;
}

function installRecordProblem(receipt: Receipt, latest: LedgerEntry | undefined): string | null {
  if (!latest) return 'the ledger has no INSTALLED or PACKAGE_UPGRADED record for it';
  if (!INSTALL_EVENTS.has(latest.event_type)) return `its latest lifecycle record ${latest.id} is ${latest.event_type}`;
  if (latest.id !== receipt.ledger_entry_id)
    return `the receipt names record ${show(receipt.ledger_entry_id)}, but its latest install record is ${latest.id}`;
  const md = latest.metadata;
  const expected: Record<string, unknown> = {
    txn_id: receipt.txn_id,
    manifest_digest: receipt.manifest_digest,
    version: receipt.version,
    dev_waiver: receipt.signature.dev_waiver,
    key_id: receipt.signature.key_id,
  };
  for (const [key, value] of Object.entries(expected)) {
    if (md[key] !== value) return `receipt ${key} ${show(value)} but install record ${latest.id} says ${show(md[key])}`;
  }
  return null;
}

/**
 * G5: a dev waiver counts only when the install record the receipt names (same package, txn id and manifest
 * digest) recorded it; a waiver written into a receipt alone is a forgery.
 */
export function waiverRecorded(ctx: GateContext, receipt: Receipt): boolean {
  const entry = ledgerOf(ctx).get(receipt.ledger_entry_id);
  if (!entry || !INSTALL_EVENTS.has(entry.event_type) || entry.submission_id !== receipt.package_id) return false;
  const md = entry.metadata;
  return md.dev_waiver === true && md.txn_id === receipt.txn_id && md.manifest_digest === receipt.manifest_digest;
}

/**
 * G1: every file a receipt records as taken over went to a package with the authority the installer demands
 * (the same publisher key, or a trusted key whose `may_replace` names the old owner; never from a lower
 * layer), judged against the trust store as it is now.
 */
export function transfersAuthorized(ctx: GateContext): Finding[] {
  const errors: Finding[] = [];
  const receipts = receiptsOf(ctx);
  const trusted = readTrustStore(ctx.root);
  for (const from of receipts.values()) {
    for (const out of from.transferred_out) {
      const to = receipts.get(out.to_package);
      if (!to) continue; // a file owned by no receipt is registryVsReceipts' finding
      const transfer = { txn_id: out.txn_id, path: out.path, from_package: from.package_id, to_package: to.package_id };
      try {
        checkReplaceAuthority(
          { package_id: to.package_id, layer: to.layer } as Manifest,
          to.signature,
          [transfer],
          receipts,
          trusted,
        );
      } catch (error) {
        // Only the authority's refusals are findings; anything else is the gate's crash, never a finding.
        const refused = isCpError(error) ? error.code : null;
        if (refused !== 'ERR_REPLACE_LOWER_LAYER' && refused !== 'ERR_REPLACE_UNAUTHORIZED') throw error;
        const code = refused === 'ERR_REPLACE_LOWER_LAYER' ? 'TRANSFER_FROM_LOWER_LAYER' : 'TRANSFER_UNAUTHORIZED';
        errors.push({
          code,
          path: out.path,
          message: `${quote(out.path)} taken over by ${to.package_id} from ${from.package_id}: ${(error as Error).message}`,
        });
      }
    }
  }
  return errors;
}
