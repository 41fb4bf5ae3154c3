import { EPHEMERAL, type PromptMessage } from './messages.js';
import type { TierName } from './spec.js';

/** Providers (Anthropic) accept at most four cache breakpoints per request. */
export const MAX_BREAKPOINTS = 4;

/** One cached tier's messages in order. L0's may be empty: its breakpoint then sits on the system message. */
export interface CachedGroup {
  tier: TierName;
  messages: PromptMessage[];
}

export interface BreakpointPlan {
  /** The stable messages, in order, with `cache_control` set on the last message of each kept tier. */
  messages: PromptMessage[];
  instructionsBreakpoint: boolean;
  /** Tiers that end at a breakpoint, in order. */
  tiers: TierName[];
  /** Tiers whose breakpoint was dropped; their content is cached as part of the next kept tier. */
  merged: { tier: TierName; into: TierName }[];
}

/**
 * Which tiers keep their own breakpoint when there are more cached tiers than `max`: the most stable
 * `max - 1` tiers keep theirs, the last cached tier keeps its own (so everything cacheable stays cached),
 * and the tiers between merge into that last tier.
 */
export function keptTierIndexes(count: number, max: number): number[] {
  if (count <= max) return Array.from({ length: count }, (_, i) => i);
  return [...Array.from({ length: max - 1 }, (_, i) => i), count - 1];
}

/** Marks the groups' own messages (the compiler's fresh objects, whose assembly pieces it tracks). */
export function placeBreakpoints(groups: readonly CachedGroup[], max = MAX_BREAKPOINTS): BreakpointPlan {
  const limit = Math.min(Math.max(1, Math.floor(max)), MAX_BREAKPOINTS);
  const nonEmpty = groups.filter((g, i) => i === 0 || g.messages.length > 0);
  const kept = new Set(keptTierIndexes(nonEmpty.length, limit));
  const lastKept = nonEmpty[nonEmpty.length - 1]?.tier;
  const plan: BreakpointPlan = { messages: [], instructionsBreakpoint: false, tiers: [], merged: [] };
  nonEmpty.forEach((group, index) => {
    if (kept.has(index)) {
      plan.tiers.push(group.tier);
      const last = group.messages[group.messages.length - 1];
      if (last) last.cache_control = { ...EPHEMERAL };
      else plan.instructionsBreakpoint = true;
    } else if (lastKept !== undefined) {
      plan.merged.push({ tier: group.tier, into: lastKept });
    }
    plan.messages.push(...group.messages);
  });
  return plan;
}
