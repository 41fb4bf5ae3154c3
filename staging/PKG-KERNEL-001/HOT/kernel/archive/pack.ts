import { gzipSync } from 'node:zlib';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { writeFileAtomic } from '../atomic.js';
import { CpError, show } from '../errors.js';
import { unsafePathReason } from '../manifest/paths.js';
import { integrityOf } from './integrity.js';
import { END_OF_ARCHIVE, fileHeader, padding } from './ustar.js';

export interface PackFile {
  path: string;
  data: Buffer;
  /** Defaults to 0755 under HOT/scripts/, 0644 elsewhere. */
  mode?: number;
}

function defaultMode(path: string): number {
  return path.startsWith('HOT/scripts/') ? 0o755 : 0o644;
}

/** Top-level members (manifest.json, signature.json, bootstrap.json) first, so readers meet them before assets. */
function packOrder(a: PackFile, b: PackFile): number {
  const rank = (p: string): number => (p.includes('/') ? 1 : 0);
  return rank(a.path) - rank(b.path) || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
}

function checkFiles(files: readonly PackFile[]): void {
  const seen = new Set<string>();
  for (const file of files) {
    const unsafe = unsafePathReason(file.path);
    if (unsafe)
      throw new CpError('ERR_ARCHIVE_UNSAFE_PATH', `cannot pack ${show(file.path)}: ${unsafe}`, {
        hint: 'pack root-relative paths such as HOT/kernel/x.js',
        details: { path: file.path },
      });
    if (seen.has(file.path))
      throw new CpError('ERR_ARCHIVE_DUPLICATE_MEMBER', `cannot pack ${show(file.path)} twice`, {
        hint: 'each path may appear once in an archive',
        details: { path: file.path },
      });
    seen.add(file.path);
  }
}

/** The uncompressed tar stream: sorted entries, mtime 0, uid/gid 0, empty owner names, fixed modes. */
export function tarBytes(files: readonly PackFile[]): Buffer {
  checkFiles(files);
  const parts: Buffer[] = [];
  for (const file of [...files].sort(packOrder)) {
    parts.push(
      fileHeader(file.path, file.data.length, file.mode ?? defaultMode(file.path)),
      file.data,
      padding(file.data.length),
    );
  }
  parts.push(END_OF_ARCHIVE);
  return Buffer.concat(parts);
}

/**
 * gzip without a name or time; the OS byte is set to 255 ("unknown") because zlib builds disagree on it.
 * The deflate stream itself is the one this Node's zlib produces.
 */
export function gzipDeterministic(data: Buffer): Buffer {
  const gz = gzipSync(data, { level: 9 });
  gz[9] = 0xff;
  return gz;
}

/** Pack files into a deterministic .tar.gz, published atomically. Same input, same bytes (and SRI). */
export async function packArchive(files: PackFile[], outPath: string): Promise<{ integrity: string; size: number }> {
  const gz = gzipDeterministic(tarBytes(files));
  mkdirSync(dirname(outPath), { recursive: true });
  writeFileAtomic(outPath, gz);
  return { integrity: integrityOf(gz), size: gz.length };
}
