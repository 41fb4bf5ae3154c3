import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { CpError, show } from '#kernel/errors.js';
import { wellFormedDeep } from '#kernel/text.js';
import type { Role } from './roles.js';

export interface SpecFile {
  path: string;
  content: string;
}
export interface HistoryMessage {
  role: 'user' | 'assistant';
  content: string;
}
export interface TierSpec {
  files?: SpecFile[];
  history?: HistoryMessage[];
}
export type TierName = 'L0' | 'L1' | 'L2' | 'L3';
export const TIER_NAMES: readonly TierName[] = ['L0', 'L1', 'L2', 'L3'];

export interface TaskSpec {
  task_id: string;
  max_output_tokens: number;
  delta_context?: string;
  guide_cache_key?: string;
  guide_instruction?: string;
  task_prompt: string;
}

/** The wire shape of a prompt spec (schema: HOT/schemas/prompt-spec.schema.json). */
export interface PromptSpec {
  role: Role;
  model?: string;
  system_extra?: string;
  tools?: { name: string; description: string }[];
  examples?: string[];
  zones: {
    developer_instructions?: string;
    turn_context?: string;
    user_instructions?: string;
    environment_context?: string;
  };
  tiers?: Partial<Record<TierName, TierSpec>>;
  file_tree?: string[];
  url_context?: { url: string; title: string; content: string }[];
  active_files?: SpecFile[];
  active_history?: HistoryMessage[];
  task?: TaskSpec;
  user_prompt?: string;
  cache?: { max_breakpoints?: number };
  budget?: { max_input_tokens?: number };
}

export interface SpecProblem {
  pointer: string;
  message: string;
}

const SCHEMA_PATH = join(dirname(fileURLToPath(import.meta.url)), '..', 'schemas', 'prompt-spec.schema.json');
let validator: ValidateFunction | null = null;

function compiledValidator(): ValidateFunction {
  if (validator) return validator;
  const schema = JSON.parse(readFileSync(SCHEMA_PATH, 'utf8')) as object;
  validator = new Ajv({ allErrors: true, strict: true, strictRequired: false }).compile(schema);
  return validator;
}

function toProblem(error: ErrorObject): SpecProblem {
  const params = error.params as { additionalProperty?: string; missingProperty?: string };
  const extra = params.additionalProperty ?? params.missingProperty;
  const pointer =
    extra === undefined
      ? error.instancePath
      : `${error.instancePath}/${extra.replace(/~/g, '~0').replace(/\//g, '~1')}`;
  // The schema's only `not` is `not const ""` (non_empty_text): say what it means.
  const message = error.keyword === 'not' ? 'must not be empty' : (error.message ?? 'is invalid');
  return { pointer: pointer || '/', message };
}

/** Validate hostile input once at the edge; everything past here trusts the PromptSpec type. */
export function validatePromptSpec(value: unknown): PromptSpec {
  const validate = compiledValidator();
  // A lone surrogate has no UTF-8 encoding: the hashers would encode it as U+FFFD while the text sent on stayed
  // different, so two different prompts could share every hash. Made well-formed once, here (copies only what changes).
  if (validate(value))
    return wellFormedDeep(value, (key) => {
      throw new CpError(
        'ERR_PROMPT_SPEC_INVALID',
        `prompt spec has two keys that read ${show(key)} once made well-formed`,
        {
          hint: 'remove the lone surrogate from the key',
          details: { pointer: '/', key },
        },
      );
    }) as PromptSpec;
  const problems = (validate.errors ?? []).map(toProblem);
  const first = problems[0] ?? { pointer: '/', message: 'is invalid' };
  throw new CpError(
    'ERR_PROMPT_SPEC_INVALID',
    `prompt spec is invalid at ${first.pointer}: ${first.message}${problems.length > 1 ? ` (and ${problems.length - 1} more)` : ''}`,
    {
      hint: 'fix the spec at the JSON pointer shown; the format is in HOT/schemas/prompt-spec.schema.json',
      details: { pointer: first.pointer, errors: problems },
    },
  );
}

/** Parse spec text (a file's contents) and validate it; `source` names it in errors. */
export function parsePromptSpec(text: string, source: string): PromptSpec {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    throw new CpError(
      'ERR_PROMPT_SPEC_INVALID',
      `prompt spec ${show(source)} is not JSON: ${(cause as Error).message}`,
      {
        hint: 'the spec must be one JSON object',
        details: { pointer: '/', source },
        cause,
      },
    );
  }
  return validatePromptSpec(value);
}
