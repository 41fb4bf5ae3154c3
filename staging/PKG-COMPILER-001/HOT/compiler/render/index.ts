import { CpError, show } from '#kernel/errors.js';
import type { CompiledPrompt } from '../compile.js';
import { renderAnthropic, type RenderOptions } from './anthropic.js';
import { renderOpenAIChat } from './openai-chat.js';
import { renderOpenAIResponses } from './openai-responses.js';

export const PROMPT_FORMATS = ['neutral', 'anthropic', 'openai-responses', 'openai-chat'] as const;
export type PromptFormat = (typeof PROMPT_FORMATS)[number];

/** The provider request body for `format`, or null for the neutral format. */
export function renderBody(prompt: CompiledPrompt, format: PromptFormat, options: RenderOptions = {}): object | null {
  switch (format) {
    case 'neutral':
      return null;
    case 'anthropic':
      return renderAnthropic(prompt, options);
    case 'openai-responses':
      return renderOpenAIResponses(prompt, options);
    case 'openai-chat':
      return renderOpenAIChat(prompt, options);
    default:
      throw new CpError('ERR_PROMPT_FORMAT_UNKNOWN', `unknown prompt format ${show(format)}`, {
        hint: `use one of ${PROMPT_FORMATS.join(', ')}`,
      });
  }
}
