import { lstatSync, readdirSync, type Dirent } from 'node:fs';
import { join } from 'node:path';
import { CpError, show } from '../errors.js';
import { LAYOUT, STATE_DIRS } from './layout.js';

/** What an entry of the root is, judged by lstat: a link is never followed and nothing is ever opened. */
export type EntryKind = 'absent' | 'file' | 'directory' | 'symlink' | 'special';

export function entryKind(abs: string): EntryKind {
  let stat: import('node:fs').Stats;
  try {
    stat = lstatSync(abs);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return 'absent';
    throw error;
  }
  if (stat.isSymbolicLink()) return 'symlink';
  if (stat.isFile()) return 'file';
  if (stat.isDirectory()) return 'directory';
  return 'special';
}

function direntKind(entry: Dirent): EntryKind {
  if (entry.isSymbolicLink()) return 'symlink';
  if (entry.isFile()) return 'file';
  if (entry.isDirectory()) return 'directory';
  return 'special';
}

/** Names under the state directories that commands open as files (databases, JSON state, SQLite side files). */
const STATE_FILE = /\.(sqlite|json)(-wal|-shm|-journal)?$/;

/** Governed directories whose files commands read as they start (configs, schemas): a FIFO there would hang them. */
const READ_AT_START = ['config', 'schemas'] as const;

/**
 * Directories whose entries their own reader judges one by one: the router sets a bad spool entry aside
 * (quarantine) and keeps routing, so a planted link or FIFO there must not refuse every command.
 */
const READER_JUDGED = new Set(['HOT/registries/router-spool', 'HOT/registries/router-spool-quarantine']);

/** How deep below each state directory the shape is checked: HOT/installed/<PKG>/<file>, HOT/registries/txn/<txn>. */
const STATE_DEPTH = 2;

export function shapeError(rel: string, kind: EntryKind, want: string): CpError {
  if (kind === 'symlink') {
    return new CpError(
      'ERR_ROOT_SYMLINK',
      `${show(rel)} in the root is a symlink; cplane never reads or writes root state through a link`,
      {
        hint: `replace it with the real ${want} (a root's state lives inside the root), or restore the root from a backup`,
        details: { path: rel },
      },
    );
  }
  return new CpError(
    'ERR_ROOT_SHAPE',
    `${show(rel)} in the root is ${kind === 'special' ? 'a special file (FIFO, socket or device)' : `a ${kind}`} where a ${want} belongs`,
    {
      hint: 'the root was edited by hand; remove the entry or restore the root from a backup',
      details: { path: rel, kind },
    },
  );
}

/**
 * The root's shape, checked by every command before it opens anything in the root: HOT and its state
 * directories are real directories, nothing at HOT's top level, within two levels of a state directory or in
 * HOT/config and HOT/schemas is a symlink or a special file, and state files (`*.sqlite`, `*.json`) are
 * regular files. A link there would
 * send a write out of the root; a FIFO would hang whoever opens it. Entries that are absent are left to the
 * command (a missing ledger is its own error). Costs one readdir per state directory level.
 */
export function assertRootShape(root: string): void {
  const hot = entryKind(join(root, LAYOUT.hot));
  if (hot === 'absent') return;
  if (hot !== 'directory') throw shapeError(LAYOUT.hot, hot, 'directory');
  for (const entry of readdirSync(join(root, LAYOUT.hot), { withFileTypes: true })) {
    const kind = direntKind(entry);
    const rel = `${LAYOUT.hot}/${entry.name}`;
    const isState = (STATE_DIRS as readonly string[]).includes(entry.name);
    if (kind === 'symlink' || kind === 'special' || (isState && kind !== 'directory'))
      throw shapeError(rel, kind, isState ? 'directory' : 'file or directory');
    if (isState) checkStateTree(join(root, rel), rel, STATE_DEPTH);
    else if (kind === 'directory' && (READ_AT_START as readonly string[]).includes(entry.name))
      checkStateTree(join(root, rel), rel, 1);
  }
}

function checkStateTree(abs: string, rel: string, depth: number): void {
  for (const entry of readdirSync(abs, { withFileTypes: true })) {
    const kind = direntKind(entry);
    const childRel = `${rel}/${entry.name}`;
    const stateFile = STATE_FILE.test(entry.name);
    if (kind === 'symlink' || kind === 'special' || (stateFile && kind !== 'file'))
      throw shapeError(childRel, kind, stateFile ? 'regular file' : 'file or directory');
    if (kind === 'directory' && depth > 1 && !READER_JUDGED.has(childRel))
      checkStateTree(join(abs, entry.name), childRel, depth - 1);
  }
}

/**
 * Ancestors of a root-relative path are real directories (or absent): a write, rename or delete at
 * `relPath` then lands inside the root. `memo` remembers directories already judged in one operation.
 */
export function assertNoLinkedAncestor(root: string, relPath: string, memo: Set<string> = new Set()): void {
  const parts = relPath.split('/');
  let prefix = '';
  for (let i = 0; i < parts.length - 1; i += 1) {
    prefix = i === 0 ? (parts[0] as string) : `${prefix}/${parts[i] as string}`;
    if (memo.has(prefix)) continue;
    const kind = entryKind(join(root, prefix));
    if (kind === 'absent') return;
    if (kind !== 'directory') throw shapeError(prefix, kind, 'directory');
    memo.add(prefix);
  }
}
