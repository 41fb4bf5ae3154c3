import type { Warning } from '../catalogue/define.js';
import { show } from '../errors.js';
import { parseManifest, type Manifest } from '../manifest/manifest.js';
import type { PackageSignature } from '../signing/signing.js';
import { parseSignature } from '../signing/signature-file.js';
import { parseIntegrity } from './sri.js';
import { resolveLimits, type ArchiveLimits } from './limits.js';
import type { CatalogSpec, DeclaredMember } from './members.js';
import { streamArchive } from './stream.js';

export type { ArchiveLimits } from './limits.js';
export type { PackageSignature } from '../signing/signing.js';

export const MANIFEST_MEMBER = 'manifest.json';
export const SIGNATURE_MEMBER = 'signature.json';

export interface PackageArchive {
  manifest: Manifest;
  manifestBytes: Buffer;
  warnings: Warning[];
  /** From member `signature.json`, if present. */
  signature: PackageSignature | null;
  /** Asset path -> bytes; digest and size already verified against the manifest. */
  files: Map<string, Buffer>;
  /** SRI (`sha512-<base64>`) of the archive file's bytes, computed as they were read. */
  integrity: string;
}

export interface ReadArchiveOptions {
  limits?: Partial<ArchiveLimits>;
  /** Unknown manifest fields are errors when strict (the default), warnings otherwise. */
  strict?: boolean;
  /** The SRI the archive must have (from an index or bootstrap.json); checked while it is read. */
  integrity?: string;
}

function packageSpec(strict: boolean): CatalogSpec<{ manifest: Manifest; warnings: Warning[] }> {
  return {
    member: MANIFEST_MEMBER,
    parse(bytes) {
      const parsed = parseManifest(bytes, { strict });
      return {
        value: parsed,
        declared: new Map<string, DeclaredMember>(parsed.manifest.assets.map((a) => [a.path, a])),
      };
    },
    allowUndeclared: (name) => name === SIGNATURE_MEMBER,
    missingHint: 'a package archive carries manifest.json (or ./manifest.json) at its top level',
  };
}

/** Read a package .tar.gz, refusing everything a hostile archive can do (SPEC §3.6), without writing anything. */
export async function readPackageArchive(path: string, opts: ReadArchiveOptions = {}): Promise<PackageArchive> {
  const expected = opts.integrity === undefined ? undefined : parseIntegrity(opts.integrity, `archive ${show(path)}`);
  const read = await streamArchive(path, resolveLimits(opts.limits), packageSpec(opts.strict ?? true), expected);
  const signatureBytes = read.extras.get(SIGNATURE_MEMBER);
  return {
    manifest: read.value.manifest,
    manifestBytes: read.catalogBytes,
    warnings: read.value.warnings,
    signature: signatureBytes ? parseSignature(signatureBytes, path) : null,
    files: read.files,
    integrity: read.integrity,
  };
}
