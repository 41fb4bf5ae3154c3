// The Anthropic Messages wire format: its usage, its stop reasons, and the reader of a whole or streamed reply.
// Any provider speaking it (Anthropic, the mock, a compatible proxy) reads its replies with this.
import { asObject, getCount, getObject, getString, type JsonObject } from '../json.js';
import { stopReasonNormaliser } from '../reply.js';
import type { Usage } from '../spec.js';
import { boundedRaw, emptyResult, eventJson, passThroughReader, shortField, toolInput } from '../wire/reader.js';
import type { WireReader, WireResult, WireSurface } from '../wire/spec.js';

/**
 * Anthropic's `input_tokens` excludes the cache buckets; the normalised `input_tokens` is their sum
 * (all prompt tokens), and unknown if any part is unknown.
 */
export function parseUsage(usage: JsonObject | null): Usage {
  const uncached = getCount(usage, 'input_tokens');
  const write = getCount(usage, 'cache_creation_input_tokens');
  const read = getCount(usage, 'cache_read_input_tokens');
  return {
    input_tokens: uncached === null || write === null || read === null ? null : uncached + write + read,
    output_tokens: getCount(usage, 'output_tokens'),
    cache_read_tokens: read,
    cache_write_tokens: write,
    raw: usage,
  };
}

/**
 * Usage from Claude on AWS Bedrock's InvokeModel: as `parseUsage`, except that a cache count left out reads zero
 * rather than unknown. AWS sends the cache counts only when the prompt used the cache (its Converse `TokenUsage`
 * documents them as optional the same way); Anthropic's own API always sends both, so its readers keep an absent
 * count unknown. A count that is present but not a count stays unknown.
 */
export function omittedCacheUsage(usage: JsonObject | null): Usage {
  if (usage === null) return parseUsage(null);
  return { ...parseUsage({ cache_creation_input_tokens: 0, cache_read_input_tokens: 0, ...usage }), raw: usage };
}

export const normaliseStopReason = stopReasonNormaliser({
  end_turn: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
  tool_use: 'tool_use',
  refusal: 'content_filter',
});

/** The reader of an Anthropic surface; `usage` reads Messages usage (`omittedCacheUsage` for Bedrock). */
export function anthropicReader(surface: WireSurface, usage: UsageParser = parseUsage): WireReader {
  return surface === 'anthropic.messages' ? new MessagesReader(usage) : passThroughReader();
}

type UsageParser = (usage: JsonObject | null) => Usage;

interface OpenBlock {
  block: Record<string, unknown>;
  /** Streamed tool input (`input_json_delta`), parsed when the block ends. */
  json: string | null;
}

/**
 * One Messages reply. Streaming usage is exact: `message_start.message.usage`, each field overwritten by the
 * last `message_delta.usage` that carries it (the deltas are cumulative, never summed); cache reads and writes
 * stay in their own buckets.
 */
class MessagesReader implements WireReader {
  private readonly state: WireResult = emptyResult();
  private usage: Record<string, unknown> = {};
  private readonly open = new Map<number, OpenBlock>();
  private readonly order: OpenBlock[] = [];

  constructor(private readonly parse: UsageParser) {}

  body(value: unknown): string | null {
    const body = asObject(value);
    if (body === null || !Array.isArray(body.content)) return 'not a Messages reply (no content array)';
    for (const item of body.content) {
      const block = asObject(item);
      if (block !== null) this.order.push({ block: blockOf(block), json: null });
    }
    this.state.model = shortField(body, 'model');
    this.stop(getString(body, 'stop_reason'));
    this.usage = { ...(getObject(body, 'usage') ?? {}) };
    this.state.usage_final = getObject(body, 'usage') !== null;
    this.state.complete = true;
    return null;
  }

  event(name: string | null, data: string): void {
    const json = eventJson(data);
    const type = name ?? getString(json, 'type');
    if (json === null) return;
    if (type === 'message_start') {
      const message = getObject(json, 'message');
      this.state.model = shortField(message, 'model');
      this.usage = { ...(getObject(message, 'usage') ?? {}) };
    } else if (type === 'content_block_start') {
      const index = json.index;
      const block = getObject(json, 'content_block');
      if (typeof index !== 'number' || block === null) return;
      const open: OpenBlock = {
        block: blockOf(block),
        json: block.type === 'tool_use' || block.type === 'server_tool_use' ? '' : null,
      };
      if (open.json !== null) delete open.block.input;
      this.open.set(index, open);
      this.order.push(open);
    } else if (type === 'content_block_delta') {
      const open = typeof json.index === 'number' ? this.open.get(json.index) : undefined;
      const delta = getObject(json, 'delta');
      if (open === undefined || delta === null) return;
      if (delta.type === 'text_delta' && typeof delta.text === 'string')
        open.block.text = `${String(open.block.text ?? '')}${delta.text}`;
      else if (delta.type === 'input_json_delta' && typeof delta.partial_json === 'string')
        open.json = `${open.json ?? ''}${delta.partial_json}`;
      else if (delta.type === 'thinking_delta' && typeof delta.thinking === 'string')
        open.block.thinking = `${String(open.block.thinking ?? '')}${delta.thinking}`;
    } else if (type === 'content_block_stop') {
      const open = typeof json.index === 'number' ? this.open.get(json.index) : undefined;
      if (open?.json !== null && open !== undefined) open.block.input = toolInput(open.json);
    } else if (type === 'message_delta') {
      this.stop(getString(getObject(json, 'delta'), 'stop_reason'));
      const usage = getObject(json, 'usage');
      if (usage !== null) {
        for (const [key, value] of Object.entries(usage))
          if (value !== null && value !== undefined) this.usage[key] = value;
        this.state.usage_final = true;
      }
    } else if (type === 'message_stop') {
      this.state.complete = true;
    } else if (type === 'error') {
      const error = getObject(json, 'error');
      this.state.stream_error = `${getString(error, 'type') ?? 'error'}: ${getString(error, 'message') ?? ''}`;
    }
  }

  result(): WireResult {
    for (const open of this.order)
      if (open.json !== null && open.block.input === undefined) open.block.input = toolInput(open.json);
    const raw = Object.keys(this.usage).length === 0 ? null : (this.usage as JsonObject);
    const usage = raw === null ? { ...this.state.usage } : { ...this.parse(raw), raw: boundedRaw(raw) };
    return { ...this.state, usage, blocks: this.order.map((o) => o.block) };
  }

  private stop(raw: string | null): void {
    if (raw === null) return;
    this.state.raw_stop_reason = raw;
    this.state.stop_reason = normaliseStopReason(raw);
  }
}

/** The parts of a content block an EXCHANGE keeps: its type, text, and a tool call's id, name and input. */
function blockOf(block: JsonObject): Record<string, unknown> {
  const out: Record<string, unknown> = { type: typeof block.type === 'string' ? block.type : 'unknown' };
  for (const key of ['id', 'name', 'text', 'thinking', 'input'] as const) {
    if (block[key] !== undefined) out[key] = block[key];
  }
  return out;
}
