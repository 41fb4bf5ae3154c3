import { sliceText } from '#kernel/text.js';
import { buildDynamicTail } from './dynamic-tail.js';
import { CHARS_PER_TOKEN, estimateTokens } from './tokens.js';
import type { TaskSpec } from './spec.js';

export type CompactionStage = 'none' | 'A' | 'B' | 'C';

export interface CompactionStep {
  stage: Exclude<CompactionStage, 'none'>;
  tokens_before: number;
  tokens_after: number;
}

export interface CompactionResult {
  task: TaskSpec;
  stage: CompactionStage;
  trace: CompactionStep[];
}

/** Stage A never trims the delta context below its most recent ~500 tokens; stage B drops it instead. */
export const DELTA_FLOOR_CHARS = 2000;

function cutHead(text: string, keep: number): string {
  if (text.length <= keep) return text;
  const kept = sliceText(text, text.length - Math.max(0, keep));
  return `[delta context compacted: ${text.length - kept.length} earlier characters omitted]\n${kept}`;
}

function cutMiddle(text: string, keep: number): string {
  if (text.length <= keep) return text;
  const half = Math.max(0, Math.floor(keep / 2));
  const head = sliceText(text, 0, half);
  const tail = sliceText(text, text.length - half);
  return `${head}\n[task prompt compacted: ${text.length - head.length - tail.length} characters omitted]\n${tail}`;
}

/** Stage A keeps the most recent part of the delta context (its end), sized to the overshoot. */
function stageA(task: TaskSpec, overChars: number): TaskSpec {
  const delta = task.delta_context ?? '';
  return { ...task, delta_context: cutHead(delta, Math.max(DELTA_FLOOR_CHARS, delta.length - overChars)) };
}

/** Stage B drops the delta context and the guide instruction entirely (the tail then shows "(none)"). */
function stageB(task: TaskSpec): TaskSpec {
  const { delta_context: _delta, guide_instruction: _instruction, ...rest } = task;
  return rest;
}

/** Stage C keeps the head and the end of the task prompt and drops its middle. */
function stageC(task: TaskSpec, overChars: number): TaskSpec {
  return { ...task, task_prompt: cutMiddle(task.task_prompt, Math.max(0, task.task_prompt.length - overChars)) };
}

/**
 * Shrink only dynamic data (delta context, guide instruction, task prompt) until the prompt fits
 * `maxTokens`. `fixedChars` is everything else in the prompt, which compaction never touches, so the
 * stable prefix (and its hash) is the same whichever stage runs. Returns the last stage applied.
 */
export function compactTask(task: TaskSpec, fixedChars: number, maxTokens: number): CompactionResult {
  const total = (t: TaskSpec): number => fixedChars + buildDynamicTail(t).length;
  const trace: CompactionStep[] = [];
  let current = task;
  let stage: CompactionStage = 'none';
  const stages: [Exclude<CompactionStage, 'none'>, (t: TaskSpec, over: number) => TaskSpec][] = [
    ['A', stageA],
    ['B', stageB],
    ['C', stageC],
  ];
  for (const [name, apply] of stages) {
    const before = total(current);
    const overChars = before - maxTokens * CHARS_PER_TOKEN;
    if (overChars <= 0) break;
    // Markers add a few characters back; ask for a little more than the overshoot.
    const next = apply(current, overChars + 96);
    const after = total(next);
    // A stage with nothing left to shrink (e.g. no delta context) is skipped, not recorded.
    if (after >= before) continue;
    current = next;
    stage = name;
    trace.push({ stage: name, tokens_before: estimateTokens(before), tokens_after: estimateTokens(after) });
  }
  return { task: current, stage, trace };
}
