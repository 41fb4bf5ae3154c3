import { readFileSync } from 'node:fs';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';

/** One schema violation, located by a JSON pointer (RFC 6901) into the validated value. */
export interface SchemaIssue {
  pointer: string;
  message: string;
  /** The ajv keyword that failed (`additionalProperties` marks an unknown field). */
  keyword: string;
}

export type SchemaCheck = (value: unknown) => SchemaIssue[];

function escapePointer(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

function toIssue(error: ErrorObject): SchemaIssue {
  if (error.keyword === 'additionalProperties') {
    const field = String((error.params as { additionalProperty?: unknown }).additionalProperty);
    return { pointer: `${error.instancePath}/${escapePointer(field)}`, message: `unknown field ${JSON.stringify(field)}`, keyword: error.keyword };
  }
  if (error.keyword === 'required') {
    const field = String((error.params as { missingProperty?: unknown }).missingProperty);
    return { pointer: `${error.instancePath}/${escapePointer(field)}`, message: `required field ${JSON.stringify(field)} is missing`, keyword: error.keyword };
  }
  return { pointer: error.instancePath, message: error.message ?? error.keyword, keyword: error.keyword };
}

/** Compile a JSON Schema (draft-07) into a function that lists every violation with its pointer. */
export function compileSchema(schema: object): SchemaCheck {
  const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: false });
  const validate: ValidateFunction = ajv.compile(schema);
  return (value) => (validate(value) ? [] : (validate.errors ?? []).map(toIssue));
}

/** Compile a JSON Schema file (e.g. one PKG-SCHEMAS-001 ships under HOT/schemas/). */
export function compileSchemaFile(file: string | URL): SchemaCheck {
  return compileSchema(JSON.parse(readFileSync(file, 'utf8')) as object);
}
