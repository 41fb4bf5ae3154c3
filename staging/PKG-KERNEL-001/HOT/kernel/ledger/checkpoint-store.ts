import { closeSync, lstatSync, mkdirSync, readdirSync, readSync, type Dirent } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../atomic.js';
import { envError } from '../env-errors.js';
import { openRegularFile } from '../regular-file.js';
import { CpError, isCpError, show } from '../errors.js';
import { readTrustedRootKey } from '../signing/root-key.js';
import {
  type CheckpointHead,
  checkpointHead,
  parseCheckpoint,
  signCheckpoint,
  type Checkpoint,
  type FoundCheckpoint,
} from './checkpoint.js';
import type { Ledger } from './ledger.js';
import { refuseLedgerAsOutput } from './file-check.js';
import { rootPaths } from '../root/layout.js';

/** A checkpoint file is about 500 bytes. */
const MAX_CHECKPOINT_BYTES = 4096;
/** An exported set of checkpoints (JSON Lines) read by verify: generous, but a bound. */
const MAX_CHECKPOINT_SOURCE_BYTES = 64 * 1024 * 1024;
const FILE_NAME = /^(\d{16})-([0-9a-f]{16})\.json$/;

/** Outside the ledger database, so rewriting the database does not rewrite them (HOT/ledger is state, not governed). */
export function checkpointDir(root: string): string {
  return rootPaths(root).checkpoints;
}

/** `<seq, 16 digits>-<first 16 hex of the hash>.json`: names sort in chain order, one file per head. */
export function checkpointFileName(cp: Pick<Checkpoint, 'seq' | 'hash'>): string {
  return `${String(cp.seq).padStart(16, '0')}-${cp.hash.slice(0, 16)}.json`;
}

/** Read at most `max` bytes of a regular file; anything else (a FIFO, a directory, a larger file) is refused. */
function readBounded(path: string, max: number, what: string): string {
  let opened: ReturnType<typeof openRegularFile>;
  try {
    opened = openRegularFile(path);
  } catch (error) {
    const env = envError(error, path, `reading ${what}`);
    if (env) throw env;
    throw new CpError('ERR_CHECKPOINT_INVALID', `cannot read ${what} ${show(path)}: ${(error as Error).message}`, {
      hint: 'pass a checkpoint file written by `cplane ledger checkpoint --out` or `cplane ledger checkpoints --export`',
      details: { path },
      cause: error,
    });
  }
  if (opened.fd === null)
    throw new CpError('ERR_CHECKPOINT_INVALID', `${what} ${show(path)} is a ${opened.kind}, not a regular file`, {
      hint: 'pass a checkpoint file',
      details: { path },
    });
  const { fd, stat } = opened;
  try {
    if (stat.size > max)
      throw new CpError(
        'ERR_CHECKPOINT_INVALID',
        `${what} ${show(path)} is ${stat.size} bytes, over the ${max}-byte limit`,
        { hint: 'pass a checkpoint file', details: { path, size: stat.size } },
      );
    const buf = Buffer.alloc(stat.size);
    let off = 0;
    while (off < buf.length) {
      const n = readSync(fd, buf, off, buf.length - off, off);
      if (n === 0) break;
      off += n;
    }
    return buf.subarray(0, off).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

function found(source: string, parse: () => Checkpoint): FoundCheckpoint {
  try {
    return { source, checkpoint: parse() };
  } catch (error) {
    if (!isCpError(error)) throw error;
    return { source, error };
  }
}

function parseJsonCheckpoint(text: string, source: string): Checkpoint {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new CpError('ERR_CHECKPOINT_INVALID', `checkpoint ${show(source)} is not JSON: ${(error as Error).message}`, {
      hint: 'a checkpoint is one JSON object',
      details: { source },
      cause: error,
    });
  }
  return parseCheckpoint(value, source);
}

/** The checkpoint directory's entries in chain order (names sort by seq), or null when it is not a directory. */
function listCheckpointDir(root: string): Dirent[] | null {
  const dir = checkpointDir(root);
  try {
    if (!lstatSync(dir).isDirectory()) return null;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return (
    readdirSync(dir, { withFileTypes: true })
      // A checkpoint being published right now (writeFileAtomic's temp file) is not a checkpoint yet.
      .filter((entry) => !(entry.name.startsWith('.') && entry.name.endsWith('.tmp')))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  );
}

function readDirEntry(root: string, entry: Dirent): FoundCheckpoint {
  const source = `HOT/ledger/checkpoints/${entry.name}`;
  return found(source, () => {
    const name = FILE_NAME.exec(entry.name);
    if (!name || !entry.isFile())
      throw new CpError('ERR_CHECKPOINT_INVALID', `${show(source)} is not a checkpoint file`, {
        hint: 'only cplane writes here',
        details: { source },
      });
    const cp = parseJsonCheckpoint(
      readBounded(join(checkpointDir(root), entry.name), MAX_CHECKPOINT_BYTES, 'checkpoint'),
      source,
    );
    if (checkpointFileName(cp) !== entry.name) {
      throw new CpError(
        'ERR_CHECKPOINT_INVALID',
        `${show(source)} holds checkpoint #${cp.seq} ${cp.hash.slice(0, 16)}…, not the one its name says`,
        { hint: 'only cplane writes here', details: { source } },
      );
    }
    return cp;
  });
}

/** Every checkpoint file in the root, in chain order; a file that is not one is reported, not skipped. */
export function readRootCheckpoints(root: string): FoundCheckpoint[] {
  const entries = listCheckpointDir(root);
  if (entries === null) {
    const dir = checkpointDir(root);
    return [
      {
        source: dir,
        error: new CpError('ERR_CHECKPOINT_INVALID', `${show(dir)} is not a directory`, {
          hint: 'it must be the directory cplane writes checkpoints to',
          details: { path: dir },
        }),
      },
    ];
  }
  return entries.map((entry) => readDirEntry(root, entry));
}

/** Checkpoints kept elsewhere: one JSON object (`ledger checkpoint --out`) or JSON Lines (`ledger checkpoints --export`). */
export function readCheckpointSource(path: string): FoundCheckpoint[] {
  const text = readBounded(path, MAX_CHECKPOINT_SOURCE_BYTES, 'checkpoint file');
  const lines = text
    .split('\n')
    .map((line, index) => ({ line: line.trim(), index }))
    .filter(({ line }) => line.length > 0);
  if (lines.length === 0)
    throw new CpError('ERR_CHECKPOINT_INVALID', `checkpoint file ${show(path)} is empty`, {
      hint: 'pass a file written by `cplane ledger checkpoint --out`',
      details: { path },
    });
  // A pretty-printed single checkpoint spans lines; JSON Lines has one object per line.
  if (lines.length > 1 && !lines[0]?.line.endsWith('}')) return [found(path, () => parseJsonCheckpoint(text, path))];
  return lines.map(({ line, index }) =>
    found(lines.length === 1 ? path : `${path}:${index + 1}`, () => parseJsonCheckpoint(line, `${path}:${index + 1}`)),
  );
}

export interface WrittenCheckpoint {
  checkpoint: Checkpoint;
  path: string;
  /** false when a checkpoint of this very head was already there. */
  written: boolean;
}

function publish(root: string, cp: Checkpoint): WrittenCheckpoint {
  const dir = checkpointDir(root);
  mkdirSync(dir, { recursive: true });
  if (lstatSync(dir).isSymbolicLink() || !lstatSync(dir).isDirectory()) {
    throw new CpError(
      'ERR_ROOT_SYMLINK',
      `${show(dir)} is not a directory of the root; checkpoints are never written through it`,
      { hint: 'remove it; cplane recreates the directory', details: { path: dir } },
    );
  }
  const path = join(dir, checkpointFileName(cp));
  writeFileAtomic(path, `${JSON.stringify(cp)}\n`);
  return { checkpoint: cp, path, written: true };
}

/** The newest checkpoint file in the root that parses, or null; reads from the newest name back, not every file. */
export function newestRootCheckpoint(root: string): Checkpoint | null {
  const entries = listCheckpointDir(root) ?? [];
  for (let i = entries.length - 1; i >= 0; i -= 1) {
    const item = readDirEntry(root, entries[i] as Dirent);
    if ('checkpoint' in item) return item.checkpoint;
  }
  return null;
}

/**
 * Sign the ledger's head with the root key and publish it under HOT/ledger/checkpoints/ (atomically). Null for a
 * root without a root key (bootstrapped before checkpoints) or an empty ledger. A head already checkpointed is
 * not signed again.
 */
export function writeRootCheckpoint(
  root: string,
  ledger: Ledger,
  options: { now?: () => number } = {},
): WrittenCheckpoint | null {
  return writeRootCheckpointOf(root, () => checkpointHead(ledger), options);
}

/**
 * writeRootCheckpoint for a head read elsewhere (the PostgreSQL chain a root's gateway runs on): the root key signs
 * it into this root's checkpoint directory, where gate G4 checks it against that chain. `head` is read only when
 * the root has a key.
 */
export function writeRootCheckpointOf(
  root: string,
  readHead: () => CheckpointHead | null,
  options: { now?: () => number } = {},
): WrittenCheckpoint | null {
  const key = readTrustedRootKey(root);
  if (key === null) return null;
  const head = readHead();
  if (head === null) return null;
  const path = join(checkpointDir(root), checkpointFileName(head));
  try {
    const existing = parseJsonCheckpoint(readBounded(path, MAX_CHECKPOINT_BYTES, 'checkpoint'), path);
    if (existing.seq === head.seq && existing.hash === head.hash && existing.key_id === key.key_id)
      return { checkpoint: existing, path, written: false };
  } catch {
    // Absent (the usual case) or unusable: sign afresh and replace it.
  }
  return publish(root, signCheckpoint(head, key, new Date((options.now ?? Date.now)())));
}

/** Every checkpoint in the root that parses, as JSON Lines, to a file kept elsewhere (written atomically). */
export function exportRootCheckpoints(root: string, file: string): number {
  refuseLedgerAsOutput(rootPaths(root).ledgerFile, file, 'the checkpoints export');
  const valid = readRootCheckpoints(root).flatMap((item) => ('checkpoint' in item ? [item.checkpoint] : []));
  writeFileAtomic(file, valid.map((cp) => `${JSON.stringify(cp)}\n`).join(''));
  return valid.length;
}
