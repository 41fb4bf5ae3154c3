import { requireModelMessagesMax, systemBlocks } from '#providers/request.js';
import type { JsonObject } from '#providers/json.js';
import type { SimpleRequest } from '#providers/spec.js';

/** A Chat Completions body for a simple request (system blocks joined into one system message). */
export function chatBody(request: SimpleRequest): Record<string, unknown> {
  const system = systemBlocks(request.system)
    .map((b) => b.text)
    .join('\n\n');
  const messages: { role: string; content: string }[] = [];
  if (system !== '') messages.push({ role: 'system', content: system });
  messages.push({ role: 'user', content: request.prompt });
  const body: Record<string, unknown> = { model: request.model, max_tokens: request.max_tokens, messages };
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.stop_sequences !== undefined) body.stop = [...request.stop_sequences];
  return body;
}

export function checkChatBody(body: JsonObject): string | null {
  if (body.stream === true) return 'body.stream must not be true (streaming is not supported by this provider)';
  return requireModelMessagesMax(body, ['max_tokens', 'max_completion_tokens']);
}
