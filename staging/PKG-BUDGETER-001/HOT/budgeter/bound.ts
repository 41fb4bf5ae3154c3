import { canonicalJson } from '../kernel/canonical.js';

/**
 * Provable upper bounds on the tokens a call can consume, so a reservation is never smaller than what the
 * provider can bill (README "Budgets: the reservation bound").
 *
 * Input: byte-level BPE tokenizers (Claude, GPT) map every token to at least one byte of the UTF-8 text they are
 * given, so a text of B bytes is at most B tokens. The chat template around the text adds tokens that are not in
 * it (role markers, turn separators, the assistant turn primer); MESSAGE_OVERHEAD_TOKENS bounds those per
 * message, and one more overhead is counted for the request itself.
 *
 * A rendered provider body is bounded by the UTF-8 byte length of its canonical JSON: every text it carries
 * (system, message contents, tool definitions) appears in it at least byte for byte, since JSON only adds
 * quotes, keys and escapes. Images and documents are billed by the provider's own rules, not by bytes; the
 * bound covers them only through their encoded bytes.
 */
export const MESSAGE_OVERHEAD_TOKENS = 16;

function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** A plain prompt sent as one user message (plus an optional system prompt, one more message). */
export function promptInputBound(prompt: string, system?: string): number {
  const messages = system === undefined ? 1 : 2;
  return utf8Bytes(prompt) + (system === undefined ? 0 : utf8Bytes(system)) + MESSAGE_OVERHEAD_TOKENS * (messages + 1);
}

/** A provider-native body (e.g. an Anthropic Messages body from the prompt compiler). */
export function bodyInputBound(body: Readonly<Record<string, unknown>>): number {
  const messages = Array.isArray(body.messages) ? body.messages.length : 0;
  const system = body.system === undefined ? 0 : 1;
  return utf8Bytes(canonicalJson(body)) + MESSAGE_OVERHEAD_TOKENS * (messages + system + 1);
}

/**
 * The output allowance a body asks the provider for: the largest of its max-token fields (Anthropic
 * `max_tokens`, OpenAI `max_completion_tokens` / legacy `max_tokens`), or `fallback` when it names none.
 */
export function bodyOutputBound(body: Readonly<Record<string, unknown>>, fallback: number): number {
  const asked = ['max_tokens', 'max_completion_tokens', 'max_output_tokens']
    .map((key) => body[key])
    .filter((v): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v > 0);
  return asked.length === 0 ? fallback : Math.max(...asked);
}
