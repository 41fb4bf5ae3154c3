import { bodyInputBounds, bodyOutputBound, bodyOutputLimit } from '#budgeter/bound.js';
import { getString } from '#providers/json.js';
import { eventJson } from '#providers/wire/reader.js';
import type { SseFrame } from '#providers/wire/sse.js';
import type { WireSurface } from '#providers/wire/spec.js';
import { checkEmbeddings } from './embeddings.js';

/** A generation request, checked and prepared for the upstream. */
export interface Generation {
  model: string;
  stream: boolean;
  /** The body sent upstream: the client's, plus `stream_options.include_usage` on a streaming chat call. */
  upstreamBody: Record<string, unknown>;
  /** The conversation as recorded in the EXCHANGE's `prompt` (JSON: the surface's own fields, in its order). */
  prompt: string;
  /** `prompt` cut where the content store keeps blocks: each tool, system block and message its own piece. */
  promptPieces: string[];
  bounds: { estimated_input_tokens: number; max_output_tokens: number };
  /** The output the body makes the provider stop at, null when it names none (usage beyond it is not charged). */
  outputLimit: number | null;
  /** The most prompt tokens the body can hold, null when its bytes do not bound them (usage beyond it is not charged). */
  inputLimit: number | null;
  /** The client asked for the usage chunk itself (chat streams): otherwise the gateway strips it. */
  clientWantsUsage: boolean;
}

/** The output bound when a body names none (the Responses API and Chat Completions default to the model's limit). */
export const DEFAULT_OUTPUT_BOUND = 32_000;

/** Model ids as the budget, the breaker and the records hold them (real ones: `claude-sonnet-4-5`, `openai/gpt-4o`). */
export const MODEL_ID = /^[\x21-\x7e]{1,200}$/;

/** Output token fields, each bounded so a reservation stays a count a budget can hold. */
const OUTPUT_FIELDS = ['max_tokens', 'max_completion_tokens', 'max_output_tokens'] as const;
export const MAX_OUTPUT_TOKENS = 10_000_000;

/** A hostile value shown in a message: JSON, cut short. */
export function describe(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 60)}…` : text;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Check a generation body at the edge; a problem string names what is wrong. */
export function checkGeneration(surface: WireSurface, body: unknown): Generation | string {
  if (surface === 'openai.embeddings') return checkEmbeddings(body);
  if (!isObject(body)) return 'the request body must be a JSON object';
  const model = body.model;
  if (typeof model !== 'string' || !MODEL_ID.test(model))
    return `model: 1-200 printable ASCII characters without spaces are required, got ${describe(model)}`;
  for (const field of OUTPUT_FIELDS) {
    const value = body[field];
    if (
      value !== undefined &&
      value !== null &&
      !(Number.isSafeInteger(value) && (value as number) >= 1 && (value as number) <= MAX_OUTPUT_TOKENS)
    )
      return `${field}: a whole number from 1 to ${MAX_OUTPUT_TOKENS} is required, got ${describe(value)}`;
  }
  if (body.stream !== undefined && typeof body.stream !== 'boolean') return 'stream: must be a boolean';
  const stream = body.stream === true;
  let promptKeys: readonly string[];
  if (surface === 'anthropic.messages') {
    if (!Array.isArray(body.messages)) return 'messages: an array is required';
    if (body.max_tokens === undefined || body.max_tokens === null) return 'max_tokens: a positive integer is required';
    promptKeys = ['tools', 'system', 'messages'];
  } else if (surface === 'openai.chat') {
    if (!Array.isArray(body.messages)) return 'messages: an array is required';
    promptKeys = ['tools', 'messages'];
  } else {
    if (body.input === undefined) return 'input: a string or an array is required';
    promptKeys = ['tools', 'instructions', 'input'];
  }
  // The prompt's fields in this fixed order (what is recorded, whatever order the client sent); the rest apart.
  const prompt: Record<string, unknown> = {};
  for (const key of promptKeys) if (body[key] !== undefined) prompt[key] = body[key];
  const rest: Record<string, unknown> = {};
  for (const key of Object.keys(body)) {
    if (promptKeys.includes(key)) continue;
    Object.defineProperty(rest, key, { value: body[key], enumerable: true, writable: true, configurable: true });
  }
  const upstreamBody: Record<string, unknown> = { ...body };
  const options = isObject(body.stream_options) ? body.stream_options : null;
  const clientWantsUsage = options?.include_usage === true;
  if (surface === 'openai.chat' && stream && !clientWantsUsage)
    upstreamBody.stream_options = { ...(options ?? {}), include_usage: true };
  const { whole, pieces: promptPieces } = jsonPieces(prompt);
  // The body's JSON is the prompt's (serialised once, just above) and the rest's, give or take a comma.
  const input = bodyInputBounds(body, Buffer.byteLength(whole) + Buffer.byteLength(JSON.stringify(rest)));
  return {
    model,
    stream,
    upstreamBody,
    prompt: whole,
    promptPieces,
    clientWantsUsage,
    bounds: {
      estimated_input_tokens: input.bound,
      max_output_tokens: bodyOutputBound(body, DEFAULT_OUTPUT_BOUND),
    },
    outputLimit: bodyOutputLimit(body),
    inputLimit: input.limit,
  };
}

/**
 * `JSON.stringify(value)` in pieces: each field's value, and each element of an array field, is a piece of its
 * own, carrying the punctuation before it; the closing brackets are the last piece. A conversation resent with
 * one more turn shares every piece but that last one with the turn before it, which is what lets the content
 * store keep it once.
 *
 * The pieces are slices of the one joined string. `glue + json` is a V8 cons string, and every reader that
 * needs its characters in a row (the store's comparison with the turn before, the secret scrub's searches)
 * would copy it whole first; a slice of a flat string is read where it lies. The joined string is the prompt
 * the caller needs anyway.
 */
export function jsonPieces(value: Record<string, unknown>): { whole: string; pieces: string[] } {
  const glued = gluedPieces(value);
  const whole = glued.join('');
  const pieces: string[] = [];
  let at = 0;
  for (const piece of glued) pieces.push(whole.slice(at, (at += piece.length)));
  return { whole, pieces };
}

function gluedPieces(value: Record<string, unknown>): string[] {
  const pieces: string[] = [];
  let glue = '{';
  const piece = (json: string): void => {
    pieces.push(glue + json);
    glue = '';
  };
  let first = true;
  for (const key of Object.keys(value)) {
    const item = value[key];
    glue += `${first ? '' : ','}${JSON.stringify(key)}:`;
    first = false;
    if (Array.isArray(item)) {
      glue += '[';
      for (let i = 0; i < item.length; i += 1) {
        if (i > 0) glue += ',';
        piece(JSON.stringify(item[i]) ?? 'null');
      }
      glue += ']';
    } else piece(JSON.stringify(item));
  }
  pieces.push(`${glue}}`);
  return pieces;
}

/** A Responses body carries its conversation in `input`: bounded like messages. */
export type FrameAction = 'forward' | 'hold' | 'strip' | 'last';

/**
 * What happens to each upstream frame: forwarded as received, held until the EXCHANGE is committed (the
 * terminal event: nothing unrecorded is ever complete), stripped (the usage chunk a chat client did not ask for),
 * or forwarded as the last (an error that ends the stream). Nothing after a held or last frame is read.
 */
export function framePolicy(surface: WireSurface, clientWantsUsage: boolean): (frame: SseFrame) => FrameAction {
  if (surface === 'anthropic.messages')
    return (f) => {
      const type = eventType(f);
      return type === 'message_stop' ? 'hold' : type === 'error' ? 'last' : 'forward';
    };
  if (surface === 'gemini.stream') return geminiFrame;
  if (surface === 'openai.responses') {
    return (f) => {
      const type = eventType(f);
      return type === 'response.completed' || type === 'response.failed' || type === 'response.incomplete'
        ? 'hold'
        : 'forward';
    };
  }
  return (f) => {
    if (f.data === null) return 'forward';
    if (f.data.trim() === '[DONE]') return 'hold';
    if (!clientWantsUsage && isUsageChunk(f.data)) return 'strip';
    // A chunk carrying an error ends the stream, as the reader records it.
    if (f.data.includes('"error"') && eventJson(f.data)?.error !== undefined) return 'last';
    return 'forward';
  };
}

/**
 * A Gemini chunk: the one carrying the finish reason (or a blocked prompt's reason) ends the reply and is held; one
 * carrying an error ends it too. The cheap text checks spare parsing the many chunks that are neither.
 */
function geminiFrame(f: SseFrame): FrameAction {
  const data = f.data;
  if (data === null) return 'forward';
  const ends = data.includes('"finishReason"') || data.includes('"blockReason"');
  const failed = data.includes('"error"');
  if (!ends && !failed) return 'forward';
  const chunk = eventJson(data);
  if (failed && chunk?.error !== undefined) return 'last';
  const candidate = Array.isArray(chunk?.candidates) ? (chunk.candidates[0] as Record<string, unknown> | null) : null;
  const blocked = isObject(chunk?.promptFeedback) && chunk.promptFeedback.blockReason !== undefined;
  return (isObject(candidate) && typeof candidate.finishReason === 'string') || blocked ? 'hold' : 'forward';
}

/**
 * A frame's event as the surface readers take it: its `event:` name, else its data's `type`. A terminal event sent
 * without a name completes the reply for the reader, so it must be held like a named one.
 */
function eventType(f: SseFrame): string | null {
  if (f.event !== null) return f.event;
  return f.data === null ? null : getString(eventJson(f.data), 'type');
}

/** The chunk `include_usage` adds: no choices, a usage object. */
function isUsageChunk(data: string): boolean {
  if (!data.includes('"usage"')) return false;
  try {
    const chunk = JSON.parse(data) as { choices?: unknown; usage?: unknown };
    return Array.isArray(chunk.choices) && chunk.choices.length === 0 && isObject(chunk.usage);
  } catch {
    return false;
  }
}
