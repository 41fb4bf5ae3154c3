import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import satisfies from 'semver/functions/satisfies.js';
import { CpError, show } from '../errors.js';
import type { Manifest } from '../manifest/manifest.js';
import { foldedPath } from '../manifest/paths.js';
import type { OwnershipRegistry } from '../registry/ownership.js';
import type { Receipt } from '../registry/receipt.js';
import { isGovernedPath, LAYOUT } from '../root/layout.js';

export interface Platform {
  os: string;
  cpu: string;
  node_abi: string;
}

export function currentPlatform(): Platform {
  return { os: process.platform, cpu: process.arch, node_abi: process.versions.modules };
}

/** Assets may only land in governed directories: never in installed/, ledger/ or registries/. */
export function checkAssetPaths(manifest: Manifest): void {
  // Below HOT/ compared case-folded too: on a case-insensitive filesystem HOT/Ledger/ is HOT/ledger/.
  const folded = (path: string): string => (path.startsWith('HOT/') ? `HOT/${foldedPath(path.slice(4))}` : path);
  const bad = manifest.assets
    .map((a) => a.path)
    .filter((path) => !isGovernedPath(path) || !isGovernedPath(folded(path)));
  if (bad.length > 0) {
    throw new CpError(
      'ERR_ASSET_PATH_NOT_GOVERNED',
      `${manifest.package_id} ships ${bad.length} file(s) outside the governed directories: ${show(bad.slice(0, 5))}`,
      {
        hint: 'package files must live under HOT/ and not in HOT/installed, HOT/ledger or HOT/registries',
        details: { paths: bad },
      },
    );
  }
}

/** Step 3: every dependency installed, in range, and on a layer at or below this package's. */
export function checkDependencies(manifest: Manifest, receipts: ReadonlyMap<string, Receipt>): void {
  for (const dep of manifest.dependencies) {
    const installed = receipts.get(dep.package_id);
    if (!installed) {
      throw new CpError(
        'ERR_DEPENDENCY_MISSING',
        `${manifest.package_id} needs ${dep.package_id} ${dep.version}, which is not installed`,
        {
          hint: `install ${dep.package_id} first (bootstrap installs in dependency order)`,
          details: { dependency: dep },
        },
      );
    }
    if (!satisfies(installed.version, dep.version)) {
      throw new CpError(
        'ERR_DEPENDENCY_VERSION',
        `${manifest.package_id} needs ${dep.package_id} ${dep.version}, but ${installed.version} is installed`,
        {
          hint: `upgrade ${dep.package_id} to a version in ${dep.version}`,
          details: { dependency: dep, installed: installed.version },
        },
      );
    }
    if (installed.layer > manifest.layer) {
      throw new CpError(
        'ERR_LAYER_VIOLATION',
        `${manifest.package_id} (layer ${manifest.layer}) depends on ${dep.package_id} (layer ${installed.layer})`,
        {
          hint: 'a package may only depend on packages in its own or a lower layer',
          details: { dependency: dep.package_id, layer: manifest.layer, dependency_layer: installed.layer },
        },
      );
    }
  }
}

/** Upgrade: the new version must stay inside every installed dependent's range. */
export function checkReverseDependencies(manifest: Manifest, receipts: ReadonlyMap<string, Receipt>): void {
  for (const other of receipts.values()) {
    const dep = other.dependencies.find((d) => d.package_id === manifest.package_id);
    if (!dep) continue;
    if (!satisfies(manifest.version, dep.version)) {
      throw new CpError(
        'ERR_REVERSE_DEPENDENCY',
        `${other.package_id} ${other.version} needs ${manifest.package_id} ${dep.version}; ${manifest.version} is outside that range`,
        {
          hint: `upgrade ${other.package_id} first, or pick a version of ${manifest.package_id} in ${dep.version}`,
          details: { dependent: other.package_id, range: dep.version, version: manifest.version },
        },
      );
    }
    if (manifest.layer > other.layer) {
      throw new CpError(
        'ERR_LAYER_VIOLATION',
        `${other.package_id} (layer ${other.layer}) depends on ${manifest.package_id}, which would move to layer ${manifest.layer}`,
        {
          hint: 'a package may only depend on packages in its own or a lower layer',
          details: { dependent: other.package_id },
        },
      );
    }
  }
}

export function checkPlatform(manifest: Manifest, platform: Platform): void {
  const wanted = manifest.platform;
  if (!wanted) return;
  for (const key of ['os', 'cpu', 'node_abi'] as const) {
    const want = wanted[key];
    if (want !== undefined && want !== platform[key]) {
      throw new CpError(
        'ERR_PLATFORM_MISMATCH',
        `${manifest.package_id} is built for ${key} ${show(want)}, this machine has ${show(platform[key])}`,
        {
          hint: 'install the archive built for this platform (rebuild it on this machine)',
          details: { key, wanted: want, actual: platform[key] },
        },
      );
    }
  }
}

/**
 * Parent directories already judged while planning one install (the root does not change meanwhile), so
 * a package of 600 files under one new directory costs one lstat of it rather than 600.
 */
export type ParentMemo = Map<string, 'absent' | 'directory'>;

/**
 * No write may go through a symlink already in the root (a planted `HOT/kernel -> /etc` would turn a
 * rename into a write outside the root), and nothing but a regular file may sit where a file goes.
 */
export function checkTargetPath(root: string, relPath: string, memo: ParentMemo = new Map()): 'absent' | 'file' {
  const parts = relPath.split('/');
  let abs = root;
  let prefix = '';
  for (let i = 0; i < parts.length; i += 1) {
    abs = join(abs, parts[i] as string);
    prefix = i === 0 ? (parts[0] as string) : `${prefix}/${parts[i] as string}`;
    const last = i === parts.length - 1;
    const known = last ? undefined : memo.get(prefix);
    if (known === 'absent') return 'absent';
    if (known === 'directory') continue;
    let stat: import('node:fs').Stats;
    try {
      stat = lstatSync(abs);
    } catch {
      if (!last) memo.set(prefix, 'absent');
      return 'absent';
    }
    if (stat.isSymbolicLink()) {
      throw new CpError(
        'ERR_ROOT_SYMLINK',
        `${show(parts.slice(0, i + 1).join('/'))} in the root is a symlink; refusing to write ${show(relPath)} through it`,
        {
          hint: 'remove the symlink (it is not owned by any package) and retry',
          details: { path: relPath, symlink: parts.slice(0, i + 1).join('/') },
        },
      );
    }
    if (last ? !stat.isFile() : !stat.isDirectory()) {
      throw new CpError(
        'ERR_PATH_CONFLICT',
        `${show(parts.slice(0, i + 1).join('/'))} in the root is not a ${last ? 'regular file' : 'directory'}; cannot install ${show(relPath)}`,
        {
          hint: 'remove the conflicting entry and retry',
          details: { path: relPath },
        },
      );
    }
    if (!last) memo.set(prefix, 'directory');
  }
  return 'file';
}

/** The state directories the commit writes into must be real directories, not symlinks planted in the root. */
export function checkStateDirs(root: string): void {
  for (const rel of [LAYOUT.hot, LAYOUT.installed, LAYOUT.ledgerDir, LAYOUT.registries, LAYOUT.txnDir]) {
    let stat: import('node:fs').Stats;
    try {
      stat = lstatSync(join(root, rel));
    } catch {
      continue;
    }
    if (stat.isSymbolicLink() || !stat.isDirectory()) {
      throw new CpError(
        'ERR_ROOT_SYMLINK',
        `${show(rel)} in the root is ${stat.isSymbolicLink() ? 'a symlink' : 'not a directory'}; refusing to write through it`,
        {
          hint: "restore the root's state directory (it must be a real directory inside the root)",
          details: { path: rel },
        },
      );
    }
  }
}

/**
 * An uninstall or upgrade removes the files its receipt lists. A receipt edited to list a file the ownership
 * registry gives to another package would delete that package's file: refuse it before anything is removed.
 */
export function checkReceiptOwnership(receipt: Receipt, registry: Pick<OwnershipRegistry, 'ownerOf'>): void {
  for (const file of receipt.files) {
    const owner = registry.ownerOf(file.path);
    if (owner !== null && owner !== receipt.package_id) {
      throw new CpError(
        'ERR_RECEIPT_INVALID',
        `the receipt of ${receipt.package_id} lists ${show(file.path)}, which the ownership registry gives to ${owner}; refusing to remove it`,
        {
          hint: 'the root state was edited by hand; run cplane verify, then reinstall the package',
          details: { package_id: receipt.package_id, path: file.path, owner },
        },
      );
    }
  }
}

/**
 * Uninstall and upgrade delete the files a receipt lists, after the journal is written. A directory where
 * an owned file was (put there by hand) cannot be deleted as a file: the commit would stop half-way and
 * every later session's repair with it. Refuse it before the journal, naming the path.
 */
export function checkRemovable(root: string, paths: readonly string[]): void {
  for (const rel of paths) {
    let stat: import('node:fs').Stats;
    try {
      stat = lstatSync(join(root, rel));
    } catch {
      continue;
    }
    if (stat.isDirectory()) {
      throw new CpError(
        'ERR_PATH_CONFLICT',
        `${show(rel)} in the root is a directory, not the file the receipt lists; refusing to remove it`,
        {
          hint: 'move the directory aside (it was not installed by cplane), then retry',
          details: { path: rel },
        },
      );
    }
  }
}
