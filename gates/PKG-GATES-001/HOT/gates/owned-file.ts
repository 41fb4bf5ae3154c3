import { closeSync, constants, fstatSync, lstatSync, openSync, readSync } from 'node:fs';
import { isGovernedFilePath } from '../kernel/root/layout.js';

/** Why an owned file could not be hashed; 'missing' is G0's finding, every other reason is a FAIL. */
export type OwnedReadProblem = 'missing' | 'not a governed path' | 'a symlink' | 'a directory' | 'a special file (FIFO, socket or device)' | 'unreadable';

/**
 * Read up to `limit` bytes of the owned file `relPath` into `buffer`: the count read, or why it could not
 * be read. The type is checked with lstat before anything is opened (opening a FIFO blocks until a writer
 * comes), the path must be a governed path inside the root (a registry row is untrusted input), and the
 * open refuses a link swapped in after the lstat.
 */
export function readOwnedFile(root: string, relPath: string, buffer: Buffer, limit: number): number | OwnedReadProblem {
  if (!isGovernedFilePath(relPath)) return 'not a governed path';
  const path = `${root}/${relPath}`;
  let stat;
  try {
    stat = lstatSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR' ? 'missing' : 'unreadable';
  }
  if (stat.isSymbolicLink()) return 'a symlink';
  if (stat.isDirectory()) return 'a directory';
  if (!stat.isFile()) return 'a special file (FIFO, socket or device)';
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return 'unreadable';
  }
  try {
    if (!fstatSync(fd).isFile()) return 'a special file (FIFO, socket or device)';
    let length = 0;
    while (length < limit) {
      const n = readSync(fd, buffer, length, limit - length, null);
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
