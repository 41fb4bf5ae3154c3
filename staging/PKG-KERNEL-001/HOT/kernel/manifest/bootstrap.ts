import satisfies from 'semver/functions/satisfies.js';
import { CpError, quote } from '../errors.js';
import type { ManifestDependency } from './manifest.js';
import { installOrder } from './order.js';
import { unsafePathReason } from './paths.js';
import { validateBootstrapSchema } from './compiled-validators.js';
import { schemaCheck, type SchemaIssue } from './schema-issues.js';

/** One archive in CP_BOOTSTRAP, pinned by the digest of its bytes. */
export interface BootstrapPackage {
  package_id: string;
  version: string;
  /** Path inside CP_BOOTSTRAP: `packages/<package_id>-<version>.tar.gz`. */
  file: string;
  integrity: string;
  size: number;
  layer: 0 | 1 | 2 | 3;
  dependencies: ManifestDependency[];
}

/** One file of the genesis installer: a layer-0 package's asset, shipped unpacked at `genesis/<path>`. */
export interface BootstrapGenesisFile {
  path: string;
  package_id: string;
  sha256: string;
  size: number;
}

/** The layer-0 kernel's installer as CP_BOOTSTRAP carries it: the module genesis runs and what it loads. */
export interface BootstrapGenesis {
  entry: string;
  files: BootstrapGenesisFile[];
}

/** SPEC §3.3: bootstrap.json. `packages` is listed in install order; `install_order` repeats the ids. */
export interface BootstrapPlan {
  schema_version: string;
  bootstrap_version: string;
  packages: BootstrapPackage[];
  install_order: string[];
  genesis: BootstrapGenesis;
}

const check = schemaCheck(validateBootstrapSchema);

function invalid(issues: SchemaIssue[]): CpError {
  const first = issues[0] as SchemaIssue;
  return new CpError(
    'ERR_BOOTSTRAP_INVALID',
    `bootstrap.json is invalid: ${first.pointer || '/'} ${first.message}${issues.length > 1 ? ` (and ${issues.length - 1} more)` : ''}`,
    {
      hint: 'rebuild CP_BOOTSTRAP with `cplane build`; do not edit bootstrap.json by hand',
      details: { errors: issues.map(({ pointer, message }) => ({ pointer, message })) },
    },
  );
}

/** Validate an untrusted bootstrap.json value, including that its order is the one installOrder gives. */
export function validateBootstrapPlan(value: unknown): BootstrapPlan {
  const issues = check(value);
  if (issues.length > 0) throw invalid(issues);
  const plan = value as BootstrapPlan;
  const listed = plan.packages.map((p) => p.package_id);
  let expected: string[];
  try {
    expected = installOrder(plan.packages).map((p) => p.package_id);
  } catch (error) {
    throw invalid([{ pointer: '/packages', message: (error as Error).message, keyword: 'semantic' }]);
  }
  const same = (a: string[], b: string[]): boolean => a.length === b.length && a.every((id, i) => id === b[i]);
  if (!same(listed, plan.install_order) || !same(expected, listed)) {
    throw invalid([{ pointer: '/install_order', message: `expected ${expected.join(', ')}`, keyword: 'semantic' }]);
  }
  const versions = new Map(plan.packages.map((p) => [p.package_id, p.version]));
  plan.packages.forEach((p, i) => {
    p.dependencies.forEach((dep, j) => {
      const have = versions.get(dep.package_id);
      if (have === undefined || !satisfies(have, dep.version)) {
        throw invalid([
          {
            pointer: `/packages/${i}/dependencies/${j}`,
            message: `${p.package_id} needs ${dep.package_id} ${dep.version}, the bootstrap has ${have ?? 'none'}`,
            keyword: 'semantic',
          },
        ]);
      }
    });
    if (p.file !== `packages/${p.package_id}-${p.version}.tar.gz`)
      throw invalid([
        {
          pointer: `/packages/${i}/file`,
          message: `expected packages/${p.package_id}-${p.version}.tar.gz`,
          keyword: 'semantic',
        },
      ]);
  });
  checkGenesis(plan);
  return plan;
}

/** Genesis files are safe paths, each once, each from a layer-0 package; the entry is one of them. */
function checkGenesis(plan: BootstrapPlan): void {
  const layer0 = new Set(plan.packages.filter((p) => p.layer === 0).map((p) => p.package_id));
  const seen = new Set<string>();
  plan.genesis.files.forEach((file, i) => {
    const reason = unsafePathReason(file.path);
    const problem =
      reason ??
      (seen.has(file.path)
        ? 'listed twice'
        : layer0.has(file.package_id)
          ? null
          : `${file.package_id} is not a layer-0 package of this bootstrap`);
    if (problem !== null)
      throw invalid([
        { pointer: `/genesis/files/${i}`, message: `${quote(file.path)}: ${problem}`, keyword: 'semantic' },
      ]);
    seen.add(file.path);
  });
  if (!seen.has(plan.genesis.entry))
    throw invalid([
      {
        pointer: '/genesis/entry',
        message: `${quote(plan.genesis.entry)} is not one of the genesis files`,
        keyword: 'semantic',
      },
    ]);
}

/** The plan for a set of built archives: ordered by installOrder (which refuses cycles). */
export function makeBootstrapPlan(
  bootstrapVersion: string,
  packages: readonly BootstrapPackage[],
  genesis: BootstrapGenesis,
): BootstrapPlan {
  const ordered = installOrder(packages);
  return {
    schema_version: '1.0',
    bootstrap_version: bootstrapVersion,
    packages: ordered,
    install_order: ordered.map((p) => p.package_id),
    genesis,
  };
}
