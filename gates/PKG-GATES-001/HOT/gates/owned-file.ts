import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { isGovernedFilePath } from '#kernel/root/governed-file-path.js';

/** Why an owned file could not be hashed; 'missing' is G0's finding, every other reason is a FAIL. */
export type OwnedReadProblem =
  | 'missing'
  | 'not a governed path'
  | 'a symlink'
  | 'a directory'
  | 'a special file (FIFO, socket or device)'
  | 'unreadable';

/**
 * Read up to `limit` bytes of the owned file `relPath` into `buffer`: the count read, or why it could not
 * be read. The path must be a governed path inside the root (a registry row is untrusted input); the open
 * never follows a link and never blocks on a FIFO, and nothing but a regular file is read.
 */
export function readOwnedFile(root: string, relPath: string, buffer: Buffer, limit: number): number | OwnedReadProblem {
  if (!isGovernedFilePath(relPath)) return 'not a governed path';
  const path = `${root}/${relPath}`;
  let fd: number;
  try {
    // O_NOFOLLOW refuses a link (ELOOP) and O_NONBLOCK keeps a FIFO from blocking the open; fstat then says
    // what was opened. No lstat first: it was the costliest call of this gate, and the open is as safe.
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return 'missing';
    return code === 'ELOOP' ? 'a symlink' : 'unreadable';
  }
  try {
    const stat = fstatSync(fd);
    if (stat.isDirectory()) return 'a directory';
    if (!stat.isFile()) return 'a special file (FIFO, socket or device)';
    // The bytes the file holds (up to the limit), without a last read that only finds its end.
    const want = Math.min(limit, stat.size);
    let length = 0;
    while (length < want) {
      const n = readSync(fd, buffer, length, want - length, null);
      if (n === 0) break;
      length += n;
    }
    return length;
  } catch {
    return 'unreadable';
  } finally {
    closeSync(fd);
  }
}
