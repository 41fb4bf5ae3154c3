// CP_BOOTSTRAP-<version>.tar.gz: README/INSTALL text, the installer entry, bootstrap.json, the genesis
// installer (genesis/) and packages/.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packArchive, type PackFile } from '../../staging/PKG-KERNEL-001/HOT/kernel/archive/index.js';
import {
  makeBootstrapPlan,
  validateBootstrapPlan,
  type BootstrapPlan,
} from '../../staging/PKG-KERNEL-001/HOT/kernel/manifest/index.js';
import { genesisInstaller } from './genesis-installer.js';
import type { BuiltPackage } from './package.js';
import { ImportReach } from './reach.js';
import { walkFiles } from './source-files.js';

export interface AssembleOptions {
  version: string;
  packages: readonly BuiltPackage[];
  /** bootstrap/text: README.md, INSTALL.md. */
  textDir: string;
  /** build/tsc/bootstrap/entry: the compiled installer entry (absent until the installer exists). */
  entryDir: string;
  outDir: string;
}

export interface AssembledBootstrap {
  path: string;
  file: string;
  integrity: string;
  size: number;
  plan: BootstrapPlan;
  entries: string[];
}

export function bootstrapFileName(version: string): string {
  return `CP_BOOTSTRAP-${version}.tar.gz`;
}

function topLevelFiles(dir: string, keep: (rel: string) => boolean, mode: number): PackFile[] {
  if (!existsSync(dir)) return [];
  return walkFiles(dir, '.', (rel) => !rel.endsWith('/') && !keep(rel)).map((f) => ({
    path: f.path.slice(2),
    data: readFileSync(f.abs),
    mode,
  }));
}

/** install.js and the modules it imports (not whatever else an earlier compile left in the directory). */
function entryFiles(dir: string): PackFile[] {
  const compiled = topLevelFiles(dir, (rel) => rel.endsWith('.js'), 0o755);
  if (!compiled.some((f) => f.path === 'install.js')) return compiled;
  const reached = new ImportReach(new Map(compiled.map((f) => [f.path, f.data]))).from('install.js');
  return compiled.filter((f) => reached.has(f.path));
}

export async function assembleBootstrap(opts: AssembleOptions): Promise<AssembledBootstrap> {
  const genesis = await genesisInstaller(opts.packages.filter((p) => p.manifest.layer === 0));
  const plan = validateBootstrapPlan(
    makeBootstrapPlan(
      opts.version,
      opts.packages.map((p) => ({
        package_id: p.manifest.package_id,
        version: p.manifest.version,
        file: `packages/${p.file}`,
        integrity: p.integrity,
        size: p.size,
        layer: p.manifest.layer,
        dependencies: p.manifest.dependencies,
      })),
      genesis.genesis,
    ),
  );
  const text = topLevelFiles(opts.textDir, (rel) => rel.endsWith('.md'), 0o644);
  const entry = entryFiles(opts.entryDir);
  const files: PackFile[] = [
    ...text,
    ...entry,
    { path: 'bootstrap.json', data: Buffer.from(`${JSON.stringify(plan, null, 2)}\n`) },
    ...genesis.files,
    ...opts.packages.map((p) => ({ path: `packages/${p.file}`, data: readFileSync(p.path) })),
  ];
  const file = bootstrapFileName(opts.version);
  const path = join(opts.outDir, file);
  const { integrity, size } = await packArchive(files, path);
  return { path, file, integrity, size, plan, entries: entry.map((f) => f.path) };
}
