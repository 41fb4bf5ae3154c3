// manifest.template.json: every manifest field except `assets`, plus an optional `build` section that
// tells the build how to classify files and whether to add the lockfile's production dependencies.
import { existsSync, readFileSync } from 'node:fs';
import { CpError, isCpError, show } from '../../staging/PKG-KERNEL-001/HOT/kernel/errors.js';
import {
  compileSchema,
  validateManifest,
  type AssetClassification,
  type Manifest,
  type SchemaCheck,
} from '../../staging/PKG-KERNEL-001/HOT/kernel/manifest/index.js';

export interface ClassifyRule {
  /** Matches paths that start with this (a file path matches itself). */
  prefix?: string;
  /** Matches paths that end with this (e.g. `.json`). */
  suffix?: string;
  classification: AssetClassification;
}

export interface PackageTemplate {
  fields: Omit<Manifest, 'assets'>;
  rules: ClassifyRule[];
  runtimeFromLockfile: boolean;
}

const CLASSIFICATIONS = ['kernel', 'script', 'schema', 'config', 'test', 'doc', 'registry', 'runtime'];
const BUILD_SECTION_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    classify: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['classification'],
        minProperties: 2,
        properties: {
          prefix: { type: 'string', minLength: 1 },
          suffix: { type: 'string', minLength: 1 },
          classification: { enum: CLASSIFICATIONS },
        },
      },
    },
    runtime_from_lockfile: { type: 'boolean' },
  },
};

let checkBuildSection: SchemaCheck | undefined;

function templateError(path: string, message: string, errors: unknown[] = [], cause?: unknown): CpError {
  return new CpError('ERR_BUILD_TEMPLATE_INVALID', `${path}: ${message}`, {
    hint: 'a manifest template holds every manifest field except assets, plus an optional "build" section (classify rules, runtime_from_lockfile)',
    details: { path, errors },
    cause,
  });
}

export function readTemplate(path: string): PackageTemplate {
  if (!existsSync(path))
    throw new CpError('ERR_BUILD_TEMPLATE_MISSING', `no manifest template at ${show(path)}`, {
      hint: "add manifest.template.json next to the package's HOT/ directory",
      details: { path },
    });
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw templateError(path, `not JSON: ${(error as Error).message}`, [], error);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw templateError(path, 'not a JSON object');
  const { build = {}, ...fields } = value as Record<string, unknown>;
  if ('assets' in fields)
    throw templateError(path, 'assets are computed by the build; remove them from the template', [
      { pointer: '/assets', message: 'not allowed in a template' },
    ]);
  checkBuildSection ??= compileSchema(BUILD_SECTION_SCHEMA);
  const issues = checkBuildSection(build).map((i) => ({ pointer: `/build${i.pointer}`, message: i.message }));
  if (issues.length > 0) throw templateError(path, `${issues[0]?.pointer} ${issues[0]?.message}`, issues);
  try {
    validateManifest({ ...fields, assets: [] });
  } catch (error) {
    if (!isCpError(error)) throw error;
    throw templateError(path, error.message, (error.details.errors as unknown[] | undefined) ?? [], error);
  }
  const section = build as { classify?: ClassifyRule[]; runtime_from_lockfile?: boolean };
  return {
    fields: fields as unknown as Omit<Manifest, 'assets'>,
    rules: section.classify ?? [],
    runtimeFromLockfile: section.runtime_from_lockfile ?? false,
  };
}
