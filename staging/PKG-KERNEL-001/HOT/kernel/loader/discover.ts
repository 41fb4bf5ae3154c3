import { readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { moduleRefusal } from './register.js';

/**
 * A module a package contributes by placing it in a folder the root lists at run time (commands, gates,
 * providers) instead of being wired in by name. The loader's rules apply before anything is imported: a
 * module it refused (unowned, or changed) carries the refusal and is never imported.
 */
export interface Contribution {
  /** The name it is known by: the file name without `.js`, or the folder name for `<dir>/<name>/<file>`. */
  name: string;
  path: string;
  refusal: (Error & { code: string }) | undefined;
}

function contribution(name: string, path: string): Contribution {
  return { name, path, refusal: moduleRefusal(path) };
}

function entries(dir: string): import('node:fs').Dirent[] {
  try {
    return readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  } catch {
    return [];
  }
}

/** Every `*.js` file directly in `dir`, in name order (a missing folder contributes nothing). */
export function contributionsIn(dir: string): Contribution[] {
  return entries(dir)
    .filter((entry) => entry.name.endsWith('.js'))
    .map((entry) => contribution(entry.name.replace(/\.js$/, ''), join(dir, entry.name)));
}

/** `<dir>/<name>/<file>` for every folder in `dir` that holds `file`, in name order. */
export function contributionFolders(dir: string, file: string): Contribution[] {
  return entries(dir)
    .filter((entry) => entry.isDirectory() && entries(join(dir, entry.name)).some((inner) => inner.name === file))
    .map((entry) => contribution(entry.name, join(dir, entry.name, file)));
}

/** Import a module found by its path (a file a package may or may not ship), under the same rules. */
export function importFound(path: string): Promise<Record<string, unknown>> {
  return importContribution(contribution(basename(path).replace(/\.js$/, ''), path));
}

/** Import a contribution; a refused one throws its refusal instead. */
export async function importContribution(found: Contribution): Promise<Record<string, unknown>> {
  if (found.refusal !== undefined) throw found.refusal;
  return (await import(pathToFileURL(found.path).href)) as Record<string, unknown>;
}
