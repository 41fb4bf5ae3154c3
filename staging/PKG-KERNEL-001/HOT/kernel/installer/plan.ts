import { basename } from 'node:path';
import semverLt from 'semver/functions/lt.js';
import type { PackageArchive } from '../archive/read.js';
import { canonicalJson, sha256Digest } from '../canonical.js';
import { CpError, show } from '../errors.js';
import type { OwnershipRegistry, OwnershipTransfer } from '../registry/ownership.js';
import type { Receipt, ReceiptFile } from '../registry/receipt.js';
import { checkSignature, type TrustedKey } from '../signing/index.js';
import {
  checkAssetPaths,
  checkDependencies,
  checkPlatform,
  checkReceiptOwnership,
  checkRemovable,
  checkReverseDependencies,
  checkStateDirs,
  checkTargetPath,
  type ParentMemo,
  type Platform,
} from './checks.js';
import { checkNoDependencyCycle } from './dependency-cycle.js';
import type { Journal } from './journal.js';
import { checkReplaceAuthority, checkUpgradeAuthority } from './replace-authority.js';
import { checkResolutionFiles } from './resolution-files.js';

export interface PlanOptions {
  mode: 'install' | 'upgrade';
  expectId?: string | undefined;
  dev?: boolean | undefined;
  allowDowngrade?: boolean | undefined;
  platform: Platform;
  archivePath: string;
  txnId: string;
  now: string;
}

export interface RootState {
  root: string;
  receipts: ReadonlyMap<string, Receipt>;
  registry: OwnershipRegistry;
  trusted: TrustedKey[];
}

export type InstallPlan =
  | { kind: 'noop'; package_id: string; version: string }
  | { kind: 'install' | 'upgrade'; package_id: string; version: string; previous: Receipt | null; journal: Journal };

/** Steps 1–5 of SPEC §3.5: every check, no writes. Returns the journal the commit will apply. */
export function planInstall(archive: PackageArchive, state: RootState, opts: PlanOptions): InstallPlan {
  const { manifest } = archive;
  const id = manifest.package_id;
  if (opts.expectId !== undefined && opts.expectId !== id) {
    throw new CpError(
      'ERR_PACKAGE_ID_MISMATCH',
      `--id ${show(opts.expectId)} does not match the archive's package_id ${show(id)}`,
      {
        hint: 'check that you picked the right archive',
        details: { expected: opts.expectId, package_id: id },
      },
    );
  }
  const manifestDigest = sha256Digest(canonicalJson(manifest));
  const previous = state.receipts.get(id) ?? null;
  const verdict = checkVersion(previous, manifest.version, manifestDigest, opts);
  if (verdict === 'noop') return { kind: 'noop', package_id: id, version: manifest.version };
  checkAssetPaths(manifest);
  checkResolutionFiles(manifest);
  checkStateDirs(state.root);
  checkDependencies(manifest, state.receipts);
  checkNoDependencyCycle(manifest, state.receipts);
  if (previous) checkReverseDependencies(manifest, state.receipts);
  checkPlatform(manifest, opts.platform);
  const { transfers, updated } = checkOwnership(archive, state, opts.txnId);
  const signature = checkSignatureStep(archive, state.trusted, opts.dev ?? false);
  checkReplaceAuthority(manifest, signature, transfers, state.receipts, state.trusted);
  if (previous) checkUpgradeAuthority(previous, signature, state.trusted);
  if (previous) checkReceiptOwnership(previous, state.registry);

  const newPaths = new Set(manifest.assets.map((a) => a.path));
  const owned: ReceiptFile[] = manifest.assets
    .map((a) => ({ path: a.path, sha256: a.sha256, size: a.size, classification: a.classification }))
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const remove = (previous?.files ?? []).map((f) => f.path).filter((path) => !newPaths.has(path));
  checkRemovable(state.root, remove);
  const kind = previous ? 'upgrade' : 'install';
  const ledgerMeta: Record<string, unknown> = {
    package_id: id,
    version: manifest.version,
    layer: manifest.layer,
    archive_integrity: archive.integrity,
    manifest_digest: manifestDigest,
    files: owned.length,
    signature_status: signature.status,
    key_id: signature.key_id,
    dev_waiver: signature.dev_waiver,
    transfers: transfers.map((t) => ({ path: t.path, from_package: t.from_package })),
  };
  if (previous)
    Object.assign(ledgerMeta, {
      from_version: previous.version,
      to_version: manifest.version,
      removed_files: remove.length,
    });
  const installedMeta: Record<string, string> = { 'manifest.json': archive.manifestBytes.toString('utf8') };
  if (archive.signature) installedMeta['signature.json'] = `${JSON.stringify(archive.signature, null, 2)}\n`;
  const journal: Journal = {
    journal_version: 1,
    txn_id: opts.txnId,
    kind,
    package_id: id,
    staging_dir: `HOT/registries/txn/${opts.txnId}`,
    place: owned.map(({ path, sha256, size }) => ({ path, sha256, size })),
    remove,
    owned,
    transfers,
    installed_meta: installedMeta,
    updated_receipts: updated,
    receipt: {
      receipt_version: 1,
      package_id: id,
      version: manifest.version,
      layer: manifest.layer,
      dependencies: manifest.dependencies.map((d) => ({ package_id: d.package_id, version: d.version })),
      replaces: [...manifest.replaces],
      archive_file: basename(opts.archivePath),
      archive_integrity: archive.integrity,
      manifest_digest: manifestDigest,
      files: owned,
      transferred_out: [],
      signature,
      installed_at: opts.now,
      previous_version: previous?.version ?? null,
      txn_id: opts.txnId,
    },
    ledger: previous
      ? {
          event_type: 'PACKAGE_UPGRADED',
          decision: 'SUCCESS',
          reason: `upgraded ${id} ${previous.version} -> ${manifest.version}`,
          metadata: ledgerMeta,
        }
      : {
          event_type: 'INSTALLED',
          decision: 'SUCCESS',
          reason: `installed ${id} ${manifest.version}`,
          metadata: ledgerMeta,
        },
  };
  return { kind, package_id: id, version: manifest.version, previous, journal };
}

function checkVersion(
  previous: Receipt | null,
  version: string,
  manifestDigest: string,
  opts: PlanOptions,
): 'noop' | 'go' {
  if (!previous) {
    if (opts.mode === 'upgrade') {
      throw new CpError(
        'ERR_NOT_INSTALLED',
        `cannot upgrade: no version of the package is installed (archive has ${version})`,
        {
          hint: 'use cplane install for a package that is not installed yet',
          details: { version },
        },
      );
    }
    return 'go';
  }
  const id = previous.package_id;
  if (previous.version === version) {
    if (previous.manifest_digest !== manifestDigest) {
      throw new CpError(
        'ERR_VERSION_CONTENT_MISMATCH',
        `${id} ${version} is installed with different contents (manifest ${previous.manifest_digest}, archive ${manifestDigest})`,
        {
          hint: 'a version must never be rebuilt with different contents; bump the version',
          details: { package_id: id, version },
        },
      );
    }
    return 'noop';
  }
  if (opts.mode === 'install') {
    throw new CpError('ERR_ALREADY_INSTALLED', `${id} ${previous.version} is installed; the archive has ${version}`, {
      hint: `use cplane upgrade to move ${id} to ${version}`,
      details: { package_id: id, installed: previous.version, version },
    });
  }
  if (semverLt(version, previous.version) && !opts.allowDowngrade) {
    throw new CpError('ERR_DOWNGRADE', `${id} ${version} is older than the installed ${previous.version}`, {
      hint: 'pass --allow-downgrade to install an older version on purpose',
      details: { package_id: id, installed: previous.version, version },
    });
  }
  return 'go';
}

/** Step 4: only `replaces` moves ownership; a dependency is not permission to overwrite. */
function checkOwnership(
  archive: PackageArchive,
  state: RootState,
  txnId: string,
): { transfers: OwnershipTransfer[]; updated: Receipt[] } {
  const { manifest } = archive;
  const id = manifest.package_id;
  const transfers: OwnershipTransfer[] = [];
  const parents: ParentMemo = new Map();
  for (const asset of manifest.assets) {
    const owner = state.registry.ownerOf(asset.path);
    const onDisk = checkTargetPath(state.root, asset.path, parents);
    if (owner === null) {
      if (onDisk === 'file') {
        throw new CpError(
          'ERR_PATH_CONFLICT',
          `${show(asset.path)} already exists in the root but no package owns it`,
          {
            hint: 'an unowned file is in the way; remove it (it was not installed by cplane) and retry',
            details: { path: asset.path },
          },
        );
      }
    } else if (owner !== id) {
      if (!manifest.replaces.includes(owner)) {
        throw new CpError('ERR_OWNERSHIP_CONFLICT', `${id} ships ${show(asset.path)}, which is owned by ${owner}`, {
          hint: `only a package that lists ${owner} in "replaces" may take over its files (a dependency is not permission)`,
          details: { path: asset.path, owner, package_id: id },
        });
      }
      transfers.push({ txn_id: txnId, path: asset.path, from_package: owner, to_package: id });
    }
  }
  const updated: Receipt[] = [];
  for (const owner of new Set(transfers.map((t) => t.from_package))) {
    const receipt = state.receipts.get(owner);
    if (!receipt) continue;
    const moved = new Set(transfers.filter((t) => t.from_package === owner).map((t) => t.path));
    updated.push({
      ...receipt,
      files: receipt.files.filter((f) => !moved.has(f.path)),
      transferred_out: [
        ...receipt.transferred_out,
        ...[...moved].map((path) => ({ path, to_package: id, txn_id: txnId })),
      ],
    });
  }
  return { transfers, updated };
}

function checkSignatureStep(archive: PackageArchive, trusted: TrustedKey[], dev: boolean): Receipt['signature'] {
  const { status, key_id } = checkSignature(archive, trusted);
  if (status === 'valid') return { status, key_id, dev_waiver: false };
  if (dev) return { status, key_id, dev_waiver: true };
  const id = archive.manifest.package_id;
  const codes = {
    unsigned: 'ERR_SIGNATURE_MISSING',
    invalid: 'ERR_SIGNATURE_INVALID',
    untrusted_key: 'ERR_SIGNATURE_UNTRUSTED',
  } as const;
  const messages = {
    unsigned: `${id} is not signed`,
    invalid: `${id}'s signature does not match its manifest (key ${key_id ?? 'unknown'})`,
    untrusted_key: `${id} is signed by ${key_id ?? 'an unknown key'}, which this root does not trust`,
  } as const;
  throw new CpError(codes[status], messages[status], {
    hint:
      status === 'untrusted_key'
        ? 'trust the publisher key with cplane keys trust --root R KEY.pub, or pass --dev to waive (recorded)'
        : 'use a signed archive, or pass --dev to waive the check (the waiver is recorded in the ledger and the receipt)',
    details: { package_id: id, status, key_id },
  });
}
