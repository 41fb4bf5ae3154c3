import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO } from '../lib/repo.js';

/** A CP_BOOTSTRAP built now from the current tree into `dir` (a bench never measures a stale build). */
export function freshBootstrap(dir: string): string {
  const built = spawnSync(
    process.execPath,
    [
      join(REPO, 'bin', 'cplane.js'),
      'build',
      '--out',
      join(dir, 'packages'),
      '--bootstrap-out',
      join(dir, 'bootstrap'),
      '--json',
    ],
    { encoding: 'utf8' },
  );
  if (built.status !== 0) throw new Error(`cplane build failed: ${built.stderr}`);
  return (JSON.parse(built.stdout) as { bootstrap: { file: string } }).bootstrap.file;
}
