// PKG-RUNTIME-001's files: the lockfile's production dependencies, copied from node_modules into
// HOT/node_modules/, without what a root never loads.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CpError } from '../../staging/PKG-KERNEL-001/HOT/kernel/errors.js';
import { walkFiles, type SourceFile } from './source-files.js';

interface LockEntry {
  dev?: boolean;
  optional?: boolean;
  devOptional?: boolean;
  link?: boolean;
}

/** Lockfile paths (`node_modules/a`, `node_modules/a/node_modules/b`) of production packages. */
export function productionPackages(repo: string): Array<[string, LockEntry]> {
  const lockPath = join(repo, 'package-lock.json');
  let lock: { lockfileVersion?: number; packages?: Record<string, LockEntry> };
  try {
    lock = JSON.parse(readFileSync(lockPath, 'utf8')) as typeof lock;
  } catch (error) {
    throw new CpError('ERR_BUILD_LOCKFILE', `cannot read ${lockPath}: ${(error as Error).message}`, {
      hint: 'the runtime package is built from package-lock.json (lockfileVersion ≥ 2); run `npm install` to create it',
      cause: error,
    });
  }
  if (!lock.packages)
    throw new CpError(
      'ERR_BUILD_LOCKFILE',
      `${lockPath} has no "packages" map (lockfileVersion ${String(lock.lockfileVersion)})`,
      { hint: 'regenerate it with npm ≥ 7' },
    );
  return Object.entries(lock.packages)
    .filter(([key, entry]) => key.startsWith('node_modules/') && !entry.dev && !entry.link)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** Never loaded by a root: build inputs, sources of compiled code, docs, tests, type declarations, source maps. */
const DROP_DIRS = new Set([
  'node_modules',
  'test',
  'tests',
  '__tests__',
  'docs',
  'doc',
  'example',
  'examples',
  'benchmark',
  'benchmarks',
  'spec',
]);
const DROP_FILE =
  /(\.tsbuildinfo|\.d\.ts|\.d\.mts|\.d\.cts|\.map|\.md|\.markdown|\.ts|\.mts|\.cts|\.gyp|\.gypi|\.cc|\.cpp|\.hpp|\.h|\.c)$/i;

/**
 * OpenTelemetry packages ship three builds; Node loads `build/src` (CommonJS: their `main`, and the `default` of
 * those with an `exports` map), never `build/esm` or `build/esnext` (the bundler-only `module`/`esnext` fields).
 */
const BUNDLER_ONLY = new Set(['build/esm/', 'build/esnext/']);

/** gpt-tokenizer is imported as ESM only; its CommonJS build, raw rank files and sources are never loaded. */
const TOKENIZER_UNUSED = new Set(['cjs/', 'data/', 'src/']);

function skipFor(name: string): (rel: string) => boolean {
  const native = name === 'better-sqlite3';
  const otel = name.startsWith('@opentelemetry/');
  const tokenizer = name === 'gpt-tokenizer';
  return (rel) => {
    if (rel.endsWith('/')) {
      if (otel && BUNDLER_ONLY.has(rel)) return true;
      if (tokenizer && TOKENIZER_UNUSED.has(rel)) return true;
      const top = rel.split('/')[0] as string;
      if (
        native &&
        (top === 'deps' || top === 'src' || (top === 'build' && rel !== 'build/' && rel !== 'build/Release/'))
      )
        return true;
      const dir = rel.slice(0, -1).split('/').pop() as string;
      return dir.startsWith('.') || DROP_DIRS.has(dir);
    }
    if (native && rel.startsWith('build/')) return rel !== 'build/Release/better_sqlite3.node';
    const base = rel.slice(rel.lastIndexOf('/') + 1);
    return base.startsWith('.') || DROP_FILE.test(rel);
  };
}

export function runtimeFiles(repo: string): SourceFile[] {
  const files: SourceFile[] = [];
  for (const [key, entry] of productionPackages(repo)) {
    const dir = join(repo, key);
    if (!existsSync(dir)) {
      if (entry.optional || entry.devOptional) continue;
      throw new CpError(
        'ERR_BUILD_RUNTIME_MISSING',
        `${key} is a production dependency in package-lock.json but is not installed`,
        { hint: 'run `npm ci` first', details: { package: key } },
      );
    }
    const name = key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length);
    files.push(...walkFiles(dir, `HOT/${key}`, skipFor(name)));
  }
  return files;
}

export function runtimePlatform(): { os: string; cpu: string; node_abi: string } {
  return { os: process.platform, cpu: process.arch, node_abi: process.versions.modules };
}
