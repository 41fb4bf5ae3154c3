import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { AJV_OPTIONS, schemaCheck, type SchemaCheck } from './schema-issues.js';

export type { SchemaCheck, SchemaIssue } from './schema-issues.js';

/**
 * Compile a JSON Schema (draft-07) at run time into a function that lists every violation with its pointer.
 * The kernel's own schemas are compiled ahead of time (compiled-validators.ts); this is for the others.
 */
export function compileSchema(schema: object): SchemaCheck {
  return schemaCheck(new Ajv(AJV_OPTIONS).compile(schema));
}

/** Compile a JSON Schema file (e.g. one PKG-SCHEMAS-001 ships under HOT/schemas/). */
export function compileSchemaFile(file: string | URL): SchemaCheck {
  return compileSchema(JSON.parse(readFileSync(file, 'utf8')) as object);
}
