// The genesis installer CP_BOOTSTRAP carries unpacked under genesis/: the layer-0 kernel's installer entry
// and everything it loads, taken from the built layer-0 archives and pinned file by file in bootstrap.json.
// Genesis runs it straight from there, so a bootstrap unpacks nothing before the root exists.
import { GENESIS_DIR } from '../../bootstrap/entry/verify-genesis.js';
import { readPackageArchive, type PackFile } from '../../staging/PKG-KERNEL-001/HOT/kernel/archive/index.js';
import { CpError, show } from '../../staging/PKG-KERNEL-001/HOT/kernel/errors.js';
import type { BootstrapGenesis } from '../../staging/PKG-KERNEL-001/HOT/kernel/manifest/index.js';
import type { BuiltPackage } from './package.js';
import { ImportReach } from './reach.js';

/** The module genesis imports: it exports runInstallEntry. */
export const GENESIS_ENTRY = 'HOT/kernel/installer/entry.js';

interface LayerZeroFile {
  data: Buffer;
  package_id: string;
  sha256: string;
}

export async function genesisInstaller(
  layerZero: readonly BuiltPackage[],
): Promise<{ genesis: BootstrapGenesis; files: PackFile[] }> {
  const files = new Map<string, LayerZeroFile>();
  for (const pkg of layerZero) {
    const archive = await readPackageArchive(pkg.path);
    for (const asset of archive.manifest.assets) {
      const other = files.get(asset.path);
      if (other) {
        throw new CpError(
          'ERR_BUILD_GENESIS',
          `${other.package_id} and ${pkg.manifest.package_id} both ship ${show(asset.path)}`,
          {
            hint: 'layer-0 packages must not overlap: genesis runs their files side by side',
            details: { path: asset.path },
          },
        );
      }
      files.set(asset.path, {
        data: archive.files.get(asset.path) as Buffer,
        package_id: pkg.manifest.package_id,
        sha256: asset.sha256,
      });
    }
  }
  if (!files.has(GENESIS_ENTRY)) {
    throw new CpError('ERR_BUILD_GENESIS', `no layer-0 package ships ${GENESIS_ENTRY}`, {
      hint: 'the kernel package (layer 0) carries the installer',
      details: { layer_zero: layerZero.map((p) => p.manifest.package_id) },
    });
  }
  const reached = [
    ...new ImportReach(new Map([...files].map(([path, f]) => [path, f.data]))).from(GENESIS_ENTRY),
  ].sort();
  return {
    genesis: {
      entry: GENESIS_ENTRY,
      files: reached.map((path) => {
        const file = files.get(path) as LayerZeroFile;
        return { path, package_id: file.package_id, sha256: file.sha256, size: file.data.length };
      }),
    },
    files: reached.map((path) => ({
      path: `${GENESIS_DIR}/${path}`,
      data: (files.get(path) as LayerZeroFile).data,
      mode: 0o644,
    })),
  };
}
