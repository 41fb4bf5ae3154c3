// The signed root several repository tests attack: a publisher key, a signed build of every package and
// CP_BOOTSTRAP, and a root bootstrapped from it that trusts the key — the real install path, nothing waived.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO } from '../../scripts/lib/repo.js';

export const cplane = join(REPO, 'bin', 'cplane.js');

function mustCplane(args: string[]): string {
  const r = spawnSync(process.execPath, [cplane, ...args], { cwd: REPO, encoding: 'utf8' });
  assert.equal(r.status, 0, `cplane ${args.join(' ')}\n${r.stderr}${r.stdout}`);
  return r.stdout;
}

export interface SignedRoot {
  /** work/keys: cplane-signing.key and cplane-signing.pub. */
  keys: string;
  /** work/packages: the signed package archives. */
  packages: string;
  bootstrapFile: string;
}

/** Build into `work` (keys/, packages/, bootstrap/) and bootstrap `root` from it, trusting the key. */
export function bootstrapSignedRoot(work: string, root: string): SignedRoot {
  const keys = join(work, 'keys');
  const packages = join(work, 'packages');
  mustCplane(['keys', 'generate', '--out', keys]);
  const built = JSON.parse(
    mustCplane([
      'build',
      '--out',
      packages,
      '--bootstrap-out',
      join(work, 'bootstrap'),
      '--sign-key',
      join(keys, 'cplane-signing.key'),
      '--json',
    ]),
  ) as { bootstrap: { file: string } };
  mustCplane(['bootstrap', built.bootstrap.file, '--root', root, '--trust', join(keys, 'cplane-signing.pub')]);
  return { keys, packages, bootstrapFile: built.bootstrap.file };
}
