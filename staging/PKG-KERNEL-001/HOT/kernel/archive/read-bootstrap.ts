import { validateBootstrapPlan, type BootstrapPlan } from '../manifest/bootstrap.js';
import { CpError } from '../errors.js';
import { parseIntegrity } from './sri.js';
import { resolveLimits, type ArchiveLimits } from './limits.js';
import type { CatalogSpec, DeclaredMember } from './members.js';
import { streamArchive } from './stream.js';

export const BOOTSTRAP_MEMBER = 'bootstrap.json';

export interface BootstrapArchive {
  plan: BootstrapPlan;
  planBytes: Buffer;
  /** `packages/<file>` and `genesis/<path>` -> bytes; digest and size verified against bootstrap.json. */
  packages: Map<string, Buffer>;
  /** Top-level README.md/INSTALL.md and installer entry *.js. */
  extras: Map<string, Buffer>;
  /** SRI of CP_BOOTSTRAP's own bytes. */
  integrity: string;
}

/** CP_BOOTSTRAP holds the package archives (the largest part); allow them room. */
export const BOOTSTRAP_LIMITS: Partial<ArchiveLimits> = {
  maxMembers: 2_000,
  maxTotalBytes: 1024 * 1024 * 1024,
  maxMemberBytes: 512 * 1024 * 1024,
};

function parsePlan(bytes: Buffer): BootstrapPlan {
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    throw new CpError('ERR_BOOTSTRAP_INVALID', `bootstrap.json is not JSON: ${(error as Error).message}`, {
      hint: 'rebuild CP_BOOTSTRAP with `cplane build`',
      details: { errors: [{ pointer: '', message: 'not JSON' }] },
      cause: error,
    });
  }
  return validateBootstrapPlan(value);
}

const bootstrapSpec: CatalogSpec<BootstrapPlan> = {
  member: BOOTSTRAP_MEMBER,
  parse(bytes) {
    const plan = parsePlan(bytes);
    const declared = new Map<string, DeclaredMember>(
      plan.packages.map((p) => [p.file, { integrity: parseIntegrity(p.integrity, p.file), size: p.size }]),
    );
    for (const file of plan.genesis.files)
      declared.set(`genesis/${file.path}`, { sha256: file.sha256, size: file.size });
    return { value: plan, declared };
  },
  allowUndeclared: (name) => !name.includes('/') && /\.(md|js)$/.test(name),
  missingHint: 'CP_BOOTSTRAP carries bootstrap.json at its top level',
};

/**
 * Read CP_BOOTSTRAP with the same refusals as a package archive: each package archive must be
 * declared in bootstrap.json and match its integrity and size. Nothing is written.
 */
export async function readBootstrapArchive(
  path: string,
  opts: { limits?: Partial<ArchiveLimits> } = {},
): Promise<BootstrapArchive> {
  const read = await streamArchive(path, resolveLimits({ ...BOOTSTRAP_LIMITS, ...opts.limits }), bootstrapSpec);
  return {
    plan: read.value,
    planBytes: read.catalogBytes,
    packages: read.files,
    extras: read.extras,
    integrity: read.integrity,
  };
}
