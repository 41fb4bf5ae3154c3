import type { CompiledPrompt } from '../compile.js';
import type { RenderOptions } from './anthropic.js';

export interface ResponsesInputMessage {
  role: 'developer' | 'user' | 'assistant';
  content: string;
}
export interface OpenAIResponsesBody {
  model?: string;
  instructions: string;
  input: ResponsesInputMessage[];
  max_output_tokens?: number;
  prompt_cache_key: string;
}

/**
 * OpenAI Responses body: the system zone is `instructions`, the developer zone is `input[]` with
 * role=developer, user-meta and conversation follow in order. OpenAI caches prefixes automatically;
 * `prompt_cache_key` (the stable prefix hash) routes requests sharing a prefix to the same cache.
 */
export function renderOpenAIResponses(prompt: CompiledPrompt, options: RenderOptions = {}): OpenAIResponsesBody {
  const model = options.model ?? prompt.model;
  const maxTokens = options.maxTokens ?? prompt.max_output_tokens;
  return {
    ...(model ? { model } : {}),
    instructions: prompt.instructions,
    input: prompt.messages.map((m) => ({ role: m.role, content: m.content })),
    ...(maxTokens ? { max_output_tokens: maxTokens } : {}),
    prompt_cache_key: `cp-${prompt.stable_prefix_hash.slice(0, 32)}`,
  };
}
