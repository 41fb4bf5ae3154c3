import { register } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isCpError } from '../errors.js';
import { assertRootShape } from '../root/shape.js';
import { readAllowList, rootMode } from './allow-list.js';
import { ModuleGate } from './module-gate.js';
import { guardRequire } from './require.js';
import { DISCOVERY_DIRS, sealCheck } from './seal.js';

/**
 * Per process, not per module instance: bin/cplane.js turns verification on with the repository's copy of
 * this module, and the root's own copy (imported by its CLI) must see the same gate and refusals.
 */
interface LoaderState {
  gate: ModuleGate;
  refusals: Map<string, Error & { code: string }>;
}
const STATE = Symbol.for('cplane.verifiedModuleLoading');
const shared = globalThis as { [STATE]?: LoaderState };

export interface VerifyOptions {
  /** Repository code outside the root that the calling entry vouches for (bin/cplane.js's own commands). */
  trustedDirs?: readonly string[];
}

/**
 * Called by each root entry point before it imports anything else from the root: every ES module the root
 * holds is checked now (seal.ts), CommonJS files and native addons as they load (require.ts); each must be
 * owned by an installed package with the recorded bytes. The entry script and
 * this directory's modules (with the errors, canonical JSON and signing modules they import) are the trust
 * anchor: they have already run and cannot vouch for themselves. A development root is not governed.
 */
export function verifyModuleLoading(root: string, options: VerifyOptions = {}): ModuleGate | null {
  const absolute = resolve(root);
  if (shared[STATE] !== undefined) return shared[STATE].gate;
  if (rootMode(absolute) === 'dev') return null;
  // The root's shape first: nothing below is read through a link or from a FIFO in its state directories.
  try {
    assertRootShape(absolute);
  } catch (error) {
    if (!isCpError(error)) throw error;
    report(error);
    process.exit(3);
  }
  const trustedDirs = (options.trustedDirs ?? []).map((dir) => resolve(dir));
  const gate = new ModuleGate(absolute, readAllowList(absolute), trustedDirs);
  guardRequire(gate, refuseProcess);
  // Node 20 leaves a second rejection behind when several ES modules import one refused CommonJS module;
  // every import still rejects with the refusal, so that copy is dropped. Anything else stays fatal.
  process.on('unhandledRejection', (reason) => {
    if (!isModuleRefusal(reason)) throw reason;
  });
  let refusals = new Map<string, Error & { code: string }>();
  try {
    refusals = sealCheck(gate);
  } catch (error) {
    refuseProcess(error);
  }
  shared[STATE] = { gate, refusals };
  // A refused module outside the discovery directories may be imported by any command: importing it (directly
  // or through any chain) is refused, while commands and gates that never reach it still run, so gate-check can
  // name what is wrong. That includes a file no package records: deleting a package's receipt directory turns
  // its modules into such files while owned modules still import them (CommonJS ones are refused the same way).
  const lazy = [...refusals].filter(([path]) => !DISCOVERY_DIRS.some((dir) => path.startsWith(dir)));
  if (lazy.length > 0) refuseOnImport(absolute, lazy);
  return gate;
}

function refuseOnImport(
  root: string,
  lazy: Array<[string, Error & { code: string; hint?: string; details?: Record<string, unknown> }]>,
): void {
  const refused = Object.fromEntries(
    lazy.map(([rel, error]) => [
      pathToFileURL(join(root, rel)).href,
      { code: error.code, message: error.message, hint: error.hint ?? '', details: error.details ?? { path: rel } },
    ]),
  );
  register(new URL('./refuse-hooks.js', import.meta.url), { data: { refused } });
}

/**
 * Why the module at `path` must not be imported (discovery skips it), or undefined when it may be. A path the
 * start-up seal did not walk (a state directory, HOT/tests) is checked now: a listing finds whatever lies there.
 */
export function moduleRefusal(path: string): (Error & { code: string }) | undefined {
  const state = shared[STATE];
  if (state === undefined) return undefined;
  const absolute = resolve(path);
  const rel = state.gate.relativeOf(absolute);
  if (rel === null) return undefined;
  const sealed = state.refusals.get(rel);
  if (sealed !== undefined) return sealed;
  try {
    state.gate.checkFile(absolute);
    return undefined;
  } catch (error) {
    if (!isModuleRefusal(error)) throw error;
    return error;
  }
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

/** Printed the way the CLI prints any coded error, JSON on stdout under `--json`. */
function report(error: Error & { code: string; hint?: string; details?: unknown }): void {
  if (process.argv.includes('--json')) {
    process.stdout.write(
      `${JSON.stringify({ error: { code: error.code, message: error.message, hint: error.hint, details: error.details ?? {} } }, null, 2)}\n`,
    );
  } else {
    process.stderr.write(`cplane: ${error.code}: ${error.message}${error.hint ? `\n  hint: ${error.hint}` : ''}\n`);
  }
}

/** The links the start-up seal found where a package's non-code file belongs (seal.ts): every command names them. */
export function linkedFiles(): Array<Error & { code: string }> {
  const state = shared[STATE];
  if (state === undefined) return [];
  return [...state.refusals.values()].filter(
    (error) => (error as { details?: { link?: unknown } }).details?.link === true,
  );
}

/** The gate this process loads through, or null (a development root, or no entry turned it on). */
export function activeModuleGate(): ModuleGate | null {
  return shared[STATE]?.gate ?? null;
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
