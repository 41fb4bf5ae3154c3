import Module, { builtinModules } from 'node:module';
import type { ModuleGate } from './module-gate.js';

interface CjsModule {
  filename?: string | null;
  id?: string;
}
type Extension = (module: CjsModule, filename: string) => void;
type ResolveFilename = (request: string, parent: CjsModule | undefined, isMain: boolean, options?: unknown) => string;
interface ModuleInternals {
  _extensions: Record<string, Extension>;
  _resolveFilename: ResolveFilename;
}

const builtins = new Set(builtinModules);

function isBare(request: string): boolean {
  return (
    !builtins.has(request) &&
    !request.startsWith('node:') &&
    !/^(\.{0,2}\/|\/|#)/.test(request) &&
    request !== '.' &&
    request !== '..'
  );
}

/**
 * CommonJS loads (better-sqlite3, `bindings` probing for the .node addon, ajv, tar…) are checked as they
 * happen, in the loading thread: every `.js`, `.cjs`, `.json` and
 * `.node` file inside the root is hashed and matched before it is compiled or dlopen'ed, and a bare
 * `require` must resolve through owned node_modules directories only. A refusal goes to `onRefusal`, which
 * must not return: Node 20 caches a CommonJS module that failed while an ES module imported it as an empty
 * one, so a later importer would carry on with half-loaded code instead of meeting the refusal again.
 */
export function guardRequire(gate: ModuleGate, onRefusal: (error: unknown) => never): void {
  const internals = Module as unknown as ModuleInternals;
  const check = (fn: () => void): void => {
    try {
      fn();
    } catch (error) {
      onRefusal(error);
    }
  };
  for (const ext of ['.js', '.cjs', '.json', '.node']) {
    const original = internals._extensions[ext];
    if (original === undefined) continue;
    internals._extensions[ext] = function guarded(module: CjsModule, filename: string): void {
      if (gate.inside(filename)) check(() => gate.checkFile(filename));
      original.call(this, module, filename);
    };
  }
  const resolveFilename = internals._resolveFilename;
  internals._resolveFilename = function guardedResolve(request, parent, isMain, options): string {
    const resolved = resolveFilename.call(this, request, parent, isMain, options);
    const importer = parent?.filename;
    if (
      typeof importer === 'string' &&
      gate.inside(importer) &&
      !builtins.has(resolved) &&
      !resolved.startsWith('node:')
    ) {
      check(() => {
        if (isBare(request)) gate.checkBare(importer, request);
        gate.checkLocation(resolved);
      });
    }
    return resolved;
  };
}
