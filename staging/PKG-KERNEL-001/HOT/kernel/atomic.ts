import { closeSync, fsyncSync, openSync, renameSync, writeSync, rmSync } from 'node:fs';
import { dirname, basename, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { envError } from './env-errors.js';
import { CpError, show } from './errors.js';

/** Write a file atomically: temp file in the same directory, fsync, rename, fsync the directory. */
export function writeFileAtomic(path: string, data: string | Uint8Array): void {
  writeFileAtomicWith(path, (write) => write(data));
}

/**
 * The same protocol for content produced in pieces (a large export): `produce` writes chunks; the file
 * appears at `path` only once everything was written and flushed, and a throw leaves nothing behind.
 */
export function writeFileAtomicWith<T>(path: string, produce: (write: (chunk: string | Uint8Array) => void) => T): T {
  try {
    return writeAtomic(path, produce);
  } catch (error) {
    throw envError(error, path, 'writing') ?? error;
  }
}

function writeAtomic<T>(path: string, produce: (write: (chunk: string | Uint8Array) => void) => T): T {
  const tmp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  let fd: number;
  try {
    fd = openSync(tmp, 'wx', 0o644);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR') throw error;
    throw new CpError('ERR_OUTPUT_DIR_MISSING', `cannot write ${show(path, 240)}: its directory does not exist`, {
      hint: 'create the directory first, or name a file in an existing one',
      details: { path },
      cause: error,
    });
  }
  let result: T;
  try {
    result = produce((chunk) => {
      const buf = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
      let off = 0;
      while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
    });
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw err;
  }
  closeSync(fd);
  renameSync(tmp, path);
  fsyncDir(dirname(path));
  return result;
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
