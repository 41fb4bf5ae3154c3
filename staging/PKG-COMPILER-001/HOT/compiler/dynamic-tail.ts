import type { TaskSpec } from './spec.js';

/** Section labels of the canonical dynamic tail, in their fixed order; `Task prompt` is always last. */
export const TAIL_SECTIONS = [
  'Task ID',
  'Max output tokens',
  'Delta context',
  'Guide cache key',
  'Task prompt',
] as const;
export const TAIL_SECTION_SEPARATOR = '\n\n';
const NONE = '(none)';

/**
 * The one place the per-dispatch text is assembled. Everything that varies per task lives here and
 * nowhere in the stable prefix, in this order: Task ID, Max output tokens, Delta context,
 * Guide cache key + guide instruction, Task prompt.
 */
export function buildDynamicTail(task: TaskSpec): string {
  const guide = `Guide cache key: ${task.guide_cache_key || NONE}${task.guide_instruction ? `\n${task.guide_instruction}` : ''}`;
  return [
    `Task ID: ${task.task_id}`,
    `Max output tokens: ${task.max_output_tokens}`,
    `Delta context:\n${task.delta_context || NONE}`,
    guide,
    `Task prompt:\n${task.task_prompt}`,
  ].join(TAIL_SECTION_SEPARATOR);
}
