import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import { CpError, show } from '../errors.js';
import { LAYOUT, STATE_DIRS } from '../root/layout.js';
import type { ModuleGate } from './module-gate.js';

/** Where modules are discovered by listing a directory: a refused one there is skipped, not fatal. */
export const DISCOVERY_DIRS = ['HOT/cli/commands/', 'HOT/gates/checks/'] as const;

const ESM_CAPABLE = new Set(['.js', '.mjs']);
/** What a loader could be handed in place of a module; other special files are G1's and the shape check's. */
const CODE = new Set(['.js', '.mjs', '.cjs', '.json', '.node']);

/**
 * The start-up half of verified loading, for ES modules (Node 20 has no in-thread ESM hook, and its
 * off-thread `module.register` hooks cost more per module than hashing it): one walk of the governed tree
 * before the root's code is imported. Anything that steers resolution — a `package.json` or a
 * `node_modules` directory no package owns, or an owned package.json with other bytes — refuses the whole
 * process (thrown). Every owned file an `import` can load (`.js`/`.mjs` outside CommonJS package scopes) is
 * hashed now; an unowned or changed one is returned as a refusal keyed by its root-relative path, for
 * discovery to skip or the entry to refuse. CommonJS, JSON and addons are checked as they load (require.ts).
 */
export function sealCheck(gate: ModuleGate): Map<string, Error & { code: string }> {
  const refusals = new Map<string, Error & { code: string }>();
  const cjsScope = new Map<string, boolean>();
  const hot = join(gate.root, LAYOUT.hot);
  const walk = (dir: string, rel: string, scopeIsCjs: boolean): void => {
    let entries: import('node:fs').Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true }).sort((a, b) =>
        a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
      );
    } catch {
      return;
    }
    // The directory's own package.json decides the scope of the files next to it.
    let cjs = scopeIsCjs;
    if (entries.some((e) => e.name === 'package.json' && e.isFile())) {
      const path = join(dir, 'package.json');
      gate.checkFile(path);
      cjs = cjsScope.get(path) ?? readType(path) !== 'module';
      cjsScope.set(path, cjs);
    }
    for (const entry of entries) {
      const path = join(dir, entry.name);
      const relPath = `${rel}/${entry.name}`;
      // State is not code (the root-shape check judges it); the package tests are run by the test runner, never by an entry point.
      if (rel === LAYOUT.hot && ((STATE_DIRS as readonly string[]).includes(entry.name) || entry.name === 'tests'))
        continue;
      if (entry.isDirectory()) {
        if (entry.name === 'node_modules') gate.checkOwnedDirectory(path);
        walk(path, relPath, cjs);
      } else if (entry.isSymbolicLink()) {
        // A link where a file that is no code lay (a JSON example, a prompt, a stylesheet) is refused alone: nothing
        // imports it, so the root's commands still run and gate-check names it. Where it could be code, steer
        // resolution or hide a tree (a directory), nothing vouches for where it leads: the process is refused.
        if (!mayLoadThrough(path, entry.name, rel)) {
          refusals.set(relPath, linkRefusal(relPath, gate.root));
          continue;
        }
        throw new CpError(
          'ERR_MODULE_UNOWNED',
          `${show(relPath)} is a symbolic link inside the root's code; no package owns where it leads, so nothing is loaded`,
          {
            hint: 'remove the link and reinstall the package that owns the path (cplane gate-check names it)',
            details: { path: relPath, root: gate.root },
          },
        );
      } else if (!entry.isFile()) {
        // Not a regular file (a FIFO would hang the read): never opened; fatal where it could steer or be code.
        if (entry.name === 'node_modules' || entry.name === 'package.json') gate.checkOwnedDirectory(path);
        if (CODE.has(extname(entry.name)) || rel.includes('/node_modules')) {
          refusals.set(
            relPath,
            new CpError('ERR_MODULE_TAMPERED', `${show(relPath)} is not a regular file; it was not loaded`, {
              hint: 'reinstall the package that owns the path (cplane gate-check names it)',
              details: { path: relPath, root: gate.root },
            }) as Error & { code: string },
          );
        }
      } else if (entry.isFile() && ESM_CAPABLE.has(extname(entry.name)) && !(cjs && extname(entry.name) === '.js')) {
        try {
          gate.checkFile(path);
        } catch (error) {
          refusals.set(relPath, error as Error & { code: string });
        }
      }
    }
  };
  walk(hot, LAYOUT.hot, false);
  return refusals;
}

/** Whether a link could be loaded as code or change how code resolves (its name, or a target that is a directory). */
function mayLoadThrough(path: string, name: string, rel: string): boolean {
  if (name === 'package.json' || name === 'node_modules' || rel.includes('/node_modules')) return true;
  if (CODE.has(extname(name)) && extname(name) !== '.json') return true;
  try {
    return statSync(path).isDirectory();
  } catch {
    // A dangling link leads nowhere to load from.
    return false;
  }
}

function linkRefusal(relPath: string, root: string): Error & { code: string } {
  return new CpError(
    'ERR_MODULE_UNOWNED',
    `${show(relPath)} is a symbolic link where a package's file belongs; no package owns where it leads, so it is not read`,
    {
      hint: 'remove the link and reinstall the package that owns the path (cplane gate-check names it)',
      details: { path: relPath, root, link: true },
    },
  ) as Error & { code: string };
}

function readType(path: string): unknown {
  try {
    return (JSON.parse(readFileSync(path, 'utf8')) as { type?: unknown }).type;
  } catch {
    return undefined;
  }
}
