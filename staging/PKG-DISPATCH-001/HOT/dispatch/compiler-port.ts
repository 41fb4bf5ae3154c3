import { ROLES, type Role } from '#compiler/roles.js';

/**
 * The slice of the prompt compiler the dispatch runtime uses. Field names are the compiler's
 * prompt-spec wire names, so the spec built here is a valid `cplane prompt compile` spec. Its roles are the
 * compiler's (`compiler/roles.ts`).
 */
export type DispatchRole = Role;
export const DISPATCH_ROLES: readonly DispatchRole[] = ROLES;

export interface DispatchPromptSpec {
  role: DispatchRole;
  zones: { developer_instructions: string; environment_context: string };
  task: {
    task_id: string;
    max_output_tokens: number;
    delta_context: string;
    guide_cache_key: string;
    guide_instruction: string;
    task_prompt: string;
  };
}

export interface CompiledDispatchPrompt {
  stable_prefix_hash: string;
  dynamic_tail_hash: string;
  full_prompt_hash: string;
  cache_key: string;
  /** The compiled prompt itself, passed through untouched for the caller to send. */
  prompt: unknown;
}

export type CompileDispatchPrompt = (spec: DispatchPromptSpec) => CompiledDispatchPrompt;
