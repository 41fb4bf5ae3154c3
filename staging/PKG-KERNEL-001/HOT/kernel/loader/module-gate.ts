import { createHash } from 'node:crypto';
import { lstatSync, readFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, sep } from 'node:path';
import { CpError, show } from '../errors.js';
import type { AllowList } from './allow-list.js';

const REINSTALL =
  'reinstall the package that owns the file, or remove it if no package does (`cplane gate-check` then names anything else unowned or changed)';

/**
 * The check every module of a governed root goes through, ES modules at start-up (seal.ts) and CommonJS
 * as it loads (require.ts): the file lies inside the root, some installed package owns it with exactly these
 * bytes, and every package.json that could steer its resolution (between it and the root) is owned too.
 */
export class ModuleGate {
  private readonly verified = new Set<string>();
  private readonly scopesChecked = new Set<string>();
  private readonly nodeModulesChecked = new Set<string>();
  private ownedDirs: Set<string> | undefined;

  /** `trustedDirs`: code outside the root that the entry itself vouches for (the repository's own commands). */
  constructor(
    readonly root: string,
    private readonly allow: AllowList,
    private readonly trustedDirs: readonly string[] = [],
  ) {}

  /** Root-relative path with forward slashes, or null when the path lies outside the root. */
  relativeOf(path: string): string | null {
    const rel = relative(this.root, path);
    if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) return null;
    return rel.split(sep).join('/');
  }

  inside(path: string): boolean {
    return this.relativeOf(path) !== null;
  }

  /** Refuse a module outside the root; its bytes are checked when it loads. */
  checkLocation(path: string): void {
    if (this.relativeOf(path) !== null) return;
    if (
      this.trustedDirs.some((dir) => {
        const rel = relative(dir, path);
        return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
      })
    )
      return;
    throw this.outside(path);
  }

  private outside(path: string): CpError {
    return new CpError(
      'ERR_MODULE_UNOWNED',
      `module ${show(path)} lies outside the root ${show(this.root)}; a root's code loads only files its packages own`,
      {
        hint: REINSTALL,
        details: { path, root: this.root },
      },
    );
  }

  /** Refuse `path` unless its bytes (read here when not given) are owned and match; returns the bytes. */
  checkFile(path: string, bytes?: Uint8Array): Uint8Array | undefined {
    const rel = this.relativeOf(path);
    if (rel === null) throw this.outside(path);
    if (this.verified.has(path) && bytes === undefined) return undefined;
    const allowed = this.allow.files[rel];
    if (allowed === undefined) {
      const why = this.allow.untrusted[rel];
      throw new CpError(
        'ERR_MODULE_UNOWNED',
        `module ${show(rel)} is not owned by a verified installed package${why ? ` (${why})` : ''}; it was not loaded`,
        {
          hint: REINSTALL,
          details: { path: rel, root: this.root },
        },
      );
    }
    const body = bytes ?? readFileSync(path);
    const digest = `sha256:${createHash('sha256').update(body).digest('hex')}`;
    if (!allowed.includes(digest)) {
      throw new CpError(
        'ERR_MODULE_TAMPERED',
        `module ${show(rel)} does not match its recorded digest (${digest}, recorded ${allowed.join(', ')}); it was not loaded`,
        {
          hint: REINSTALL,
          details: { path: rel, root: this.root, sha256: digest, recorded: allowed },
        },
      );
    }
    // A package.json is checked as part of a scope walk that continues upwards on its own.
    if (basename(path) !== 'package.json') this.checkScopes(dirname(path));
    this.verified.add(path);
    return body;
  }

  /**
   * Every package.json from `dir` up to the root decides how files below it load (type, main, exports,
   * imports): each one present must be owned and intact.
   */
  private checkScopes(dir: string): void {
    // Marked checked only once it passed: a refused package.json refuses every module below it, every time.
    for (let d = dir; this.inside(d) && !this.scopesChecked.has(d); d = dirname(d)) {
      const manifest = join(d, 'package.json');
      if (exists(manifest)) this.checkFile(manifest);
      this.scopesChecked.add(d);
    }
  }

  /**
   * A bare specifier (`yargs`, `better-sqlite3/lib/x`) imported from `importer` resolves through the
   * nearest `node_modules/<name>`: every node_modules directory on the way up from the importer must be one
   * the packages own (a real directory holding owned files), and the package directory that wins must hold an
   * owned package.json if it holds one at all.
   */
  checkBare(importer: string, specifier: string): void {
    if (!this.inside(importer)) return;
    const name = specifier.startsWith('@')
      ? specifier.split('/').slice(0, 2).join('/')
      : (specifier.split('/')[0] ?? specifier);
    for (let d = dirname(importer); this.inside(d); d = dirname(d)) {
      const nodeModules = join(d, 'node_modules');
      const key = `${nodeModules}\0${name}`;
      if (this.nodeModulesChecked.has(key)) return;
      const kind = kindOf(nodeModules);
      if (kind === 'none') {
        this.nodeModulesChecked.add(key);
        continue;
      }
      this.checkOwnedDir(nodeModules, kind);
      const pkgDir = join(nodeModules, ...name.split('/'));
      const pkgKind = kindOf(pkgDir);
      if (pkgKind === 'none') {
        this.nodeModulesChecked.add(key);
        continue;
      }
      this.checkOwnedDir(pkgDir, pkgKind);
      const manifest = join(pkgDir, 'package.json');
      if (exists(manifest)) this.checkFile(manifest);
      this.nodeModulesChecked.add(key);
      return;
    }
  }

  private ownedDirectories(): Set<string> {
    if (this.ownedDirs === undefined) {
      this.ownedDirs = new Set();
      for (const path of Object.keys(this.allow.files)) {
        for (let i = path.lastIndexOf('/'); i > 0; i = path.lastIndexOf('/', i - 1)) {
          const dir = path.slice(0, i);
          if (this.ownedDirs.has(dir)) break;
          this.ownedDirs.add(dir);
        }
      }
    }
    return this.ownedDirs;
  }

  /** Refuse `path` unless it is a real directory holding files the packages own. */
  checkOwnedDirectory(path: string): void {
    this.checkOwnedDir(path, kindOf(path) === 'dir' ? 'dir' : 'other');
  }

  private checkOwnedDir(dir: string, kind: 'dir' | 'other'): void {
    const rel = this.relativeOf(dir) ?? dir;
    if (kind === 'dir' && this.ownedDirectories().has(rel)) return;
    throw new CpError(
      'ERR_MODULE_UNOWNED',
      `${show(rel)} is not a directory any installed package owns, and it would steer which module an import loads; nothing was loaded from it`,
      {
        hint: REINSTALL,
        details: { path: rel, root: this.root },
      },
    );
  }
}

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

function kindOf(path: string): 'none' | 'dir' | 'other' {
  try {
    return lstatSync(path).isDirectory() ? 'dir' : 'other';
  } catch {
    return 'none';
  }
}
