import { CpError } from '#kernel/errors.js';
import type { CompiledPrompt } from '../compile.js';
import { EPHEMERAL, type PromptMessage } from '../messages.js';

export interface AnthropicTextBlock {
  type: 'text';
  text: string;
  cache_control?: { type: 'ephemeral' };
}
export interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: string | AnthropicTextBlock[];
}
export interface AnthropicMessagesBody {
  model?: string;
  max_tokens: number;
  system: AnthropicTextBlock[];
  messages: AnthropicMessage[];
}

export interface RenderOptions {
  /** Overrides the spec's model; the body has no `model` when neither is set (the provider fills it in). */
  model?: string;
  /** Overrides the task's max output tokens. */
  maxTokens?: number;
}

export const DEFAULT_MAX_TOKENS = 1024;

function block(message: Pick<PromptMessage, 'content' | 'cache_control'>): AnthropicTextBlock {
  return message.cache_control
    ? { type: 'text', text: message.content, cache_control: { ...EPHEMERAL } }
    : { type: 'text', text: message.content };
}

/**
 * Anthropic Messages body. The system zone and the leading developer zone become system blocks (the
 * API has no developer role; they directly follow the system prompt, so the prefix order is unchanged);
 * a message carrying a breakpoint is sent as a text block with `cache_control`.
 */
export function renderAnthropic(prompt: CompiledPrompt, options: RenderOptions = {}): AnthropicMessagesBody {
  const system: AnthropicTextBlock[] = [
    block({ content: prompt.instructions, ...(prompt.instructions_cache_control ? { cache_control: EPHEMERAL } : {}) }),
  ];
  let index = 0;
  while (index < prompt.messages.length && prompt.messages[index]?.role === 'developer') {
    system.push(block(prompt.messages[index] as PromptMessage));
    index += 1;
  }
  const messages: AnthropicMessage[] = prompt.messages.slice(index).map((m) => ({
    role: m.role === 'assistant' ? 'assistant' : 'user',
    content: m.cache_control ? [block(m)] : m.content,
  }));
  if (messages[0]?.role !== 'user') {
    throw new CpError(
      'ERR_PROMPT_RENDER',
      `an Anthropic request must start with a user message, not ${messages[0]?.role ?? 'nothing'}`,
      {
        hint: 'start the first history after the developer zone with a user message, or set zones.user_instructions',
        details: { format: 'anthropic', first_role: messages[0]?.role ?? null },
      },
    );
  }
  const model = options.model ?? prompt.model;
  return {
    ...(model ? { model } : {}),
    max_tokens: options.maxTokens ?? prompt.max_output_tokens ?? DEFAULT_MAX_TOKENS,
    system,
    messages,
  };
}
