import type { ErrorObject, ValidateFunction } from 'ajv';
import { ajv } from './schema.js';

export interface OutputValidation {
  valid: boolean;
  errors: string[];
}

/** Check a response against the request's output schema: the content must be JSON that validates. */
export function validateOutput(content: string, schema: Record<string, unknown>): OutputValidation {
  let value: unknown;
  try {
    value = JSON.parse(content);
  } catch {
    return { valid: false, errors: ['response is not JSON'] };
  }
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(schema);
  } catch (error) {
    return {
      valid: false,
      errors: [`output schema does not compile: ${error instanceof Error ? error.message : String(error)}`],
    };
  }
  if (validate(value)) return { valid: true, errors: [] };
  return {
    valid: false,
    errors: (validate.errors ?? []).map((e: ErrorObject) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`),
  };
}
