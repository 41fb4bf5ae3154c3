import { closeSync, fsyncSync, lstatSync, openSync, renameSync, writeSync, rmSync } from 'node:fs';
import { dirname, basename, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { envError } from './env-errors.js';
import { fileKind } from './regular-file.js';
import { CpError, show } from './errors.js';

/** The mode of files holding recorded content (a ledger, an export, a spooled exchange): the owner's alone. */
export const PRIVATE_FILE_MODE = 0o600;

/**
 * Write a file atomically: temp file in the same directory, fsync, rename, fsync the directory. `mode` is the new
 * file's from its creation (a secret is never readable by others, not even until a chmod).
 */
export function writeFileAtomic(path: string, data: string | Uint8Array, options: { mode?: number } = {}): void {
  writeFileAtomicWith(path, (write) => write(data), options);
}

/**
 * The same protocol for content produced in pieces (a large export): `produce` writes chunks; the file
 * appears at `path` only once everything was written and flushed, and a throw leaves nothing behind.
 */
export function writeFileAtomicWith<T>(
  path: string,
  produce: (write: (chunk: string | Uint8Array) => void) => T,
  options: { mode?: number } = {},
): T {
  let temp: TempFile | undefined;
  try {
    temp = openTemp(path, options.mode);
    const result = produce(temp.write);
    temp.publish();
    return result;
  } catch (error) {
    temp?.discard();
    throw envError(error, path, 'writing') ?? error;
  }
}

/** The same for a producer that awaits its content (rows read from a database). */
export async function writeFileAtomicWithAsync<T>(
  path: string,
  produce: (write: (chunk: string | Uint8Array) => void) => Promise<T>,
  options: { mode?: number } = {},
): Promise<T> {
  let temp: TempFile | undefined;
  try {
    temp = openTemp(path, options.mode);
    const result = await produce(temp.write);
    temp.publish();
    return result;
  } catch (error) {
    temp?.discard();
    throw envError(error, path, 'writing') ?? error;
  }
}

interface TempFile {
  write(chunk: string | Uint8Array): void;
  /** fsync, rename over `path`, fsync the directory. */
  publish(): void;
  /** Close and remove it (a failed write leaves nothing behind); never throws. */
  discard(): void;
}

/**
 * The rename would replace whatever is at `path`: a directory fails with an uncoded EISDIR, and a link, a FIFO or a
 * device (`--out /dev/stdout`, `--out /dev/null` run as root) would be swapped for a regular file.
 */
function refuseNonFile(path: string): void {
  let stat: import('node:fs').Stats;
  try {
    stat = lstatSync(path);
  } catch {
    return; // absent, or a parent that is not a directory: creating the temp file reports it
  }
  if (stat.isFile()) return;
  throw new CpError(
    'ERR_OUTPUT_NOT_A_FILE',
    `cannot write ${show(path, 240)}: it is a ${fileKind(stat)}, which is never replaced`,
    {
      hint: 'name a new file, or a regular file to overwrite',
      details: { path },
    },
  );
}

function openTemp(path: string, mode = 0o644): TempFile {
  refuseNonFile(path);
  const tmp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  let fd: number;
  try {
    fd = openSync(tmp, 'wx', mode);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR') throw error;
    throw new CpError('ERR_OUTPUT_DIR_MISSING', `cannot write ${show(path, 240)}: its directory does not exist`, {
      hint: 'create the directory first, or name a file in an existing one',
      details: { path },
      cause: error,
    });
  }
  let open = true;
  return {
    write(chunk) {
      const buf = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
      let off = 0;
      while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
    },
    publish() {
      fsyncSync(fd);
      open = false;
      closeSync(fd);
      renameSync(tmp, path);
      fsyncDir(dirname(path));
    },
    discard() {
      if (open) {
        open = false;
        try {
          closeSync(fd);
        } catch {
          // already closed
        }
      }
      rmSync(tmp, { force: true });
    },
  };
}

export function fsyncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    // Some filesystems refuse fsync on directories; the rename itself is still atomic.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
