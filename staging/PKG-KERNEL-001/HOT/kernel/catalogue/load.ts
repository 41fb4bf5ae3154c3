import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { isCpError } from '../errors.js';
import { importFound } from '../loader/discover.js';
import { type CodeEntry, type CodeFragment, codeEntry, KIND_EXIT } from './define.js';

/** One package area's fragment: `HOT/<area>/codes.js`, exporting `CODES`. */
export interface LoadedFragment {
  /** The area folder under HOT (kernel, router, gates, …). */
  area: string;
  codes: CodeFragment;
}

/** Where fragments live: one `codes.js` directly in each area folder of HOT; no list to keep, a package ships one. */
export function fragmentPaths(hot: string): { area: string; path: string }[] {
  if (!existsSync(hot)) return [];
  return readdirSync(hot, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => ({ area: e.name, path: join(hot, e.name, 'codes.js') }))
    .filter((f) => existsSync(f.path))
    .sort((a, b) => (a.area < b.area ? -1 : a.area > b.area ? 1 : 0));
}

/**
 * Load (and so register) every fragment of a HOT tree. A fragment that cannot be loaded (a module the loader
 * refuses, a coded error) is skipped here, not fatal: gate-check reports the damaged file.
 */
export async function loadCatalogue(hot: string): Promise<LoadedFragment[]> {
  const loaded: LoadedFragment[] = [];
  for (const { area, path } of fragmentPaths(hot)) {
    try {
      const mod = (await importFound(path)) as { CODES?: CodeFragment };
      if (mod.CODES) loaded.push({ area, codes: mod.CODES });
    } catch (error) {
      if (!isCpError(error)) throw error;
    }
  }
  return loaded;
}

/** A code's entry, loading the root's fragments first if this code's is not loaded yet. */
export async function lookUpCode(hot: string, code: string): Promise<CodeEntry | undefined> {
  if (!codeEntry(code)) await loadCatalogue(hot);
  return codeEntry(code);
}

/** The exit code a command ends with when it reports this code (docs/codes.md, "Exit codes"). */
export function exitCodeOf(entry: CodeEntry | undefined): number {
  return entry?.exit ?? KIND_EXIT[entry?.kind ?? 'error'];
}
