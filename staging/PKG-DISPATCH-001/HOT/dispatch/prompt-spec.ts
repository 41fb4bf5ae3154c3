import type { DispatchConfig } from './config.js';
import type { DispatchPromptSpec, DispatchRole } from './compiler-port.js';
import type { ProgressLedger } from './progress-ledger.js';

/**
 * Stable text for the developer zone. It never mentions the run, the task or any ledger value:
 * those live only in the dynamic tail, which is what keeps the stable prefix hash fixed across rounds.
 */
export const DISPATCH_DEVELOPER_INSTRUCTIONS =
  "You are dispatched by the cplane dispatch runtime on one task of a spec's tasks.md. " +
  'The delta context is the authoritative, current state of the run: progress totals, the task, the latest ' +
  'implementer and reviewer outcomes, blockers, required fixes and any stall or replan hint. Prefer it over ' +
  'anything earlier in the conversation.';

export const DISPATCH_ENVIRONMENT_CONTEXT = 'Task status markers: [ ] pending, [-] in progress, [x] completed.';

export function buildPromptSpec(
  role: DispatchRole,
  progress: ProgressLedger,
  deltaContext: string,
  config: DispatchConfig,
): DispatchPromptSpec {
  const current = progress.current_task;
  const taskId = progress.task_id ?? '';
  return {
    role,
    zones: {
      developer_instructions: DISPATCH_DEVELOPER_INSTRUCTIONS,
      environment_context: DISPATCH_ENVIRONMENT_CONTEXT,
    },
    task: {
      task_id: taskId,
      max_output_tokens: config.max_output_tokens,
      delta_context: deltaContext,
      guide_cache_key: `dispatch:${progress.spec_name}:${role}`,
      guide_instruction: config.guide_instruction,
      task_prompt: current?.prompt ?? current?.description ?? `Task ${taskId}`,
    },
  };
}
