import { existsSync, readdirSync, type Dirent } from 'node:fs';
import { READ_LIMITS, readTextBounded } from '#kernel/bounded-read.js';
import { join } from 'node:path';
import { Ledger, ledgerPathForRoot } from '#kernel/ledger/index.js';
import { PgLedger } from '#kernel/ledger/pg/pg-ledger.js';
import { configuredStoreUrl } from '#kernel/config/root-store.js';
import { OwnershipRegistry, type OwnedFile } from '#kernel/registry/ownership.js';
import { checkReceipt, parseReceipt, type Receipt } from '#kernel/registry/receipt.js';
import { isGovernedPath, LAYOUT, receiptDir, receiptPath, rootPaths, STATE_DIRS } from '#kernel/root/layout.js';
import type { GateContext } from './gate.js';

export interface GovernedWalk {
  files: string[];
  /** Symlinks, devices, sockets: nothing in a governed directory may be anything but a file or a directory. */
  oddities: Array<{ path: string; kind: string }>;
}

/** Every entry under ROOT/HOT in a governed directory, root-relative with forward slashes, sorted. */
export function walkGoverned(root: string): GovernedWalk {
  const out: GovernedWalk = { files: [], oddities: [] };
  // Typed directory entries: no lstat per file (the entry type is what lstat would say).
  const take = (entry: Dirent, abs: string, rel: string): void => {
    if (entry.isDirectory()) {
      for (const child of readdirSync(abs, { withFileTypes: true }))
        take(child, `${abs}/${child.name}`, `${rel}/${child.name}`);
    } else if (entry.isFile()) out.files.push(rel);
    else out.oddities.push({ path: rel, kind: entry.isSymbolicLink() ? 'symlink' : 'special file' });
  };
  // Governance is decided by the top-level area (HOT/<area>/…); below it every name readdir returns is governed.
  for (const entry of readdirSync(rootPaths(root).hot, { withFileTypes: true })) {
    const rel = `HOT/${entry.name}`;
    if (isGovernedPath(rel)) take(entry, join(root, rel), rel);
  }
  out.files.sort();
  return out;
}

/** What Node could load as code; a state directory holds data only, so any such file there is planted. */
const CODE_FILE = /\.(?:js|mjs|cjs|node)$/;

/**
 * Code files under the state directories (HOT/installed, ledger, registries), root-relative, sorted. An install's
 * staging area (HOT/registries/txn) holds the package files it is placing, and nothing loads from it.
 */
export function codeInStateDirs(root: string): string[] {
  const found: string[] = [];
  const walk = (abs: string, rel: string): void => {
    if (rel === LAYOUT.txnDir) return;
    let entries: Dirent[];
    try {
      entries = readdirSync(abs, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const path = `${rel}/${entry.name}`;
      if (entry.isDirectory()) walk(join(abs, entry.name), path);
      else if (CODE_FILE.test(entry.name)) found.push(path);
    }
  };
  for (const dir of STATE_DIRS) walk(join(rootPaths(root).hot, dir), `HOT/${dir}`);
  return found.sort();
}

/** A file under HOT/installed/<PKG>/: its text (null when absent) and its JSON value (undefined when not JSON). */
interface InstalledFile {
  text: string | null;
  value?: unknown;
  parsed?: true;
}

/**
 * Root state several gates read, loaded at most once per gate run (the run's context is the key), so a
 * run reads each receipt, manifest and registry once and opens the ledger once. runGates releases it.
 */
interface RunState {
  receipts?: Map<string, Receipt>;
  owned?: OwnedFile[];
  ownedIndex?: Map<string, OwnedFile>;
  ledger?: Ledger;
  /** The store to check, once resolved (null: SQLite). */
  store?: string | null;
  pgLedger?: Promise<PgLedger>;
  installed: Map<string, InstalledFile>;
}

const memo = new WeakMap<GateContext, RunState>();

function stateOf(ctx: GateContext): RunState {
  let state = memo.get(ctx);
  if (!state) memo.set(ctx, (state = { installed: new Map() }));
  return state;
}

function installedFile(ctx: GateContext, packageId: string, name: string): InstalledFile {
  const state = stateOf(ctx);
  const key = `${packageId}/${name}`;
  let file = state.installed.get(key);
  if (!file) {
    let text: string | null = null;
    try {
      text = readTextBounded(join(receiptDir(ctx.root, packageId), name), {
        maxBytes: READ_LIMITS.state,
        what: `${packageId}'s installed ${name}`,
      });
    } catch (error) {
      // Absent, as the kernel's listReceipts sees it (a stray file in HOT/installed has no receipt.json).
      const code = ((error as { cause?: NodeJS.ErrnoException }).cause ?? (error as NodeJS.ErrnoException)).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw error;
    }
    state.installed.set(key, (file = { text }));
  }
  return file;
}

/** The text of HOT/installed/<PKG>/<name>, or null when there is no such file. */
export function installedText(ctx: GateContext, packageId: string, name: string): string | null {
  return installedFile(ctx, packageId, name).text;
}

/**
 * HOT/installed/<PKG>/<name> parsed, or undefined when absent or not JSON. Gates share the value, so none
 * may mutate it.
 */
export function installedJson(ctx: GateContext, packageId: string, name: string): unknown {
  const file = installedFile(ctx, packageId, name);
  if (!file.parsed) {
    file.parsed = true;
    try {
      file.value = file.text === null ? undefined : (JSON.parse(file.text) as unknown);
    } catch {
      file.value = undefined;
    }
  }
  return file.value;
}

/** The package directories under HOT/installed, sorted. */
export function installedPackages(ctx: GateContext): string[] {
  return readdirSync(rootPaths(ctx.root).installed).sort();
}

/** Every installed package's receipt, by package id, as the kernel's listReceipts reads them (a bad receipt throws). */
export function receiptsOf(ctx: GateContext): Map<string, Receipt> {
  const state = stateOf(ctx);
  if (!state.receipts) {
    const receipts = new Map<string, Receipt>();
    for (const pkg of installedPackages(ctx)) {
      const text = installedText(ctx, pkg, 'receipt.json');
      if (text === null) continue;
      const path = receiptPath(ctx.root, pkg);
      const value = installedJson(ctx, pkg, 'receipt.json');
      // Not JSON: parseReceipt refuses it with the kernel's own coded error.
      receipts.set(pkg, value === undefined ? parseReceipt(text, path) : checkReceipt(value, path));
    }
    state.receipts = receipts;
  }
  return state.receipts;
}

export function ownedFilesOf(ctx: GateContext): OwnedFile[] {
  const state = stateOf(ctx);
  if (!state.owned) {
    const registry = OwnershipRegistry.open(ctx.root, { readonly: true });
    try {
      state.owned = registry.all();
    } finally {
      registry.close();
    }
  }
  return state.owned;
}

/** The ownership registry's rows by path (G0 and G1 both look paths up in it). */
export function ownedIndexOf(ctx: GateContext): Map<string, OwnedFile> {
  const state = stateOf(ctx);
  return (state.ownedIndex ??= new Map(ownedFilesOf(ctx).map((row) => [row.path, row])));
}

/**
 * The root's ledger, opened read-only once per run: checking a root never writes to it, and a read-only
 * connection neither switches journal modes nor checkpoints the WAL when it closes.
 */
export function ledgerOf(ctx: GateContext): Ledger {
  const state = stateOf(ctx);
  return (state.ledger ??= Ledger.open(ledgerPathForRoot(ctx.root), { readonly: true }));
}

/** The root's SQLite ledger when the file exists (a root whose chain moved to PostgreSQL may still have it). */
export function localLedgerOf(ctx: GateContext): Ledger | null {
  return existsSync(ledgerPathForRoot(ctx.root)) ? ledgerOf(ctx) : null;
}

/**
 * The root's PostgreSQL ledger when its store is PostgreSQL (ctx.store), opened once per run and shared by G4
 * and G6; null when the root keeps its ledger in SQLite. Opening never creates tables: a database without a
 * chain is a finding of the gate, not something to repair while checking.
 */
export function pgLedgerOf(ctx: GateContext): Promise<PgLedger> | null {
  const state = stateOf(ctx);
  if (state.store === undefined) state.store = ctx.store !== undefined ? ctx.store : configuredStoreUrl(ctx.root);
  if (state.store === null) return null;
  return (state.pgLedger ??= PgLedger.open(state.store, { poolSize: 2 }));
}

/** End of a run: close what the run opened and forget what it read. */
export async function releaseRootState(ctx: GateContext): Promise<void> {
  const state = memo.get(ctx);
  memo.delete(ctx);
  state?.ledger?.close();
  // An open that failed was reported by the gate that asked; there is nothing to close.
  const pg = await state?.pgLedger?.catch(() => undefined);
  await pg?.close();
}
