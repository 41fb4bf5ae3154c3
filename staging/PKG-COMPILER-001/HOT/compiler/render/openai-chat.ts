import type { CompiledPrompt } from '../compile.js';
import type { RenderOptions } from './anthropic.js';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}
export interface OpenAIChatBody {
  model?: string;
  messages: ChatMessage[];
  max_tokens?: number;
}

/**
 * OpenAI Chat Completions body. The system zone is the first system message; developer-zone messages
 * are sent as `system` messages right after it, because many OpenAI-compatible servers (local model
 * servers) reject the newer `developer` role. Order is the compiled order, so prefix caching works.
 */
export function renderOpenAIChat(prompt: CompiledPrompt, options: RenderOptions = {}): OpenAIChatBody {
  const model = options.model ?? prompt.model;
  const maxTokens = options.maxTokens ?? prompt.max_output_tokens;
  return {
    ...(model ? { model } : {}),
    messages: [
      { role: 'system', content: prompt.instructions },
      ...prompt.messages.map(
        (m): ChatMessage => ({ role: m.role === 'developer' ? 'system' : m.role, content: m.content }),
      ),
    ],
    ...(maxTokens ? { max_tokens: maxTokens } : {}),
  };
}
