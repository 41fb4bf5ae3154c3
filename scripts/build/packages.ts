// `cplane build`: every laid-out package → packages/<PKG>-<version>.tar.gz + index.json, then CP_BOOTSTRAP.
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { CpError, show } from '../../staging/PKG-KERNEL-001/HOT/kernel/errors.js';
import { signingKeyId } from '../../staging/PKG-KERNEL-001/HOT/kernel/signing/index.js';
import { listPackageSources } from '../lib/repo.js';
import { assembleBootstrap, type AssembledBootstrap } from './bootstrap.js';
import { buildPackage, type BuiltPackage } from './package.js';
import { writeIndex } from './repository-index.js';

export interface BuildPackagesOptions {
  repo: string;
  /** Where archives and index.json go (default REPO/packages). */
  outDir: string;
  /** Where CP_BOOTSTRAP goes (default REPO/bootstrap). */
  bootstrapDir: string;
  signingKeyPem: string | null;
  log?: (line: string) => void;
}

export interface BuildPackagesResult {
  packages: BuiltPackage[];
  skipped: string[];
  index: string;
  bootstrap: AssembledBootstrap;
}

const ARCHIVE_NAME = /^PKG-[A-Z0-9-]+-\d{3}-.+\.tar\.gz$/;

/** Archives of earlier builds that this build did not write (another version) would mislead a reader of the directory. */
function removeStale(outDir: string, keep: ReadonlySet<string>): void {
  for (const name of readdirSync(outDir)) if (ARCHIVE_NAME.test(name) && !keep.has(name)) rmSync(join(outDir, name));
}

export function repoVersion(repo: string): string {
  const version = (JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { version?: unknown }).version;
  if (typeof version !== 'string')
    throw new CpError('ERR_BUILD_VERSION', `package.json has no version (${show(version)})`, {
      hint: 'the bootstrap version comes from the repository package.json',
    });
  return version;
}

export async function buildPackages(opts: BuildPackagesOptions): Promise<BuildPackagesResult> {
  const log = opts.log ?? (() => {});
  const pkgRoot = join(opts.repo, 'build', 'pkg');
  if (!existsSync(pkgRoot))
    throw new CpError('ERR_NOT_BUILT', `no laid-out packages at ${show(pkgRoot)}`, {
      hint: 'run `npm run build` first',
    });
  if (opts.signingKeyPem !== null) log(`build: signing with ${signingKeyId(opts.signingKeyPem)}`);
  mkdirSync(opts.outDir, { recursive: true });
  mkdirSync(opts.bootstrapDir, { recursive: true });
  const packages: BuiltPackage[] = [];
  const skipped: string[] = [];
  for (const source of listPackageSources(opts.repo)) {
    const pkgDir = join(pkgRoot, source.id);
    const sourceDir = join(opts.repo, source.dir);
    if (!existsSync(join(sourceDir, 'manifest.template.json'))) {
      skipped.push(source.id);
      log(`build: ${source.id}: no manifest.template.json, not packaged`);
      continue;
    }
    const started = Date.now();
    const built = await buildPackage({
      repo: opts.repo,
      sourceDir,
      pkgDir,
      outDir: opts.outDir,
      signingKeyPem: opts.signingKeyPem,
    });
    packages.push(built);
    log(
      `build: ${built.file} ${built.manifest.assets.length} files ${built.size} bytes ${built.signature ? `signed ${built.signature.key_id}` : 'unsigned'} (${Date.now() - started} ms)`,
    );
  }
  removeStale(opts.outDir, new Set(packages.map((p) => p.file)));
  const index = writeIndex(opts.outDir, packages);
  const bootstrap = await assembleBootstrap({
    version: repoVersion(opts.repo),
    packages,
    textDir: join(opts.repo, 'bootstrap', 'text'),
    entryDir: join(opts.repo, 'build', 'tsc', 'bootstrap', 'entry'),
    outDir: opts.bootstrapDir,
  });
  log(`build: ${bootstrap.file} ${bootstrap.size} bytes, install order ${bootstrap.plan.install_order.join(' → ')}`);
  return { packages, skipped, index, bootstrap };
}
