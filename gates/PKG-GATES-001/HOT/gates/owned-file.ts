import { closeSync, readSync } from 'node:fs';
import { openRegularFile } from '#kernel/regular-file.js';
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
  let opened: ReturnType<typeof openRegularFile>;
  try {
    // The open refuses a link (ELOOP) and says what it found. No lstat first: it was the costliest call of this
    // gate, and the open is as safe.
    opened = openRegularFile(path, { noFollow: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return 'missing';
    return code === 'ELOOP' ? 'a symlink' : 'unreadable';
  }
  if (opened.fd === null)
    return opened.kind === 'directory' ? 'a directory' : 'a special file (FIFO, socket or device)';
  const { fd, stat } = opened;
  try {
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
