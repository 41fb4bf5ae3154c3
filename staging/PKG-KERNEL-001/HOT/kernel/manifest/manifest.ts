// semver's functions one by one: its index loads all ~50 of its modules, and every kernel process pays for that.
import semverValid from 'semver/functions/valid.js';
import validRange from 'semver/ranges/valid.js';
import { type Warning, warning } from '../catalogue/define.js';
import { CpError, show } from '../errors.js';
import { foldedPath, isReservedPath, unsafePathReason } from './paths.js';
import { validateManifestSchema } from './compiled-validators.js';
import { schemaCheck, type SchemaIssue } from './schema-issues.js';

export type AssetClassification = 'kernel' | 'script' | 'schema' | 'config' | 'test' | 'doc' | 'registry' | 'runtime';

export interface ManifestAsset {
  path: string;
  sha256: string;
  size: number;
  classification: AssetClassification;
}

export interface ManifestDependency {
  package_id: string;
  /** A semver range. */
  version: string;
}

export interface ManifestPlatform {
  os?: string;
  cpu?: string;
  node_abi?: string;
}

/** SPEC §3.1: the shape of manifest.json (snake_case, as persisted). */
export interface Manifest {
  package_id: string;
  version: string;
  schema_version: string;
  title: string;
  description: string;
  layer: 0 | 1 | 2 | 3;
  plane_id: string;
  dependencies: ManifestDependency[];
  replaces: string[];
  platform?: ManifestPlatform;
  assets: ManifestAsset[];
}

export const MANIFEST_SCHEMA_VERSION = '1.0';

const checkSchema = schemaCheck(validateManifestSchema);

/** Rules JSON Schema cannot say: semver, unique and safe paths, no file beneath another, no self-reference. */
function semanticIssues(m: Manifest): SchemaIssue[] {
  const issues: SchemaIssue[] = [];
  const add = (pointer: string, message: string): void => {
    issues.push({ pointer, message, keyword: 'semantic' });
  };
  if (semverValid(m.version) === null) add('/version', `${show(m.version)} is not a semver version`);
  const depIds = new Set<string>();
  m.dependencies.forEach((dep, i) => {
    if (validRange(dep.version) === null)
      add(`/dependencies/${i}/version`, `${show(dep.version)} is not a semver range`);
    if (dep.package_id === m.package_id) add(`/dependencies/${i}/package_id`, 'a package cannot depend on itself');
    if (depIds.has(dep.package_id))
      add(`/dependencies/${i}/package_id`, `duplicate dependency ${show(dep.package_id)}`);
    depIds.add(dep.package_id);
  });
  m.replaces.forEach((id, i) => {
    if (id === m.package_id) add(`/replaces/${i}`, 'a package cannot replace itself');
  });
  const seen = new Map<string, string>();
  m.assets.forEach((asset, i) => {
    const unsafe = unsafePathReason(asset.path);
    if (unsafe) add(`/assets/${i}/path`, `${show(asset.path)}: ${unsafe}`);
    else if (isReservedPath(asset.path))
      add(`/assets/${i}/path`, `${show(asset.path)} is root state that no package may ship`);
    const key = foldedPath(asset.path);
    const earlier = seen.get(key);
    if (earlier !== undefined)
      add(
        `/assets/${i}/path`,
        `${show(asset.path)} duplicates ${show(earlier)}${earlier === asset.path ? '' : ' (differs only in case)'}`,
      );
    else seen.set(key, asset.path);
  });
  // A file cannot also be a directory on the way to another file: staging one would fail half-way (EEXIST).
  m.assets.forEach((asset, i) => {
    const key = foldedPath(asset.path);
    for (let at = key.indexOf('/'); at !== -1; at = key.indexOf('/', at + 1)) {
      const file = seen.get(key.slice(0, at));
      if (file !== undefined) {
        add(`/assets/${i}/path`, `${show(asset.path)} lies beneath ${show(file)}, which is a file`);
        break;
      }
    }
  });
  return issues;
}

export interface ValidateManifestOptions {
  /** Unknown fields are errors when strict (the default), warnings otherwise. */
  strict?: boolean;
}

/** Validate an untrusted manifest value. Throws ERR_MANIFEST_INVALID listing every error with its JSON pointer. */
export function validateManifest(
  value: unknown,
  opts: ValidateManifestOptions = {},
): { manifest: Manifest; warnings: Warning[] } {
  const strict = opts.strict ?? true;
  const schemaIssues = checkSchema(value);
  const warnings = strict
    ? []
    : schemaIssues
        .filter((i) => i.keyword === 'additionalProperties')
        .map((i) => warning('MANIFEST_UNKNOWN_FIELD', `${i.pointer}: ${i.message}`));
  let errors = strict ? schemaIssues : schemaIssues.filter((i) => i.keyword !== 'additionalProperties');
  if (errors.length === 0) errors = semanticIssues(value as Manifest);
  if (errors.length > 0) {
    const first = errors[0] as SchemaIssue;
    const id = (value as { package_id?: unknown } | null)?.package_id;
    throw new CpError(
      'ERR_MANIFEST_INVALID',
      `manifest${typeof id === 'string' ? ` of ${show(id)}` : ''} is invalid: ${first.pointer || '/'} ${first.message}${errors.length > 1 ? ` (and ${errors.length - 1} more)` : ''}`,
      {
        hint: 'fix the listed fields (details.errors holds a JSON pointer for each); see HOT/schemas/manifest.schema.json',
        details: { errors: errors.map(({ pointer, message }) => ({ pointer, message })) },
      },
    );
  }
  return { manifest: value as Manifest, warnings };
}

/** Parse manifest.json bytes (JSON errors are reported as ERR_MANIFEST_INVALID at pointer ""). */
export function parseManifest(
  bytes: Uint8Array,
  opts: ValidateManifestOptions = {},
): { manifest: Manifest; warnings: Warning[] } {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch (error) {
    throw new CpError('ERR_MANIFEST_INVALID', `manifest.json is not JSON: ${(error as Error).message}`, {
      hint: 'manifest.json must be a UTF-8 JSON object',
      details: { errors: [{ pointer: '', message: 'not JSON' }] },
      cause: error,
    });
  }
  return validateManifest(value, opts);
}
