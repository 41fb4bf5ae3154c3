// One package: layout tree (+ runtime files) → classified, hashed assets → manifest(.json) → signature → archive.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packArchive, type PackFile } from '../../staging/PKG-KERNEL-001/HOT/kernel/archive/index.js';
import { canonicalJson, sha256Digest } from '../../staging/PKG-KERNEL-001/HOT/kernel/canonical.js';
import {
  validateManifest,
  type Manifest,
  type ManifestAsset,
} from '../../staging/PKG-KERNEL-001/HOT/kernel/manifest/index.js';
import { signManifest, type PackageSignature } from '../../staging/PKG-KERNEL-001/HOT/kernel/signing/index.js';
import { classify } from './classify.js';
import { runtimeFiles, runtimePlatform } from './runtime.js';
import { walkFiles, type SourceFile } from './source-files.js';
import { readTemplate, type PackageTemplate } from './template.js';

export interface BuiltPackage {
  manifest: Manifest;
  /** Archive file name, `<package_id>-<version>.tar.gz`. */
  file: string;
  path: string;
  integrity: string;
  size: number;
  signature: PackageSignature | null;
}

export function archiveFileName(manifest: Pick<Manifest, 'package_id' | 'version'>): string {
  return `${manifest.package_id}-${manifest.version}.tar.gz`;
}

function byPath<T extends { path: string }>(a: T, b: T): number {
  return a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
}

/** Manifest fields in a fixed order, so manifest.json has the same bytes every build. */
function composeManifest(template: PackageTemplate, assets: ManifestAsset[]): Manifest {
  const f = template.fields;
  const platform = template.runtimeFromLockfile ? runtimePlatform() : f.platform;
  return {
    package_id: f.package_id,
    version: f.version,
    schema_version: f.schema_version,
    title: f.title,
    description: f.description,
    layer: f.layer,
    plane_id: f.plane_id,
    dependencies: f.dependencies,
    replaces: f.replaces,
    ...(platform === undefined ? {} : { platform }),
    assets,
  };
}

export interface BuildPackageOptions {
  repo: string;
  /** The package source, e.g. REPO/staging/PKG-KERNEL-001 (holds manifest.template.json). */
  sourceDir: string;
  /** The laid-out package tree, build/pkg/<PKG>/ (its HOT/ holds compiled code and data files). */
  pkgDir: string;
  outDir: string;
  signingKeyPem: string | null;
}

export function packageSourceFiles(pkgDir: string, template: PackageTemplate, repo: string): SourceFile[] {
  const hot = join(pkgDir, 'HOT');
  const files = existsSync(hot) ? walkFiles(hot, 'HOT') : [];
  if (template.runtimeFromLockfile) files.push(...runtimeFiles(repo));
  return files.sort(byPath);
}

export async function buildPackage(opts: BuildPackageOptions): Promise<BuiltPackage> {
  const template = readTemplate(join(opts.sourceDir, 'manifest.template.json'));
  const packFiles: PackFile[] = [];
  const assets: ManifestAsset[] = [];
  for (const source of packageSourceFiles(opts.pkgDir, template, opts.repo)) {
    const data = readFileSync(source.abs);
    packFiles.push({ path: source.path, data });
    assets.push({
      path: source.path,
      sha256: sha256Digest(data),
      size: data.length,
      classification: classify(source.path, template.rules, template.fields.package_id),
    });
  }
  const { manifest } = validateManifest(composeManifest(template, assets));
  // Keys in canonical order (still indented for people): every reader that canonicalises the parsed manifest
  // (signature checks, G5, the installer's digest) then takes canonicalJson's single-stringify path.
  const sorted = JSON.parse(canonicalJson(manifest)) as Manifest;
  packFiles.push({ path: 'manifest.json', data: Buffer.from(`${JSON.stringify(sorted, null, 2)}\n`) });
  const signature = opts.signingKeyPem === null ? null : signManifest(manifest, opts.signingKeyPem);
  if (signature)
    packFiles.push({ path: 'signature.json', data: Buffer.from(`${JSON.stringify(signature, null, 2)}\n`) });
  const file = archiveFileName(manifest);
  const path = join(opts.outDir, file);
  const { integrity, size } = await packArchive(packFiles, path);
  return { manifest, file, path, integrity, size, signature };
}
