// Lays out compiled packages: build/pkg/<PKG>/ (one tree per package, ready to pack) and
// build/root/ (all packages merged: the dev root the repository's CLI and tests run from).
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { DEV_ROOT, PKG_OUT, REPO, TSC_OUT, listPackageSources, type PackageSource } from '../lib/repo.js';

/** Source files that are compiled (their .js comes from tsc) rather than copied. */
function isCompiledSource(path: string): boolean {
  return path.endsWith('.ts') && !path.endsWith('.d.ts');
}

function* walk(dir: string): Generator<string> {
  for (const name of readdirSync(dir).sort()) {
    const abs = join(dir, name);
    if (statSync(abs).isDirectory()) yield* walk(abs);
    else yield abs;
  }
}

function place(from: string, to: string): void {
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(from, to);
}

export function layoutPackage(pkg: PackageSource): string[] {
  const srcHot = join(REPO, pkg.dir, 'HOT');
  const outDir = join(PKG_OUT, pkg.id);
  const files: string[] = [];
  if (!existsSync(srcHot)) return files;
  for (const abs of walk(srcHot)) {
    const rel = relative(join(REPO, pkg.dir), abs);
    if (isCompiledSource(rel)) {
      const js = rel.replace(/\.ts$/, '.js');
      place(join(TSC_OUT, pkg.dir, js), join(outDir, js));
      files.push(js);
    } else {
      place(abs, join(outDir, rel));
      files.push(rel);
    }
  }
  for (const extra of ['manifest.template.json']) {
    const abs = join(REPO, pkg.dir, extra);
    if (existsSync(abs)) place(abs, join(outDir, extra));
  }
  return files;
}

export function layoutAll(): { packages: number; files: number } {
  rmSync(PKG_OUT, { recursive: true, force: true });
  rmSync(DEV_ROOT, { recursive: true, force: true });
  let files = 0;
  const sources = listPackageSources();
  for (const pkg of sources) {
    for (const rel of layoutPackage(pkg)) {
      place(join(PKG_OUT, pkg.id, rel), join(DEV_ROOT, rel));
      files += 1;
    }
  }
  return { packages: sources.length, files };
}
