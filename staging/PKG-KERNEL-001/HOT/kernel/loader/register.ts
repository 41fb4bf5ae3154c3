import { register } from 'node:module';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { readAllowList, rootMode } from './allow-list.js';
import { ModuleGate } from './module-gate.js';
import { guardRequire } from './require.js';

let active: ModuleGate | null = null;

export interface VerifyOptions {
  /** Repository code outside the root that the calling entry vouches for (bin/cplane.js's own commands). */
  trustedDirs?: readonly string[];
}

/**
 * Called by each root entry point before it imports anything else from the root: from here on every
 * module the process loads from inside `root` (ESM through the hooks, CommonJS and native addons through
 * the require guard) must be owned by an installed package with the recorded bytes. The entry script and
 * this directory's modules (with the errors, canonical JSON and signing modules they import) are the trust
 * anchor: they have already run and cannot vouch for themselves. A development root is not governed.
 */
export function verifyModuleLoading(root: string, options: VerifyOptions = {}): ModuleGate | null {
  const absolute = resolve(root);
  if (active !== null || rootMode(absolute) === 'dev') return active;
  const allow = readAllowList(absolute);
  const trustedDirs = (options.trustedDirs ?? []).map((dir) => resolve(dir));
  const gate = new ModuleGate(absolute, allow, trustedDirs);
  guardRequire(gate, refuseProcess);
  // Node 20 leaves a second rejection behind when several ES modules import one refused CommonJS module;
  // every import still rejects with the refusal, so that copy is dropped. Anything else stays fatal.
  process.on('unhandledRejection', (reason) => {
    if (!isModuleRefusal(reason)) throw reason;
  });
  register(pathToFileURL(resolve(import.meta.dirname, 'hooks.js')).href, { data: { root: absolute, allow, trustedDirs } });
  active = gate;
  return gate;
}

/**
 * A CommonJS refusal ends the process at once (see guardRequire): the coded error is printed and the exit
 * code is 3, as for every refusal. Only entry points turn the guard on, so no library caller is ended.
 */
function refuseProcess(error: unknown): never {
  if (!isModuleRefusal(error)) throw error;
  report(error);
  process.exit(3);
}

function report(error: Error & { code: string; hint?: string }): void {
  process.stderr.write(`cplane: ${error.code}: ${error.message}${error.hint ? `\n  hint: ${error.hint}` : ''}\n`);
}

/** The gate this process loads through, or null (a development root, or no entry turned it on). */
export function activeModuleGate(): ModuleGate | null {
  return active;
}

/** True for the loader's refusals, which name a file that was not loaded. */
export function isModuleRefusal(error: unknown): error is Error & { code: string; hint?: string } {
  const code = (error as { code?: unknown } | null)?.code;
  return error instanceof Error && (code === 'ERR_MODULE_UNOWNED' || code === 'ERR_MODULE_TAMPERED');
}

/**
 * Run an entry's start-up (which imports the root's code) and report a refused module as a coded error
 * rather than a stack trace: exit code 3, like every other refusal.
 */
export async function runEntry(start: () => Promise<number>): Promise<number> {
  try {
    return await start();
  } catch (error) {
    if (!isModuleRefusal(error)) throw error;
    report(error);
    return 3;
  }
}
