import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import { quote } from '../../kernel/errors.js';
import { validateManifest } from '../../kernel/manifest/index.js';
import { effectiveConfig } from '../../kernel/config/effective.js';
import { EMPTY_OVERRIDES, readOverrides, type OperatorOverrides } from '../../kernel/config/overrides.js';
import { OPERATOR_CONFIG_REL, REVOKED_KEYS_REL } from '../../kernel/root/layout.js';
import { readRevocations } from '../../router/revocations.js';
import { defineGate, verdict, type Finding } from '../gate.js';
import { installedJson, installedPackages } from '../root-state.js';

/**
 * G3: every installed manifest, receipt and config validates against its schema. A config
 * `HOT/config/<name>.json`, merged with the operator's overrides of that section, is checked against
 * `HOT/schemas/<name>-config.schema.json`; a config with no schema is itself a finding (nothing unvalidated
 * steers the root), and an override of a section no package ships is a warning.
 */
const ajv = new Ajv({ allErrors: true, strict: false });

export default defineGate({
  id: 'G3',
  name: 'SCHEMAS',
  describe: 'installed manifests, receipts and configs validate against their schemas',
  run(ctx) {
    const schemas = join(ctx.root, 'HOT', 'schemas');
    const errors: Finding[] = [];
    let checked = 0;
    const check = (validate: ValidateFunction, value: unknown, path: string, code: string): void => {
      checked += 1;
      if (value === undefined) errors.push({ code, message: `${quote(path)} is not JSON`, path });
      else if (!validate(value)) {
        const first = validate.errors?.[0];
        errors.push({ code, message: `${quote(path)}: ${first?.instancePath || '/'} ${first?.message ?? 'is invalid'}`, path });
      }
    };
    const receiptSchema = compileFile(ajv, join(schemas, 'receipt.schema.json'));
    for (const pkg of installedPackages(ctx)) {
      const base = `HOT/installed/${pkg}`;
      if (receiptSchema) check(receiptSchema, installedJson(ctx, pkg, 'receipt.json'), `${base}/receipt.json`, 'RECEIPT_INVALID');
      else errors.push({ code: 'SCHEMA_MISSING', message: 'HOT/schemas/receipt.schema.json is not installed' });
      checked += 1;
      try {
        validateManifest(installedJson(ctx, pkg, 'manifest.json'), { strict: true });
      } catch (error) {
        errors.push({ code: 'MANIFEST_INVALID', message: `${base}/manifest.json: ${error instanceof Error ? error.message : String(error)}`, path: `${base}/manifest.json` });
      }
    }
    const warnings: Finding[] = [];
    let overrides: OperatorOverrides = EMPTY_OVERRIDES;
    try {
      overrides = readOverrides(ctx.root).value;
    } catch (error) {
      errors.push({ code: 'OPERATOR_CONFIG_INVALID', message: messageOf(error), path: OPERATOR_CONFIG_REL });
    }
    const configDir = join(ctx.root, 'HOT', 'config');
    const sections = existsSync(configDir) ? readdirSync(configDir).filter((n) => n.endsWith('.json')).sort() : [];
    for (const name of sections) {
      const section = name.replace(/\.json$/, '');
      const schemaName = `${section}-config.schema.json`;
      const validate = compileFile(ajv, join(schemas, schemaName)) ?? compileFile(ajv, findSchemaBeside(ctx.root, schemaName));
      const overridden = Object.hasOwn(overrides.overrides, section);
      // What the root runs with is the package default merged with the operator's overrides: judge that.
      const value = effectiveConfig(ctx.root, section, readJson, overrides);
      const where = `HOT/config/${name}${overridden ? ` with the overrides in ${OPERATOR_CONFIG_REL}` : ''}`;
      if (validate) check(validate, value, where, 'CONFIG_INVALID');
      else errors.push({ code: 'CONFIG_WITHOUT_SCHEMA', message: `HOT/config/${name} has no schema ${schemaName}`, path: `HOT/config/${name}` });
    }
    try {
      checked += 1;
      readRevocations(ctx.root);
    } catch (error) {
      // The router refuses every key while the list is unreadable: say why before an operator meets it there.
      errors.push({ code: 'REVOCATION_LIST_INVALID', message: messageOf(error), path: REVOKED_KEYS_REL });
    }
    for (const section of Object.keys(overrides.overrides).sort()) {
      if (!sections.includes(`${section}.json`)) {
        const message = `${OPERATOR_CONFIG_REL} overrides the section ${quote(section)}, which no installed package ships `
          + `(\`cplane config unset ${section}\` removes it)`;
        warnings.push({ code: 'OPERATOR_CONFIG_UNUSED', message, path: OPERATOR_CONFIG_REL });
      }
    }
    return verdict(this, errors, `${checked} manifests, receipts and configs valid`, warnings);
  },
});

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as unknown;
  } catch {
    return undefined;
  }
}

/** Compiled validators, per process, keyed by the schema's bytes: a changed schema is compiled afresh. */
const compiled = new Map<string, ValidateFunction>();

function compileFile(ajv: Ajv, path: string): ValidateFunction | null {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return null;
  }
  const cached = compiled.get(text);
  if (cached) return cached;
  let schema: unknown;
  try {
    schema = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof schema !== 'object' || schema === null) return null;
  const { $id: _id, ...anonymous } = schema as Record<string, unknown>;
  const validate = ajv.compile(anonymous);
  compiled.set(text, validate);
  return validate;
}

/** Packages may keep a config's schema in their own schemas directory under another HOT/ area. */
function findSchemaBeside(root: string, schemaName: string): string {
  const hot = join(root, 'HOT');
  for (const area of readdirSync(hot).sort()) {
    const candidate = join(hot, area, 'schemas', schemaName);
    if (existsSync(candidate)) return candidate;
  }
  return join(hot, 'schemas', schemaName);
}
