import { CpError } from '#kernel/errors.js';
import { placeBreakpoints, MAX_BREAKPOINTS, type CachedGroup } from './breakpoints.js';
import { compactTask, type CompactionStage, type CompactionStep } from './compaction.js';
import { buildDynamicTail } from './dynamic-tail.js';
import { hashPrefix, type PrefixHashes } from './prefix.js';
import { concat } from './parts.js';
import { l0History, systemPieces, tierMessages, uncachedMessages } from './tiers.js';
import { estimateTokens } from './tokens.js';
import { developerZone, userMetaZone } from './zones.js';
import type { PromptMessage } from './messages.js';
import type { PromptSpec, TaskSpec, TierName } from './spec.js';

/** A compiled, provider-neutral prompt (wire shape: snake_case). */
export interface CompiledPrompt extends PrefixHashes {
  /** System zone: the fixed base prompt plus the L0 reference files. */
  instructions: string;
  /** True when the L0 breakpoint sits on the system message (no L0 messages follow it). */
  instructions_cache_control: boolean;
  messages: PromptMessage[];
  /** messages[0 .. stable_message_count) are the stable prefix; the rest is the dynamic tail. */
  stable_message_count: number;
  breakpoints: number;
  breakpoint_tiers: TierName[];
  merged_tiers: { tier: TierName; into: TierName }[];
  compaction_stage: CompactionStage;
  compaction_trace: CompactionStep[];
  token_estimate: { stable_prefix: number; dynamic_tail: number; total: number };
  model: string | null;
  max_output_tokens: number | null;
}

const sumLength = (messages: readonly PromptMessage[]): number => messages.reduce((n, m) => n + m.content.length, 0);

/** L0 = developer zone, user-meta zone and L0 history after the system message; then L1–L3. */
function cachedGroups(spec: PromptSpec): CachedGroup[] {
  const tiers: Exclude<TierName, 'L0'>[] = ['L1', 'L2', 'L3'];
  return [
    { tier: 'L0', messages: [...developerZone(spec), ...userMetaZone(spec), ...l0History(spec)] },
    ...tiers.map((tier) => ({ tier, messages: tierMessages(spec, tier) })),
  ];
}

/** The current prompt: the user's prompt (if any), then the canonical dynamic tail (if a task is given). */
function currentPrompt(spec: PromptSpec, task: TaskSpec | undefined): PromptMessage[] {
  const out: PromptMessage[] = [];
  if (spec.user_prompt)
    out.push({ role: 'user', content: spec.user_prompt, section: task ? 'user_prompt' : 'current_prompt' });
  if (task) out.push({ role: 'user', content: buildDynamicTail(task), section: 'current_prompt' });
  return out;
}

/**
 * Compile a validated spec: stable prefix (system, developer, user-meta, cached tiers L0–L3 with at
 * most four breakpoints) first, then the uncached context, then the current prompt with the canonical
 * dynamic tail last. Compaction (when `budget.max_input_tokens` is exceeded) rewrites only the tail.
 */
export function compilePrompt(spec: PromptSpec): CompiledPrompt {
  const instructionsPieces = systemPieces(spec);
  const instructions = concat(instructionsPieces);
  const plan = placeBreakpoints(cachedGroups(spec), spec.cache?.max_breakpoints ?? MAX_BREAKPOINTS);
  const uncached = uncachedMessages(spec);
  const stableChars = instructions.length + sumLength(plan.messages);
  const fixedChars = stableChars + sumLength(uncached) + (spec.user_prompt?.length ?? 0);

  let task = spec.task;
  let stage: CompactionStage = 'none';
  let trace: CompactionStep[] = [];
  const maxTokens = spec.budget?.max_input_tokens;
  if (task && maxTokens !== undefined) ({ task, stage, trace } = compactTask(task, fixedChars, maxTokens));

  const tail = [...uncached, ...currentPrompt(spec, task)];
  const messages = [...plan.messages, ...tail];
  const totalTokens = estimateTokens(stableChars + sumLength(tail));
  if (maxTokens !== undefined && totalTokens > maxTokens) {
    throw new CpError(
      'ERR_PROMPT_OVER_BUDGET',
      `prompt needs ~${totalTokens} tokens after compaction (stage ${stage}); budget.max_input_tokens is ${maxTokens}`,
      {
        hint: 'compaction only shrinks the dynamic tail; move context out of the tiers, files or history, or raise the budget',
        details: {
          tokens: totalTokens,
          max_input_tokens: maxTokens,
          stable_prefix_tokens: estimateTokens(stableChars),
        },
      },
    );
  }
  const hashes = hashPrefix({
    instructions,
    instructionsPieces,
    instructionsBreakpoint: plan.instructionsBreakpoint,
    messages,
    dynamicTailMessages: tail.length,
  });
  return {
    instructions,
    instructions_cache_control: plan.instructionsBreakpoint,
    messages,
    stable_message_count: plan.messages.length,
    ...hashes,
    breakpoints: plan.tiers.length,
    breakpoint_tiers: plan.tiers,
    merged_tiers: plan.merged,
    compaction_stage: stage,
    compaction_trace: trace,
    token_estimate: {
      stable_prefix: estimateTokens(stableChars),
      dynamic_tail: estimateTokens(sumLength(tail)),
      total: totalTokens,
    },
    model: spec.model ?? null,
    max_output_tokens: task?.max_output_tokens ?? null,
  };
}
