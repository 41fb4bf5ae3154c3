import type { ErrorObject } from 'ajv';

/** One schema violation, located by a JSON pointer (RFC 6901) into the validated value. */
export interface SchemaIssue {
  pointer: string;
  message: string;
  /** The ajv keyword that failed (`additionalProperties` marks an unknown field). */
  keyword: string;
}

export type SchemaCheck = (value: unknown) => SchemaIssue[];

/** A validation function as ajv makes it, compiled at run time or ahead of time (standalone). */
export interface CompiledValidator {
  (value: unknown): boolean;
  errors?: ErrorObject[] | null;
}

/** One ajv configuration for run-time and ahead-of-time compilation, so both report the same errors. */
export const AJV_OPTIONS = { allErrors: true, strict: true, allowUnionTypes: false } as const;

function escapePointer(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

function toIssue(error: ErrorObject): SchemaIssue {
  if (error.keyword === 'additionalProperties') {
    const field = String((error.params as { additionalProperty?: unknown }).additionalProperty);
    return {
      pointer: `${error.instancePath}/${escapePointer(field)}`,
      message: `unknown field ${JSON.stringify(field)}`,
      keyword: error.keyword,
    };
  }
  if (error.keyword === 'required') {
    const field = String((error.params as { missingProperty?: unknown }).missingProperty);
    return {
      pointer: `${error.instancePath}/${escapePointer(field)}`,
      message: `required field ${JSON.stringify(field)} is missing`,
      keyword: error.keyword,
    };
  }
  return { pointer: error.instancePath, message: error.message ?? error.keyword, keyword: error.keyword };
}

/** Every violation a compiled validator finds, each with its pointer. */
export function schemaCheck(validate: CompiledValidator): SchemaCheck {
  return (value) => (validate(value) ? [] : (validate.errors ?? []).map(toIssue));
}
