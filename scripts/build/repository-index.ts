// packages/index.json: what the local archive repository holds (no timestamps: same build, same bytes).
import { join } from 'node:path';
import { writeFileAtomic } from '../../staging/PKG-KERNEL-001/HOT/kernel/atomic.js';
import type { ManifestDependency } from '../../staging/PKG-KERNEL-001/HOT/kernel/manifest/index.js';
import type { BuiltPackage } from './package.js';

export interface IndexEntry {
  package_id: string;
  version: string;
  file: string;
  integrity: string;
  size: number;
  layer: number;
  dependencies: ManifestDependency[];
  signed_by: string | null;
}

export function indexEntries(built: readonly BuiltPackage[]): IndexEntry[] {
  return [...built]
    .sort((a, b) => (a.manifest.package_id < b.manifest.package_id ? -1 : 1))
    .map((p) => ({
      package_id: p.manifest.package_id,
      version: p.manifest.version,
      file: p.file,
      integrity: p.integrity,
      size: p.size,
      layer: p.manifest.layer,
      dependencies: p.manifest.dependencies,
      signed_by: p.signature?.key_id ?? null,
    }));
}

export function writeIndex(outDir: string, built: readonly BuiltPackage[]): string {
  const path = join(outDir, 'index.json');
  writeFileAtomic(path, `${JSON.stringify({ schema_version: '1.0', packages: indexEntries(built) }, null, 2)}\n`);
  return path;
}
