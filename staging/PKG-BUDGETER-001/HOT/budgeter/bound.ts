/**
 * Provable upper bounds on the tokens a call can consume, so a reservation is never smaller than what the
 * provider can bill (docs/architecture/budgeter.md, "The reservation bound").
 *
 * Input: byte-level BPE tokenizers (Claude, GPT) map every token to at least one byte of the UTF-8 text they are
 * given, so a text of B bytes is at most B tokens. The chat template around the text adds tokens that are not in
 * it (role markers, turn separators, the assistant turn primer); MESSAGE_OVERHEAD_TOKENS bounds those per
 * message, and one more overhead is counted for the request itself.
 *
 * A rendered provider body is bounded by the UTF-8 byte length of its JSON: every text it carries (system,
 * message contents, tool definitions) appears in it at least byte for byte, since JSON only adds quotes, keys
 * and escapes. Any key order gives the same length, so this is JSON.stringify's (native, where a sorted
 * serialisation of a 150k-token conversation took milliseconds). Text the provider adds around tools (Anthropic's tool-use system prompt, a few hundred
 * tokens) is bounded by TOOL_USE_OVERHEAD_TOKENS, and an image block, billed by its pixels rather than its bytes
 * and capped by the providers' resizing, by IMAGE_TOKENS. Documents (PDF pages) are not bounded by this.
 */
export const MESSAGE_OVERHEAD_TOKENS = 16;
export const TOOL_USE_OVERHEAD_TOKENS = 1024;
export const IMAGE_TOKENS = 4096;

const IMAGE_BLOCK_TYPES = new Set(['image', 'image_url', 'input_image']);
/** Blocks billed by what the provider extracts from them (PDF pages), which their bytes do not bound. */
const DOCUMENT_BLOCK_TYPES = new Set(['document', 'file', 'input_file']);

/** Image and document blocks anywhere in a body (content blocks, tool results), in one walk. */
function blocksIn(value: unknown, found: { images: number; documents: number }, depth = 0): void {
  if (depth > 64 || typeof value !== 'object' || value === null) return;
  if (Array.isArray(value)) {
    for (const item of value) blocksIn(item, found, depth + 1);
    return;
  }
  const type = (value as { type?: unknown }).type;
  if (typeof type === 'string') {
    if (IMAGE_BLOCK_TYPES.has(type)) found.images += 1;
    else if (DOCUMENT_BLOCK_TYPES.has(type)) found.documents += 1;
  }
  for (const key in value) blocksIn((value as Record<string, unknown>)[key], found, depth + 1);
}

function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** A plain prompt sent as one user message (plus an optional system prompt, one more message). */
export function promptInputBound(prompt: string, system?: string): number {
  const messages = system === undefined ? 1 : 2;
  return utf8Bytes(prompt) + (system === undefined ? 0 : utf8Bytes(system)) + MESSAGE_OVERHEAD_TOKENS * (messages + 1);
}

/** What a body's input is bounded by (bodyInputBounds). */
export interface InputBounds {
  /** The most input tokens the body can be billed: what its reservation holds. */
  bound: number;
  /**
   * The most prompt tokens an honest provider can report for it: the bound, or null when it holds a document
   * block (not bounded by its bytes). Usage reporting more than this is a lie settle() does not charge.
   */
  limit: number | null;
}

/**
 * A provider-native body (an Anthropic Messages body from the prompt compiler, a client's body at the gateway).
 * `jsonBytes`, the UTF-8 length of the body's JSON or more, is given by a caller that serialised it already.
 */
export function bodyInputBounds(
  body: Readonly<Record<string, unknown>>,
  jsonBytes: number = utf8Bytes(JSON.stringify(body)),
): InputBounds {
  // Chat bodies carry `messages` and `system`; Responses bodies their `input` (items, or one text) and `instructions`.
  const input = body.input;
  const messages =
    (Array.isArray(body.messages) ? body.messages.length : 0) +
    (Array.isArray(input) ? input.length : input === undefined ? 0 : 1);
  const system = (body.system === undefined ? 0 : 1) + (body.instructions === undefined ? 0 : 1);
  const tools = Array.isArray(body.tools) ? body.tools.length : 0;
  const blocks = { images: 0, documents: 0 };
  blocksIn(body, blocks);
  const bound =
    jsonBytes +
    MESSAGE_OVERHEAD_TOKENS * (messages + system + tools + 1) +
    (tools > 0 ? TOOL_USE_OVERHEAD_TOKENS : 0) +
    IMAGE_TOKENS * blocks.images;
  return { bound, limit: blocks.documents > 0 ? null : bound };
}

export function bodyInputBound(body: Readonly<Record<string, unknown>>): number {
  return bodyInputBounds(body).bound;
}

export function bodyInputLimit(body: Readonly<Record<string, unknown>>): number | null {
  return bodyInputBounds(body).limit;
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
