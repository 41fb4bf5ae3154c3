import { asObject, getObject, getString, type JsonObject } from '#providers/json.js';
import {
  boundedRaw,
  emptyResult,
  eventJson,
  passThroughReader,
  shortField,
  toolInput,
} from '#providers/wire/reader.js';
import type { WireReader, WireResult, WireSurface } from '#providers/wire/spec.js';
import { normaliseStopReason, parseUsage } from './reply.js';

/** The Anthropic surfaces this provider forwards, and their upstream paths. */
export const ANTHROPIC_WIRE_PATHS: Partial<Record<WireSurface, { method: 'GET' | 'POST'; path: string }>> = {
  'anthropic.messages': { method: 'POST', path: '/v1/messages' },
  'anthropic.count_tokens': { method: 'POST', path: '/v1/messages/count_tokens' },
  'anthropic.models': { method: 'GET', path: '/v1/models' },
};

export function anthropicReader(surface: WireSurface): WireReader {
  return surface === 'anthropic.messages' ? new MessagesReader() : passThroughReader();
}

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
    const usage = raw === null ? { ...this.state.usage } : { ...parseUsage(raw), raw: boundedRaw(raw) };
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
