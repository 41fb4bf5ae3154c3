import { CpError, show } from '../errors.js';
import type { Manifest } from '../manifest/manifest.js';
import { foldedPath } from '../manifest/paths.js';

/**
 * The files that change what Node resolves for code they sit next to: a `package.json` (its `type`,
 * `imports`, `exports`, `main`) or anything under a `node_modules` directory. Only two packages may ship
 * them: the runtime, whose HOT/node_modules/ tree is the third-party code every package imports, and
 * genesis, whose HOT/package.json makes the root's .js files ES modules.
 */
const ALLOWED: ReadonlyArray<{ package_id: string; allows: (path: string) => boolean }> = [
  { package_id: 'PKG-RUNTIME-001', allows: (path) => path.startsWith('HOT/node_modules/') },
  { package_id: 'PKG-GENESIS-001', allows: (path) => path === 'HOT/package.json' },
];

/** Case-folded: on a case-insensitive filesystem Node finds `Package.json` and `Node_Modules/` too. */
function changesResolution(path: string): boolean {
  const segments = foldedPath(path).split('/');
  return segments.at(-1) === 'package.json' || segments.slice(0, -1).includes('node_modules');
}

export function checkResolutionFiles(manifest: Manifest): void {
  const id = manifest.package_id;
  const bad = manifest.assets
    .map((a) => a.path)
    .filter((path) => changesResolution(path) && !ALLOWED.some((rule) => rule.package_id === id && rule.allows(path)));
  if (bad.length > 0) {
    throw new CpError(
      'ERR_ASSET_MODULE_RESOLUTION',
      `${id} ships ${bad.length} file(s) that would change module resolution for other packages' code: ${show(bad.slice(0, 5))}`,
      {
        hint: 'only the runtime package ships node_modules/ and package.json files (genesis ships HOT/package.json); depend on PKG-RUNTIME-001 instead',
        details: { package_id: id, paths: bad },
      },
    );
  }
}
