// bootstrap.json, read and checked before anything else happens.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BootstrapError } from './errors.js';
import { pinnedSha512, sri512 } from './sri.js';

export interface BootstrapPackage {
  package_id: string;
  version: string;
  layer: number;
  /** The archive's file name inside packages/. */
  file: string;
  integrity: string;
}

/** One file of the genesis installer, shipped at `genesis/<path>`. */
export interface GenesisFile {
  path: string;
  sha256: string;
  size: number;
}

export interface BootstrapPlan {
  bootstrap_version: string;
  /** Packages in install order. */
  packages: BootstrapPackage[];
  /** The layer-0 kernel's installer module (a root-relative path) and every file it loads. */
  genesis: { entry: string; files: GenesisFile[] };
}

function fail(message: string): never {
  throw new BootstrapError('ERR_BOOTSTRAP_INVALID', message);
}

/** `sha256:<hex>`, the digest form bootstrap.json pins. */
export const sha256 = (data: Buffer): string => `sha256:${createHash('sha256').update(data).digest('hex')}`;

/** A path under HOT/ made of ordinary segments: nothing it names can lie outside genesis/. */
function isSafeGenesisPath(path: string): boolean {
  const parts = path.split('/');
  return (
    parts[0] === 'HOT' &&
    parts.length > 1 &&
    !/[\\\0]/.test(path) &&
    parts.every((p) => p !== '' && p !== '.' && p !== '..')
  );
}

function parseGenesis(value: unknown): BootstrapPlan['genesis'] {
  const { entry, files } = (value ?? {}) as Record<string, unknown>;
  if (typeof entry !== 'string' || !Array.isArray(files)) fail('bootstrap.json has no genesis section (entry, files)');
  const parsed = (files as Record<string, unknown>[]).map((item) => {
    const { path, sha256: digest, size } = item ?? {};
    if (
      typeof path !== 'string' ||
      typeof digest !== 'string' ||
      typeof size !== 'number' ||
      !isSafeGenesisPath(path)
    ) {
      fail(`bootstrap.json has a malformed or unsafe genesis file ${JSON.stringify(item).slice(0, 200)}`);
    }
    return { path, sha256: digest, size };
  });
  if (!parsed.some((f) => f.path === entry))
    fail(`bootstrap.json's genesis entry ${JSON.stringify(entry)} is not one of its genesis files`);
  return { entry, files: parsed };
}

/** Parse bootstrap.json: `packages` (file, integrity, layer, …), `install_order` (package ids) and `genesis`. */
export function readBootstrapPlan(dir: string): BootstrapPlan {
  let value: Record<string, unknown>;
  try {
    value = JSON.parse(readFileSync(join(dir, 'bootstrap.json'), 'utf8')) as Record<string, unknown>;
  } catch (cause) {
    fail(`cannot read ${join(dir, 'bootstrap.json')}: ${cause instanceof Error ? cause.message : String(cause)}`);
  }
  const list = value.packages;
  if (!Array.isArray(list)) fail('bootstrap.json has no packages array');
  const byId = new Map<string, BootstrapPackage>();
  for (const item of list as Record<string, unknown>[]) {
    const { package_id: id, version, layer, file, integrity } = item ?? {};
    if (
      typeof id !== 'string' ||
      typeof version !== 'string' ||
      typeof layer !== 'number' ||
      typeof file !== 'string' ||
      typeof integrity !== 'string'
    ) {
      fail(`bootstrap.json has a malformed package entry ${JSON.stringify(item).slice(0, 200)}`);
    }
    // `file` is relative to CP_BOOTSTRAP's top level and must name an archive directly inside packages/.
    const name = file.startsWith('packages/') ? file.slice('packages/'.length) : file;
    if (name.includes('/') || name.includes('\\') || name.startsWith('.') || !name.endsWith('.tar.gz'))
      fail(`bootstrap.json names an unsafe archive file ${JSON.stringify(file)}`);
    pinnedSha512(integrity, `${id} (${JSON.stringify(file)})`);
    byId.set(id, { package_id: id, version, layer, file: name, integrity });
  }
  const order = Array.isArray(value.install_order) ? (value.install_order as unknown[]) : [...byId.keys()];
  const packages = order.map(
    (id) => byId.get(String(id)) ?? fail(`install_order names ${JSON.stringify(id)}, which is not in packages`),
  );
  if (packages.length !== byId.size) fail('install_order does not list every package exactly once');
  return {
    bootstrap_version: String(value.bootstrap_version ?? 'unknown'),
    packages,
    genesis: parseGenesis(value.genesis),
  };
}

/** Every archive must match the SRI bootstrap.json pins (its sha512), before any of them is used. */
export function checkArchives(dir: string, plan: BootstrapPlan): void {
  for (const pkg of plan.packages) {
    let data: Buffer;
    try {
      data = readFileSync(join(dir, 'packages', pkg.file));
    } catch {
      throw new BootstrapError(
        'ERR_BOOTSTRAP_ARCHIVE_MISSING',
        `${pkg.package_id}: archive packages/${pkg.file} is missing`,
      );
    }
    const expected = pinnedSha512(pkg.integrity, pkg.package_id);
    const actual = sri512(data);
    if (actual !== expected) {
      throw new BootstrapError(
        'ERR_BOOTSTRAP_INTEGRITY',
        `${pkg.package_id}: packages/${pkg.file} has integrity ${actual}, bootstrap.json pins ${expected}`,
      );
    }
  }
}
