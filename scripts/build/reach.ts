// Which layer-0 files the kernel's installer can load: the import graph of its entry module, followed
// through the packed files in memory. CP_BOOTSTRAP ships only these as its genesis installer, not all of
// layer 0 (most of the runtime package is yargs, ajv's compiler, tar's writer and install-time tooling the
// installer never loads).
//
// The scan is deliberately generous: every `import … from`, `import()`, `require()` and
// `new URL(…, import.meta.url)` string literal counts, even one in a comment, and a package's `exports` are
// followed under every condition. A specifier it cannot resolve is skipped (a comment, a built-in, an
// optional dependency); if the installer then needs it, genesis fails loudly and nothing of the root is kept.
import { builtinModules } from 'node:module';
import { posix } from 'node:path';

const SPECIFIERS = [
  /\b(?:import|export)\b[^;'"`]*?\bfrom\s*(['"])([^'"\n]+)\1/g,
  /\bimport\s*\(?\s*(['"])([^'"\n]+)\1/g,
  /\brequire\s*\(\s*(['"])([^'"\n]+)\1\s*\)/g,
];
const DATA_URL = /\bnew\s+URL\(\s*(['"])([^'"\n]+)\1\s*,\s*import\.meta\.url\s*\)/g;
const CODE = /\.(?:js|mjs|cjs)$/;
const BUILTINS = new Set(builtinModules);

function isBuiltin(spec: string): boolean {
  return spec.startsWith('node:') || BUILTINS.has(spec) || BUILTINS.has(spec.split('/')[0] as string);
}

/** Every string target of an `exports` value, under every condition. */
function exportTargets(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const item of value) exportTargets(item, out);
  else if (value !== null && typeof value === 'object')
    for (const item of Object.values(value)) exportTargets(item, out);
  return out;
}

export class ImportReach {
  private readonly dirs = new Set<string>();
  private readonly reached = new Set<string>();
  private readonly queue: string[] = [];

  constructor(private readonly files: ReadonlyMap<string, Buffer>) {
    for (const path of files.keys()) {
      for (let dir = posix.dirname(path); dir !== '.' && !this.dirs.has(dir); dir = posix.dirname(dir))
        this.dirs.add(dir);
    }
  }

  /** The files reachable from `entry` (root-relative paths), with the package.json files that scope them. */
  from(entry: string): Set<string> {
    this.add(entry);
    for (let next = this.queue.pop(); next !== undefined; next = this.queue.pop()) this.scan(next);
    return this.reached;
  }

  private add(path: string): void {
    if (this.reached.has(path) || !this.files.has(path)) return;
    this.reached.add(path);
    // The nearest package.json decides whether a .js file is ESM; a package's own tells where it starts.
    for (let dir = posix.dirname(path); dir !== '.'; dir = posix.dirname(dir)) {
      const manifest = `${dir}/package.json`;
      if (this.files.has(manifest)) this.reached.add(manifest);
    }
    if (CODE.test(path)) this.queue.push(path);
  }

  private scan(path: string): void {
    const text = (this.files.get(path) as Buffer).toString('utf8');
    const dir = posix.dirname(path);
    for (const pattern of SPECIFIERS) {
      for (const match of text.matchAll(pattern)) this.resolve(match[2] as string, dir);
    }
    for (const match of text.matchAll(DATA_URL)) this.add(posix.join(dir, match[2] as string));
  }

  private resolve(spec: string, fromDir: string): void {
    if (spec.startsWith('./') || spec.startsWith('../')) {
      this.addFile(posix.join(fromDir, spec));
      return;
    }
    if (isBuiltin(spec) || spec.startsWith('/')) return;
    const parts = spec.split('/');
    const nameLength = spec.startsWith('@') ? 2 : 1;
    const name = parts.slice(0, nameLength).join('/');
    const sub = parts.slice(nameLength).join('/');
    for (let dir = fromDir; ; dir = posix.dirname(dir)) {
      const pkg = `${dir === '.' ? '' : `${dir}/`}node_modules/${name}`;
      if (this.dirs.has(pkg)) {
        this.addPackage(pkg, sub);
        return;
      }
      if (dir === '.') return;
    }
  }

  private addPackage(pkg: string, sub: string): void {
    const manifestPath = `${pkg}/package.json`;
    let manifest: { exports?: unknown; main?: unknown } = {};
    if (this.files.has(manifestPath)) {
      this.reached.add(manifestPath);
      try {
        manifest = JSON.parse((this.files.get(manifestPath) as Buffer).toString('utf8')) as typeof manifest;
      } catch {
        manifest = {};
      }
    }
    // Native addons are found on disk at run time (better-sqlite3 asks `bindings` to search for its .node).
    for (const path of this.files.keys())
      if (path.startsWith(`${pkg}/`) && path.endsWith('.node')) this.reached.add(path);
    const exported = this.exportsEntry(manifest.exports, sub);
    if (exported !== undefined) {
      for (const target of exportTargets(exported)) this.addFile(posix.join(pkg, target));
    } else if (sub !== '') {
      this.addFile(`${pkg}/${sub}`);
    } else {
      this.addFile(posix.join(pkg, typeof manifest.main === 'string' ? manifest.main : 'index.js'));
      this.addFile(`${pkg}/index.js`);
    }
  }

  private exportsEntry(exports: unknown, sub: string): unknown {
    if (exports === undefined || exports === null) return undefined;
    const key = sub === '' ? '.' : `./${sub}`;
    if (typeof exports === 'string' || Array.isArray(exports)) return key === '.' ? exports : undefined;
    const map = exports as Record<string, unknown>;
    if (!Object.keys(map).some((k) => k.startsWith('.'))) return key === '.' ? map : undefined;
    if (key in map) return map[key];
    for (const [pattern, target] of Object.entries(map)) {
      const star = pattern.indexOf('*');
      if (star === -1 || !key.startsWith(pattern.slice(0, star)) || !key.endsWith(pattern.slice(star + 1))) continue;
      const middle = key.slice(star, key.length - (pattern.length - star - 1));
      return JSON.parse(JSON.stringify(target).replaceAll('*', middle)) as unknown;
    }
    return undefined;
  }

  /** A file as Node would find it: exactly, with an extension, or as a directory's main/index. */
  private addFile(base: string): void {
    for (const candidate of [base, `${base}.js`, `${base}.json`, `${base}.node`]) {
      if (this.files.has(candidate)) {
        this.add(candidate);
        return;
      }
    }
    if (this.dirs.has(base)) {
      const manifest = `${base}/package.json`;
      if (this.files.has(manifest)) {
        this.reached.add(manifest);
        try {
          const main = (JSON.parse((this.files.get(manifest) as Buffer).toString('utf8')) as { main?: unknown }).main;
          if (typeof main === 'string') this.addFile(posix.join(base, main));
        } catch {
          // an unreadable package.json names no main; index.js below still applies
        }
      }
      for (const index of ['index.js', 'index.json'])
        if (this.files.has(`${base}/${index}`)) this.add(`${base}/${index}`);
    }
  }
}
