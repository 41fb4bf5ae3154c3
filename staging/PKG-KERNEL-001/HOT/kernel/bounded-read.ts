import { isUtf8 } from 'node:buffer';
import { closeSync, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import { CpError, type ErrorCode, show } from './errors.js';
import { envError } from './env-errors.js';
import { openRegularFile } from './regular-file.js';

/** Ceilings for files cplane reads whole; each is far above any honest file of its kind. */
export const READ_LIMITS = Object.freeze({
  key: 64 * 1024,
  config: 1024 * 1024,
  state: 16 * 1024 * 1024,
  promptSpec: 16 * 1024 * 1024,
  promptFile: 16 * 1024 * 1024,
  importLine: 16 * 1024 * 1024,
});

export interface BoundedReadOptions {
  /** Largest accepted size in bytes. */
  maxBytes: number;
  /** What the file is, for messages ("the budget config"). */
  what: string;
  /** The code when the file cannot be opened or read for a reason that is not environmental (ENOENT, EISDIR). */
  unreadableCode?: ErrorCode;
  unreadableHint?: string;
  /**
   * Only a regular file (a config): opened without blocking, so a FIFO in its place with no writer is refused
   * instead of hanging the process in open(2), and a device is refused before it is read.
   */
  regularFile?: boolean;
}

/**
 * Read a whole file, refusing one larger than `maxBytes` before reading it (a multi-gigabyte or sparse file
 * costs one fstat), and never reading past the limit even when the size lies (a FIFO, /dev/zero, a growing file).
 */
export function readFileBounded(path: string, options: BoundedReadOptions): Buffer {
  let fd: number;
  let stat: Stats | undefined;
  try {
    if (options.regularFile) {
      const opened = openRegularFile(path);
      if (opened.fd === null) throw new Error(`it is a ${opened.kind}, not a regular file`);
      ({ fd, stat } = opened);
    } else fd = openSync(path, 'r');
  } catch (error) {
    throw unreadable(error, path, options);
  }
  try {
    stat ??= fstatSync(fd);
    if (stat.isFile() && stat.size > options.maxBytes) throw tooLarge(path, options, stat.size);
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const buf = Buffer.allocUnsafe(Math.min(1024 * 1024, options.maxBytes + 1 - total));
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      total += n;
      chunks.push(buf.subarray(0, n));
      if (total > options.maxBytes) throw tooLarge(path, options, null);
    }
    return Buffer.concat(chunks, total);
  } catch (error) {
    if (error instanceof CpError) throw error;
    throw unreadable(error, path, options);
  } finally {
    closeSync(fd);
  }
}

/**
 * `readFileBounded` as UTF-8 text. Bytes that are not UTF-8 are refused, not decoded to U+FFFD: a config, key or
 * prompt read with its bytes replaced would be acted on as something its author never wrote.
 */
export function readTextBounded(path: string, options: BoundedReadOptions): string {
  const bytes = readFileBounded(path, options);
  if (isUtf8(bytes)) return bytes.toString('utf8');
  throw new CpError('ERR_INPUT_NOT_UTF8', `${options.what} ${show(path, 240)} is not UTF-8 text`, {
    hint: `save ${options.what} as UTF-8; nothing in it was used`,
    details: { path, size_bytes: bytes.length },
  });
}

function tooLarge(path: string, options: BoundedReadOptions, size: number | null): CpError {
  return new CpError(
    'ERR_INPUT_TOO_LARGE',
    `${options.what} ${show(path, 240)} is ${size === null ? 'more than' : `${size} bytes, over`} the limit of ${options.maxBytes} bytes`,
    {
      hint: `${options.what} is never that large: check the path; nothing was read past the limit`,
      details: { path, limit_bytes: options.maxBytes, ...(size === null ? {} : { size_bytes: size }) },
    },
  );
}

/** Why a file cannot be read: an environmental code (disk, permission) or the caller's own. */
export function unreadable(
  error: unknown,
  path: string,
  options: Pick<BoundedReadOptions, 'what' | 'unreadableCode' | 'unreadableHint'>,
): CpError {
  const env = envError(error, path, `reading ${options.what}`);
  if (env) return env;
  const reason = error instanceof Error ? error.message : String(error);
  return new CpError(
    options.unreadableCode ?? 'ERR_INPUT_UNREADABLE',
    `cannot read ${options.what} ${show(path, 240)}: ${reason}`,
    {
      hint: options.unreadableHint ?? 'check the path: it must be a readable file',
      details: { path },
      cause: error,
    },
  );
}
