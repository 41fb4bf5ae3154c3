import { createHash } from 'node:crypto';
import { closeSync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { PackageArchive } from '../archive/read.js';
import { CpError, show } from '../errors.js';
import { fsyncAll, syncFilesystem } from './durable.js';
import type { Journal } from './journal.js';

/** Files under HOT/scripts/ are entry points and stay executable. */
export function fileMode(path: string): number {
  return path.startsWith('HOT/scripts/') ? 0o755 : 0o644;
}

export interface StageOptions {
  /** From this many files up, one syncfs flushes the stage instead of an fsync per file; null: never. */
  syncfsFrom?: number | null;
  /** The syncfs to try (syncFilesystem); false sends the stage back to fsync per file. */
  syncfs?: (path: string) => boolean;
}

/** Below this, parallel fsyncs cost less than starting `sync`. */
const SYNCFS_FROM = 64;

/**
 * Step 6: write every file of the plan into the transaction's staging directory, hashing the bytes as
 * they are written and comparing with the manifest, then make them durable (the journal written next
 * relies on them). On any failure the staging directory is removed. The writes are synchronous: through
 * the thread pool each file costs several round trips and the batch takes 3-4x longer.
 */
export async function stageFiles(
  root: string,
  journal: Journal,
  archive: PackageArchive,
  options: StageOptions = {},
): Promise<void> {
  const base = join(root, journal.staging_dir);
  try {
    mkdirSync(base, { recursive: true });
    const dirs = new Set<string>([base]);
    const written: string[] = [];
    for (const file of journal.place) {
      const data = archive.files.get(file.path);
      if (data === undefined) {
        throw new CpError('ERR_ASSET_MISSING', `${show(file.path)} is declared but its bytes are missing`, {
          hint: 'rebuild the archive',
          details: { path: file.path },
        });
      }
      const target = join(base, file.path);
      if (!dirs.has(dirname(target))) {
        mkdirSync(dirname(target), { recursive: true });
        dirs.add(dirname(target));
      }
      writeVerified(target, data, file);
      written.push(target);
    }
    const from = options.syncfsFrom === undefined ? SYNCFS_FROM : options.syncfsFrom;
    const syncfs = options.syncfs ?? syncFilesystem;
    if (from === null || written.length < from || !syncfs(base)) await fsyncAll([...written, ...dirs]);
  } catch (error) {
    rmSync(base, { recursive: true, force: true });
    throw error;
  }
}

/** Write and hash what was written, then compare with the manifest: one open per file. */
function writeVerified(target: string, data: Buffer, file: { path: string; sha256: string; size: number }): void {
  const hash = createHash('sha256');
  const fd = openSync(target, 'wx', fileMode(file.path));
  let written = 0;
  try {
    while (written < data.length) {
      const bytes = writeSync(fd, data, written, data.length - written);
      hash.update(data.subarray(written, written + bytes));
      written += bytes;
    }
  } finally {
    closeSync(fd);
  }
  const digest = `sha256:${hash.digest('hex')}`;
  if (digest !== file.sha256 || written !== file.size) {
    throw new CpError(
      'ERR_DIGEST_MISMATCH',
      `${show(file.path)} wrote ${written} bytes with ${digest}; the manifest says ${file.size} bytes with ${file.sha256}`,
      {
        hint: 'the archive is corrupt or was tampered with; fetch it again',
        details: { path: file.path, expected: file.sha256, actual: digest },
      },
    );
  }
}
