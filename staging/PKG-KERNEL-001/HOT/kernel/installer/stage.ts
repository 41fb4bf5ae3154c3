import { createHash } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { PackageArchive } from '../archive/read.js';
import { CpError, show } from '../errors.js';
import { forEachInFlight, fsyncAll } from './durable.js';
import type { Journal } from './journal.js';

/** Files under HOT/scripts/ are entry points and stay executable. */
export function fileMode(path: string): number {
  return path.startsWith('HOT/scripts/') ? 0o755 : 0o644;
}

/**
 * Step 6: write every file of the plan into the transaction's staging directory, hashing the bytes as
 * they are written and comparing with the manifest, then make them durable (the journal written next
 * relies on them). On any failure the staging directory is removed.
 */
export async function stageFiles(root: string, journal: Journal, archive: PackageArchive): Promise<void> {
  const base = join(root, journal.staging_dir);
  try {
    mkdirSync(base, { recursive: true });
    const dirs = new Set<string>();
    for (const file of journal.place) {
      if (!archive.files.has(file.path)) {
        throw new CpError('ERR_ASSET_MISSING', `${show(file.path)} is declared but its bytes are missing`, { hint: 'rebuild the archive', details: { path: file.path } });
      }
      const dir = dirname(join(base, file.path));
      if (!dirs.has(dir)) {
        mkdirSync(dir, { recursive: true });
        dirs.add(dir);
      }
    }
    await forEachInFlight(journal.place, 16, (file) => writeVerified(join(base, file.path), archive.files.get(file.path) as Buffer, file));
    await fsyncAll(dirs);
  } catch (error) {
    rmSync(base, { recursive: true, force: true });
    throw error;
  }
}

/** Write, hash what was written, flush, then compare with the manifest: one open per file. */
async function writeVerified(target: string, data: Buffer, file: { path: string; sha256: string; size: number }): Promise<void> {
  const hash = createHash('sha256');
  const handle = await open(target, 'wx', fileMode(file.path));
  let written = 0;
  try {
    while (written < data.length) {
      const { bytesWritten } = await handle.write(data, written, data.length - written);
      hash.update(data.subarray(written, written + bytesWritten));
      written += bytesWritten;
    }
    await handle.sync();
  } finally {
    await handle.close();
  }
  const digest = `sha256:${hash.digest('hex')}`;
  if (digest !== file.sha256 || written !== file.size) {
    throw new CpError('ERR_DIGEST_MISMATCH', `${show(file.path)} wrote ${written} bytes with ${digest}; the manifest says ${file.size} bytes with ${file.sha256}`, {
      hint: 'the archive is corrupt or was tampered with; fetch it again', details: { path: file.path, expected: file.sha256, actual: digest },
    });
  }
}
