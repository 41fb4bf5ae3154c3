import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CpError, show } from '#kernel/errors.js';
import { contributionsIn, importContribution } from '#kernel/loader/discover.js';
import { isModuleRefusal } from '#kernel/loader/register.js';
import { assertRootShape } from '#kernel/root/shape.js';
import { crashed, type Gate, type GateContext, type GateResult } from './gate.js';
import { releaseRootState } from './root-state.js';
import { rootPaths } from '#kernel/root/layout.js';

const CHECKS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'checks');

export interface GateRun {
  gates: GateResult[];
  passed: number;
  failed: number;
  warned: number;
}

export interface RunGatesOptions {
  /** Gate ids to run (e.g. ['G1', 'G4']); all when empty. */
  only?: readonly string[];
  strict?: boolean;
  now?: () => number;
  orphanTimeoutMs?: number;
  checksDir?: string;
  checkpointFiles?: readonly string[];
  checkpointKeyFiles?: readonly string[];
  /** The store to check: a postgres:// URL, null for the SQLite files; absent: the root's gateway.store config. */
  store?: string | null;
}

export const DEFAULT_ORPHAN_TIMEOUT_MS = 10 * 60 * 1000;

/** Every gate module installed in the root, ordered by id (G0, G1, …, G7, then any others). */
export async function loadGates(dir = CHECKS_DIR): Promise<Gate[]> {
  const gates: Gate[] = [];
  for (const found of contributionsIn(dir)) {
    const file = `${found.name}.js`;
    // A gate module the loader refuses is never imported: it is reported as a failing gate (G0/G1 name it too).
    if (found.refusal !== undefined) {
      gates.push(refusedGate(file, found.refusal));
      continue;
    }
    let mod: { default?: Gate };
    try {
      mod = (await importContribution(found)) as { default?: Gate };
    } catch (error) {
      // A module it imports was refused (changed, or its package's signature fails): this gate cannot run, the others still report.
      if (!isModuleRefusal(error)) throw error;
      gates.push(refusedGate(file, error));
      continue;
    }
    if (mod.default && typeof mod.default.run === 'function') gates.push(mod.default);
  }
  return gates.sort((a, b) => a.id.localeCompare(b.id, 'en', { numeric: true }));
}

function refusedGate(file: string, error: Error & { code: string }): Gate {
  const id = /^g(\d+)-/i.exec(file)?.[1];
  const refused: Gate = {
    id: id === undefined ? file.replace(/\.js$/, '') : `G${id}`,
    name: 'MODULE REFUSED',
    describe: `gate module ${file}, refused by the module loader`,
    run: () => ({
      id: refused.id,
      name: refused.name,
      status: 'FAIL',
      message: `gate module ${show(file)} was not loaded: ${error.message}`,
      findings: [
        { code: 'MODULE_REFUSED', message: `${error.code}: ${error.message}`, path: `HOT/gates/checks/${file}` },
      ],
    }),
  };
  return refused;
}

export async function runGates(root: string, options: RunGatesOptions = {}): Promise<GateRun> {
  assertRootShape(root);
  if (!existsSync(rootPaths(root).installed)) {
    throw new CpError('ERR_ROOT_NOT_A_ROOT', `${show(root)} is not a cplane root (no HOT/installed)`, {
      hint: 'bootstrap it first, or check --root',
      details: { root },
    });
  }
  const all = await loadGates(options.checksDir);
  const wanted = new Set((options.only ?? []).map((id) => id.toUpperCase()));
  const unknown = [...wanted].filter((id) => !all.some((g) => g.id === id));
  if (unknown.length > 0) {
    throw new CpError('ERR_USAGE', `unknown gate(s) ${unknown.join(', ')}`, {
      hint: `installed gates: ${all.map((g) => g.id).join(', ')}`,
      details: { unknown },
    });
  }
  const ctx: GateContext = {
    root,
    now: options.now ?? Date.now,
    orphanTimeoutMs: options.orphanTimeoutMs ?? DEFAULT_ORPHAN_TIMEOUT_MS,
    checkpointFiles: options.checkpointFiles ?? [],
    checkpointKeyFiles: options.checkpointKeyFiles ?? [],
    ...(options.store === undefined ? {} : { store: options.store }),
  };
  const results: GateResult[] = [];
  try {
    for (const gate of all.filter((g) => wanted.size === 0 || wanted.has(g.id))) {
      let result: GateResult;
      try {
        result = await gate.run(ctx);
      } catch (error) {
        result = crashed(gate, error);
      }
      if (options.strict && result.status === 'WARN')
        result = { ...result, status: 'FAIL', message: `${result.message} (strict)` };
      results.push(result);
    }
  } finally {
    await releaseRootState(ctx);
  }
  return {
    gates: results,
    passed: results.filter((r) => r.status === 'PASS').length,
    failed: results.filter((r) => r.status === 'FAIL').length,
    warned: results.filter((r) => r.status === 'WARN').length,
  };
}
