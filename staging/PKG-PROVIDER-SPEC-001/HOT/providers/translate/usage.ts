// Usage carried across formats bucket by bucket: each count is the upstream's own, moved, never estimated.
import { getCount, getObject, type JsonObject } from '../json.js';

/**
 * Chat usage as Anthropic's: Chat's `prompt_tokens` includes the cache reads, Anthropic's `input_tokens` does not;
 * Chat has no cache-write bucket (its writes are plain input), so `cache_creation_input_tokens` is 0 when the
 * prompt count is known. A count the upstream did not give stays null.
 */
export function chatUsageToAnthropic(usage: JsonObject | null): Record<string, number | null> {
  const prompt = getCount(usage, 'prompt_tokens');
  const read = getCount(getObject(usage, 'prompt_tokens_details'), 'cached_tokens');
  return {
    input_tokens: prompt === null ? null : Math.max(0, prompt - (read ?? 0)),
    cache_creation_input_tokens: prompt === null ? null : 0,
    cache_read_input_tokens: read,
    output_tokens: getCount(usage, 'completion_tokens'),
  };
}

/**
 * Anthropic usage as Chat's: `prompt_tokens` is every prompt token (uncached, cache writes and reads), the reads
 * also in `prompt_tokens_details.cached_tokens`; the writes, which Chat has no field for, are carried in
 * `cache_creation_input_tokens` beside them (the name Anthropic gives them) so no bucket is lost. Reasoning tokens
 * are a known 0: a translated request never asks for thinking (`reasoning_effort` is refused), so none is billed.
 */
export function anthropicUsageToChat(usage: JsonObject | null): Record<string, unknown> {
  const uncached = getCount(usage, 'input_tokens');
  const write = getCount(usage, 'cache_creation_input_tokens');
  const read = getCount(usage, 'cache_read_input_tokens');
  // All prompt tokens, or unknown when a bucket is (as the EXCHANGE reads the same usage: providers/surfaces).
  const prompt = uncached === null || write === null || read === null ? null : uncached + write + read;
  const completion = getCount(usage, 'output_tokens');
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt === null || completion === null ? null : prompt + completion,
    prompt_tokens_details: { cached_tokens: read },
    completion_tokens_details: { reasoning_tokens: completion === null ? null : 0 },
    cache_creation_input_tokens: write,
  };
}

/**
 * Gemini's usageMetadata as Anthropic's usage. `promptTokenCount` holds the cached tokens (`cachedContentTokenCount`,
 * the cache read) and not the tool-use prompt (`toolUsePromptTokenCount`); thinking (`thoughtsTokenCount`) is apart
 * from `candidatesTokenCount` and billed as output, as Anthropic's `output_tokens` counts thinking. Proto3 JSON leaves
 * a zero out, so once the prompt count is there an absent count is a known 0; Gemini has no cache-write bucket.
 */
export function geminiUsageToAnthropic(usage: JsonObject | null): Record<string, number | null> {
  const prompt = getCount(usage, 'promptTokenCount');
  if (prompt === null)
    return {
      input_tokens: null,
      cache_creation_input_tokens: null,
      cache_read_input_tokens: null,
      output_tokens: null,
    };
  const count = (key: string): number | null => (usage?.[key] === undefined ? 0 : getCount(usage, key));
  const read = count('cachedContentTokenCount');
  const toolUse = count('toolUsePromptTokenCount');
  const candidates = count('candidatesTokenCount');
  const thoughts = count('thoughtsTokenCount');
  return {
    input_tokens: read === null || toolUse === null ? null : Math.max(0, prompt - read) + toolUse,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: read,
    output_tokens: candidates === null || thoughts === null ? null : candidates + thoughts,
  };
}

/**
 * Anthropic usage as Gemini's usageMetadata: `promptTokenCount` is every prompt token (uncached, cache writes and
 * reads), the reads also in `cachedContentTokenCount`; the writes, which Gemini has no field for, are carried beside
 * them as `cacheCreationInputTokenCount` so no bucket is lost (the SDKs keep unknown fields). No thinking is asked for
 * (a translated request refuses it), so every output token is a candidate token. A count not given is left out.
 */
export function anthropicUsageToGemini(usage: JsonObject | null): Record<string, number> {
  const uncached = getCount(usage, 'input_tokens');
  const write = getCount(usage, 'cache_creation_input_tokens');
  const read = getCount(usage, 'cache_read_input_tokens');
  const output = getCount(usage, 'output_tokens');
  const out: Record<string, number> = {};
  const prompt = uncached === null || write === null || read === null ? null : uncached + write + read;
  if (prompt !== null) out.promptTokenCount = prompt;
  if (read !== null) out.cachedContentTokenCount = read;
  if (output !== null) out.candidatesTokenCount = output;
  if (prompt !== null && output !== null) out.totalTokenCount = prompt + output;
  if (write !== null) out.cacheCreationInputTokenCount = write;
  return out;
}

/**
 * Anthropic usage as the Responses API's: `input_tokens` is every prompt token (uncached, cache writes and reads),
 * the reads in `input_tokens_details.cached_tokens` and the writes in its `cache_write_tokens`. No thinking is asked
 * for (a translated request refuses `reasoning`), so reasoning tokens are a known 0. A count not given stays null.
 */
export function anthropicUsageToResponses(usage: JsonObject | null): Record<string, unknown> {
  const uncached = getCount(usage, 'input_tokens');
  const write = getCount(usage, 'cache_creation_input_tokens');
  const read = getCount(usage, 'cache_read_input_tokens');
  const prompt = uncached === null || write === null || read === null ? null : uncached + write + read;
  const output = getCount(usage, 'output_tokens');
  return {
    input_tokens: prompt,
    input_tokens_details: { cached_tokens: read, cache_write_tokens: write },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: output === null ? null : 0 },
    total_tokens: prompt === null || output === null ? null : prompt + output,
  };
}

/**
 * Responses usage as Anthropic's: `input_tokens` includes the cache reads (`input_tokens_details.cached_tokens`),
 * Anthropic's does not; OpenAI bills no cache write, so `cache_creation_input_tokens` is 0 once the input count is
 * known. `output_tokens` includes the reasoning tokens, as Anthropic's counts thinking. A count not given stays null.
 */
export function responsesUsageToAnthropic(usage: JsonObject | null): Record<string, number | null> {
  const input = getCount(usage, 'input_tokens');
  const read = getCount(getObject(usage, 'input_tokens_details'), 'cached_tokens');
  return {
    input_tokens: input === null || read === null ? input : Math.max(0, input - read),
    cache_creation_input_tokens: input === null ? null : 0,
    cache_read_input_tokens: read,
    output_tokens: getCount(usage, 'output_tokens'),
  };
}
