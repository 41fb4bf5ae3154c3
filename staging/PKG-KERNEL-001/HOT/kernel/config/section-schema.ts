import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import { READ_LIMITS, readTextBounded } from '../bounded-read.js';
import { show } from '../errors.js';

/** Where a section's schema lives: HOT/schemas/<section>-config.schema.json, or a package's own HOT/<area>/schemas/. */
export function sectionSchemaPath(root: string, section: string): string | null {
  const name = `${section}-config.schema.json`;
  const hot = join(root, 'HOT');
  const direct = join(hot, 'schemas', name);
  if (existsSync(direct)) return direct;
  for (const area of existsSync(hot) ? readdirSync(hot).sort() : []) {
    const candidate = join(hot, area, 'schemas', name);
    if (existsSync(candidate)) return candidate;
  }
  return null;
}

export type SectionVerdict =
  | { ok: true }
  | { ok: false; pointer: string; message: string; reason: 'invalid' | 'no_schema' };

const ajv = new Ajv({ allErrors: false, strict: false });
const compiled = new Map<string, ValidateFunction>();

function validatorFor(path: string): ValidateFunction {
  const text = readTextBounded(path, { maxBytes: READ_LIMITS.config, what: 'a config schema' });
  let validate = compiled.get(text);
  if (!validate) {
    const { $id: _id, ...schema } = JSON.parse(text) as Record<string, unknown>;
    validate = ajv.compile(schema);
    compiled.set(text, validate);
  }
  return validate;
}

/** Judge an effective section against its schema; a section without a schema steers nothing unvalidated. */
export function validateSection(root: string, section: string, value: unknown): SectionVerdict {
  const path = sectionSchemaPath(root, section);
  if (path === null)
    return {
      ok: false,
      pointer: '',
      message: `no schema ${section}-config.schema.json is installed`,
      reason: 'no_schema',
    };
  const validate = validatorFor(path);
  if (validate(value)) return { ok: true };
  const first = validate.errors?.[0];
  const extra =
    first?.keyword === 'additionalProperties'
      ? ` (${String((first.params as { additionalProperty?: unknown }).additionalProperty)})`
      : first?.keyword === 'enum'
        ? `: ${((first.params as { allowedValues?: unknown[] }).allowedValues ?? []).map((v) => show(v)).join(', ')}; got ${show(valueAt(value, first.instancePath))}`
        : '';
  return {
    ok: false,
    pointer: first?.instancePath || '/',
    message: `${first?.message ?? 'is invalid'}${extra}`,
    reason: 'invalid',
  };
}

/** The value a JSON pointer (an Ajv instancePath) names inside `value`. */
function valueAt(value: unknown, pointer: string): unknown {
  let at = value;
  for (const raw of pointer.split('/').slice(1)) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    at =
      typeof at === 'object' && at !== null && Object.hasOwn(at, key)
        ? (at as Record<string, unknown>)[key]
        : undefined;
  }
  return at;
}
