import { canonicalJson } from '#kernel/canonical.js';

/**
 * Provable upper bounds on the tokens a call can consume, so a reservation is never smaller than what the
 * provider can bill (README, token budgeter, "The reservation bound").
 *
 * Input: byte-level BPE tokenizers (Claude, GPT) map every token to at least one byte of the UTF-8 text they are
 * given, so a text of B bytes is at most B tokens. The chat template around the text adds tokens that are not in
 * it (role markers, turn separators, the assistant turn primer); MESSAGE_OVERHEAD_TOKENS bounds those per
 * message, and one more overhead is counted for the request itself.
 *
 * A rendered provider body is bounded by the UTF-8 byte length of its canonical JSON: every text it carries
 * (system, message contents, tool definitions) appears in it at least byte for byte, since JSON only adds
 * quotes, keys and escapes. Text the provider adds around tools (Anthropic's tool-use system prompt, a few hundred
 * tokens) is bounded by TOOL_USE_OVERHEAD_TOKENS, and an image block, billed by its pixels rather than its bytes
 * and capped by the providers' resizing, by IMAGE_TOKENS. Documents (PDF pages) are not bounded by this.
 */
export const MESSAGE_OVERHEAD_TOKENS = 16;
export const TOOL_USE_OVERHEAD_TOKENS = 1024;
export const IMAGE_TOKENS = 4096;

const IMAGE_BLOCK_TYPES = new Set(['image', 'image_url', 'input_image']);
/** Blocks billed by what the provider extracts from them (PDF pages), which their bytes do not bound. */
const DOCUMENT_BLOCK_TYPES = new Set(['document', 'file', 'input_file']);

/** Blocks of the given types anywhere in a body (content blocks, tool results). */
function blocksOf(types: ReadonlySet<string>, value: unknown, depth = 0): number {
  if (depth > 64 || typeof value !== 'object' || value === null) return 0;
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + blocksOf(types, v, depth + 1), 0);
  const own = types.has((value as { type?: unknown }).type as string) ? 1 : 0;
  return own + Object.values(value).reduce((n: number, v) => n + blocksOf(types, v, depth + 1), 0);
}

function imageBlocks(value: unknown): number {
  return blocksOf(IMAGE_BLOCK_TYPES, value);
}

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
  // Chat bodies carry `messages` and `system`; Responses bodies their `input` items and `instructions`.
  const messages =
    (Array.isArray(body.messages) ? body.messages.length : 0) + (Array.isArray(body.input) ? body.input.length : 0);
  const system = (body.system === undefined ? 0 : 1) + (body.instructions === undefined ? 0 : 1);
  const tools = Array.isArray(body.tools) ? body.tools.length : 0;
  return (
    utf8Bytes(canonicalJson(body)) +
    MESSAGE_OVERHEAD_TOKENS * (messages + system + tools + 1) +
    (tools > 0 ? TOOL_USE_OVERHEAD_TOKENS : 0) +
    IMAGE_TOKENS * imageBlocks(body)
  );
}

/**
 * The most prompt tokens an honest provider can report for a body: its input bound, or null when it holds a
 * document block (not bounded by its bytes). Usage reporting more than this is a lie settle() does not charge.
 */
export function bodyInputLimit(body: Readonly<Record<string, unknown>>): number | null {
  return blocksOf(DOCUMENT_BLOCK_TYPES, body) > 0 ? null : bodyInputBound(body);
}

/**
 * The output allowance a body asks the provider for: the largest of its max-token fields (Anthropic
 * `max_tokens`, OpenAI `max_completion_tokens` / legacy `max_tokens`), or `fallback` when it names none, times
 * the number of choices asked for (OpenAI `n`: each choice is billed its own output).
 */
export function bodyOutputBound(body: Readonly<Record<string, unknown>>, fallback: number): number {
  return bodyOutputLimit(body) ?? fallback * outputChoices(body);
}

const isPositiveCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v > 0;

function outputChoices(body: Readonly<Record<string, unknown>>): number {
  return isPositiveCount(body.n) ? body.n : 1;
}

/**
 * The output a body makes the provider stop at (its largest max-token field times its choices), or null when it
 * names none and the provider's own default applies. An honest reply never reports more output than this.
 */
export function bodyOutputLimit(body: Readonly<Record<string, unknown>>): number | null {
  const asked = ['max_tokens', 'max_completion_tokens', 'max_output_tokens']
    .map((key) => body[key])
    .filter(isPositiveCount);
  return asked.length === 0 ? null : Math.max(...asked) * outputChoices(body);
}
