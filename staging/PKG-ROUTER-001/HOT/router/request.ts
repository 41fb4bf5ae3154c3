import type { ErrorObject } from 'ajv';
import { compileSchemaFile } from './schema.js';

/** The wire shape of one route() call (snake_case; JSON Schema in HOT/schemas/prompt-request.schema.json). */
export interface PromptRequest {
  prompt: string;
  contract_id: string;
  agent_id: string;
  session_id: string;
  work_order_id?: string;
  tier?: string;
  framework_id?: string;
  /** Accepted for compatibility; they belong on the contract or work order and are never recorded. */
  prompt_pack_id?: string;
  agent_class?: string;
  package_id?: string;
  provider_id?: string;
  model_id?: string;
  max_tokens?: number;
  temperature?: number;
  auth_token?: string;
  request_id?: string;
  output_schema?: Record<string, unknown>;
  compiled?: { stable_prefix_hash: string; body?: Record<string, unknown> };
}

const validate = compileSchemaFile('prompt-request.schema.json');

export type RequestCheck = { ok: true; request: PromptRequest } | { ok: false; message: string };

export function checkRequest(value: unknown): RequestCheck {
  if (validate(value)) return { ok: true, request: value as PromptRequest };
  return { ok: false, message: describeErrors(validate.errors ?? []) };
}

export function describeErrors(errors: readonly ErrorObject[]): string {
  return errors
    .slice(0, 5)
    .map(
      (e) =>
        `${e.instancePath || '/'} ${e.message ?? 'is invalid'}${
          e.keyword === 'additionalProperties'
            ? ` (${String((e.params as { additionalProperty?: string }).additionalProperty)})`
            : ''
        }`,
    )
    .join('; ');
}
