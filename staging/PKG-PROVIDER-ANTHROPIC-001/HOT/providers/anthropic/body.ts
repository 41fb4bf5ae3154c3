import { requireModelMessagesMax, systemBlocks } from '#providers/request.js';
import type { JsonObject } from '#providers/json.js';
import type { SimpleRequest } from '#providers/spec.js';

/** A Messages API body for a simple request; `cache: true` system blocks get an ephemeral cache breakpoint. */
export function messagesBody(request: SimpleRequest): Record<string, unknown> {
  const body: Record<string, unknown> = { model: request.model, max_tokens: request.max_tokens };
  const system = systemBlocks(request.system);
  if (system.length > 0) {
    body.system = system.map((b) =>
      b.cache ? { type: 'text', text: b.text, cache_control: { type: 'ephemeral' } } : { type: 'text', text: b.text },
    );
  }
  body.messages = [{ role: 'user', content: request.prompt }];
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.stop_sequences !== undefined) body.stop_sequences = [...request.stop_sequences];
  return body;
}

/** A pre-rendered Messages body needs model, max_tokens and messages; everything else is sent as is. */
export function checkMessagesBody(body: JsonObject): string | null {
  if (body.stream === true) return 'body.stream must not be true (streaming is not supported by this provider)';
  return requireModelMessagesMax(body, ['max_tokens']);
}
