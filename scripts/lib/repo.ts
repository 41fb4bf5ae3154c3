import { readdirSync, existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository checkout (this file compiles to build/tsc/scripts/lib/repo.js). */
export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');
export const BUILD = join(REPO, 'build');
export const TSC_OUT = join(BUILD, 'tsc');
export const PKG_OUT = join(BUILD, 'pkg');
export const DEV_ROOT = join(BUILD, 'root');

/** Where package sources live: staging/PKG-* and gates/PKG-* (the gate checks ship as a package). */
export const PACKAGE_SOURCE_DIRS = ['staging', 'gates'] as const;

export interface PackageSource {
  id: string;
  /** Repo-relative source directory, e.g. staging/PKG-KERNEL-001. */
  dir: string;
}

export function listPackageSources(repo = REPO): PackageSource[] {
  const out: PackageSource[] = [];
  for (const parent of PACKAGE_SOURCE_DIRS) {
    const abs = join(repo, parent);
    if (!existsSync(abs)) continue;
    for (const name of readdirSync(abs).sort()) {
      if (/^PKG-[A-Z0-9-]+-\d{3}$/.test(name)) out.push({ id: name, dir: `${parent}/${name}` });
    }
  }
  return out;
}
