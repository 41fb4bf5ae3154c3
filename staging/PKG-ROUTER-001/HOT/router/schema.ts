import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv, type ValidateFunction } from 'ajv';
const SCHEMA_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'schemas');

export const ajv = new Ajv({ allErrors: true, strict: false });

export function compileSchemaFile(name: string): ValidateFunction {
  return ajv.compile(JSON.parse(readFileSync(join(SCHEMA_DIR, name), 'utf8')) as object);
}
