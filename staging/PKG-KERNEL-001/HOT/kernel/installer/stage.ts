import { createHash } from 'node:crypto';
import { closeSync, fsyncSync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { PackageArchive } from '../archive/read.js';
import { fsyncDir } from '../atomic.js';
import { CpError, show } from '../errors.js';
import type { Journal } from './journal.js';

/** Files under HOT/scripts/ are entry points and stay executable. */
export function fileMode(path: string): number {
  return path.startsWith('HOT/scripts/') ? 0o755 : 0o644;
}

/**
 * Step 6: write every file of the plan into the transaction's staging directory, hashing the bytes as
 * they are written and comparing with the manifest. On any failure the staging directory is removed.
 */
export function stageFiles(root: string, journal: Journal, archive: PackageArchive): void {
  const base = join(root, journal.staging_dir);
  try {
    mkdirSync(base, { recursive: true });
    const dirs = new Set<string>();
    for (const file of journal.place) {
      const data = archive.files.get(file.path);
      if (!data) {
        throw new CpError('ERR_ASSET_MISSING', `${show(file.path)} is declared but its bytes are missing`, { hint: 'rebuild the archive', details: { path: file.path } });
      }
      const target = join(base, file.path);
      if (!dirs.has(dirname(target))) {
        mkdirSync(dirname(target), { recursive: true });
        dirs.add(dirname(target));
      }
      writeVerified(target, data, file);
    }
    for (const dir of dirs) fsyncDir(dir);
  } catch (error) {
    rmSync(base, { recursive: true, force: true });
    throw error;
  }
}

function writeVerified(target: string, data: Buffer, file: { path: string; sha256: string; size: number }): void {
  const hash = createHash('sha256');
  const fd = openSync(target, 'wx', fileMode(file.path));
  let written = 0;
  try {
    while (written < data.length) {
      const n = writeSync(fd, data, written, data.length - written);
      hash.update(data.subarray(written, written + n));
      written += n;
    }
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  const digest = `sha256:${hash.digest('hex')}`;
  if (digest !== file.sha256 || written !== file.size) {
    throw new CpError('ERR_DIGEST_MISMATCH', `${show(file.path)} wrote ${written} bytes with ${digest}; the manifest says ${file.size} bytes with ${file.sha256}`, {
      hint: 'the archive is corrupt or was tampered with; fetch it again', details: { path: file.path, expected: file.sha256, actual: digest },
    });
  }
}
