import { closeSync, constants, fstatSync, openSync, type Stats } from 'node:fs';

/** What a file is, as a noun for a message ("is a FIFO, not a regular file"). */
export function fileKind(stat: Stats): string {
  if (stat.isFile()) return 'regular file';
  if (stat.isDirectory()) return 'directory';
  if (stat.isSymbolicLink()) return 'symlink';
  if (stat.isFIFO()) return 'FIFO';
  if (stat.isSocket()) return 'socket';
  if (stat.isCharacterDevice()) return 'character device';
  if (stat.isBlockDevice()) return 'block device';
  return 'special file';
}

/** An open regular file, or what was found in its place (already closed). */
export type OpenedFile = { fd: number; stat: Stats } | { fd: null; kind: string };

/**
 * Opens `path` for reading if it is a regular file. The type is judged on the open descriptor, so nothing can be
 * swapped in between the check and the read. O_NONBLOCK: opening a FIFO that has no writer would otherwise wait
 * in open(2) forever (for a regular file it changes nothing); `noFollow` refuses a symlink, which the open reports
 * as ELOOP. Errors of the open itself (ENOENT, EACCES, ELOOP, …) are thrown as they come, for the caller to word.
 */
export function openRegularFile(path: string, options: { noFollow?: boolean } = {}): OpenedFile {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | (options.noFollow ? constants.O_NOFOLLOW : 0));
  let stat: Stats;
  try {
    stat = fstatSync(fd);
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  if (stat.isFile()) return { fd, stat };
  closeSync(fd);
  return { fd: null, kind: fileKind(stat) };
}
