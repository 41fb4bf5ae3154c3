// The Gemini API wire format (Generative Language API, `generateContent` and `streamGenerateContent?alt=sse`): its
// usage, its finish reasons, and the reader of a whole or streamed reply. Any provider speaking it reads its replies
// with this.
import { asObject, getCount, getObject, getString, type JsonObject } from '../json.js';
import { stopReasonNormaliser } from '../reply.js';
import type { StopReason, Usage } from '../spec.js';
import { boundedRaw, emptyResult, eventJson, passThroughReader, shortField } from '../wire/reader.js';
import type { WireReader, WireResult, WireSurface } from '../wire/spec.js';

/**
 * `usageMetadata` as normalised usage. The API is proto3 JSON: a count of zero is left out, so once the prompt count
 * is there an absent count is a known 0 (no cache hit, no thinking), while a count sent as anything but a whole
 * number is unknown. `promptTokenCount` already holds the cached tokens (`cachedContentTokenCount`, the cache read);
 * tool-use prompt tokens (`toolUsePromptTokenCount`) are input too, since `totalTokenCount` sums them apart. Thinking
 * (`thoughtsTokenCount`) is billed as output and is not in `candidatesTokenCount`, so output is their sum. Gemini
 * has no cache-write bucket: explicit caches are billed by storage time, never per token written.
 */
export function parseUsage(usage: JsonObject | null): Usage {
  const prompt = getCount(usage, 'promptTokenCount');
  if (usage === null || prompt === null)
    return { input_tokens: null, output_tokens: null, cache_read_tokens: null, cache_write_tokens: null, raw: usage };
  const count = (key: string): number | null => (usage[key] === undefined ? 0 : getCount(usage, key));
  const toolUse = count('toolUsePromptTokenCount');
  const candidates = count('candidatesTokenCount');
  const thoughts = count('thoughtsTokenCount');
  return {
    input_tokens: toolUse === null ? null : prompt + toolUse,
    output_tokens: candidates === null || thoughts === null ? null : candidates + thoughts,
    cache_read_tokens: count('cachedContentTokenCount'),
    cache_write_tokens: 0,
    raw: usage,
  };
}

const FILTERED: StopReason = 'content_filter';

const finishReason = stopReasonNormaliser({
  STOP: 'stop',
  MAX_TOKENS: 'length',
  SAFETY: FILTERED,
  RECITATION: FILTERED,
  BLOCKLIST: FILTERED,
  PROHIBITED_CONTENT: FILTERED,
  SPII: FILTERED,
  IMAGE_SAFETY: FILTERED,
  IMAGE_PROHIBITED_CONTENT: FILTERED,
  IMAGE_RECITATION: FILTERED,
});

/**
 * A finish reason (or a prompt's `blockReason`) normalised. Gemini ends a turn that calls functions with `STOP`:
 * a reply holding a function call stopped for tool use, as the blocks say.
 */
export function normaliseStopReason(raw: string | null, calledTools = false): StopReason {
  const stop = finishReason(raw);
  return calledTools && stop === 'stop' ? 'tool_use' : stop;
}

export function geminiReader(surface: WireSurface): WireReader {
  return surface === 'gemini.generate' || surface === 'gemini.stream' ? new GenerateReader() : passThroughReader();
}

/**
 * One generateContent reply: the whole body, or the chunks of its SSE stream (each a GenerateContentResponse whose
 * first candidate carries the next parts; the last one its `finishReason` and the final `usageMetadata`). Usage
 * is the last `usageMetadata` seen, never summed (each chunk's is the running total); it is final once it came with
 * or after the finish reason. There is no terminal event: the reply is complete once a finish reason (or a blocked
 * prompt's `blockReason`) arrived.
 */
class GenerateReader implements WireReader {
  private readonly state: WireResult = emptyResult();
  private readonly blocks: Record<string, unknown>[] = [];
  private usage: JsonObject | null = null;

  body(value: unknown): string | null {
    const body = asObject(value);
    if (body === null || (!Array.isArray(body.candidates) && getObject(body, 'promptFeedback') === null))
      return 'not a generateContent reply (no candidates or promptFeedback)';
    this.chunk(body);
    this.state.usage_final = this.usage !== null;
    this.state.complete = true;
    return null;
  }

  event(_name: string | null, data: string): void {
    const chunk = eventJson(data);
    if (chunk === null) return;
    const error = getObject(chunk, 'error');
    if (error !== null) {
      this.state.stream_error = `${getString(error, 'status') ?? 'error'}: ${getString(error, 'message') ?? ''}`;
      return;
    }
    this.chunk(chunk);
  }

  result(): WireResult {
    const calledTools = this.blocks.some((b) => b.type === 'tool_use');
    const usage = this.usage === null ? parseUsage(null) : { ...parseUsage(this.usage), raw: boundedRaw(this.usage) };
    return {
      ...this.state,
      stop_reason: normaliseStopReason(this.state.raw_stop_reason, calledTools),
      usage,
      blocks: this.blocks.map((b) => ({ ...b })),
    };
  }

  private chunk(chunk: JsonObject): void {
    this.state.model = shortField(chunk, 'modelVersion') ?? this.state.model;
    this.state.response_id = shortField(chunk, 'responseId') ?? this.state.response_id ?? null;
    const candidate = firstCandidate(chunk);
    const parts = getObject(candidate, 'content')?.parts;
    if (Array.isArray(parts)) for (const part of parts) this.part(asObject(part));
    const finished =
      getString(candidate, 'finishReason') ?? getString(getObject(chunk, 'promptFeedback'), 'blockReason');
    if (finished !== null) {
      this.state.raw_stop_reason = finished;
      this.state.complete = true;
    }
    const usage = getObject(chunk, 'usageMetadata');
    if (usage !== null) {
      this.usage = usage;
      this.state.usage_final = this.state.complete;
    }
  }

  /** Text parts run together into one block (thought parts into a thinking block); a function call is a block. */
  private part(part: JsonObject | null): void {
    if (part === null) return;
    const call = getObject(part, 'functionCall');
    if (call !== null) {
      this.blocks.push({
        type: 'tool_use',
        id: getString(call, 'id'),
        name: getString(call, 'name'),
        input: call.args ?? {},
      });
      return;
    }
    if (typeof part.text !== 'string') return;
    const [type, key] = part.thought === true ? ['thinking', 'thinking'] : ['text', 'text'];
    const last = this.blocks[this.blocks.length - 1];
    if (last?.type === type) last[key] = `${String(last[key] ?? '')}${part.text}`;
    else this.blocks.push({ type, [key]: part.text });
  }
}

/** The reply's first candidate (`index` 0, which Gemini leaves out as a proto3 zero); the one a record keeps. */
function firstCandidate(chunk: JsonObject): JsonObject | null {
  if (!Array.isArray(chunk.candidates)) return null;
  for (const item of chunk.candidates) {
    const candidate = asObject(item);
    if (candidate !== null && (candidate.index === undefined || candidate.index === 0)) return candidate;
  }
  return null;
}
