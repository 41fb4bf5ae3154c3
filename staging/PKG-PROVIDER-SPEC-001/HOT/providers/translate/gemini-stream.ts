// Streams between Gemini and Messages, event by event in order.
import { getObject, getString, type JsonObject } from '../json.js';
import { eventJson } from '../wire/reader.js';
import type { SseFrame } from '../wire/sse.js';
import { anthropicStopToGemini, blocksToParts, firstCandidate, geminiStop, partsToBlocks } from './gemini-replies.js';
import { refuse, shown } from './refusal.js';
import { MAX_STREAM_BLOCKS, MAX_STREAM_TOOL_CALLS, type StreamTranslator } from './stream.js';
import { anthropicUsageToGemini, geminiUsageToAnthropic } from './usage.js';

function frame(event: string | null, data: unknown): SseFrame {
  const text = JSON.stringify(data);
  return { raw: `${event === null ? '' : `event: ${event}\n`}data: ${text}\n\n`, event, data: text };
}

const named = (type: string, body: Record<string, unknown>): SseFrame => frame(type, { type, ...body });

/**
 * Gemini chunks as Messages events: message_start on the first chunk, a text block per run of text parts, a
 * tool_use block per function call (Gemini sends each whole: its arguments in one input_json_delta); the chunk
 * carrying the finish reason (Gemini's last) ends the message with message_delta (its usage) and message_stop.
 */
export class GeminiToAnthropicStream implements StreamTranslator {
  private started = false;
  private index = -1;
  private textOpen = false;
  private readonly calls = { k: 0 };
  private responseId: string | null = null;

  push(f: SseFrame): SseFrame[] {
    if (f.data === null) return [];
    const chunk = eventJson(f.data);
    if (chunk === null) return [];
    const error = getObject(chunk, 'error');
    if (error !== null) {
      const message = getString(error, 'message') ?? 'upstream error';
      return [named('error', { error: { type: 'api_error', message } })];
    }
    const out: SseFrame[] = [];
    this.responseId ??= getString(chunk, 'responseId');
    if (!this.started) {
      this.started = true;
      out.push(named('message_start', { message: this.message(chunk) }));
    }
    const candidate = firstCandidate(chunk);
    const parts = getObject(candidate, 'content')?.parts;
    for (const block of partsToBlocks(parts, 'candidates[0].content.parts', this.responseId, this.calls))
      out.push(...this.block(block));
    const finish = getString(candidate, 'finishReason');
    const blocked = candidate === null ? getString(getObject(chunk, 'promptFeedback'), 'blockReason') : null;
    if (finish === null && blocked === null) return out;
    out.push(...this.close());
    const stop = blocked !== null ? 'refusal' : geminiStop(finish ?? 'STOP', this.calls.k > 0, 'finishReason');
    const usage = geminiUsageToAnthropic(getObject(chunk, 'usageMetadata'));
    out.push(named('message_delta', { delta: { stop_reason: stop, stop_sequence: null }, usage }));
    out.push(named('message_stop', {}));
    return out;
  }

  private message(chunk: JsonObject): Record<string, unknown> {
    return {
      id: `msg_${getString(chunk, 'responseId') ?? 'translated'}`,
      type: 'message',
      role: 'assistant',
      model: chunk.modelVersion ?? null,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      // The counts are final in the last chunk; message_delta carries them whole (the SDKs overwrite these).
      usage: { input_tokens: 0, output_tokens: 0 },
    };
  }

  private block(block: Record<string, unknown>): SseFrame[] {
    if (block.type === 'text') {
      const out = this.textOpen ? [] : this.begin({ type: 'text', text: '' });
      this.textOpen = true;
      out.push(named('content_block_delta', { index: this.index, delta: { type: 'text_delta', text: block.text } }));
      return out;
    }
    if (this.calls.k > MAX_STREAM_TOOL_CALLS) refuse('functionCall', `more than ${MAX_STREAM_TOOL_CALLS} calls`);
    const out = [...this.close(), ...this.begin({ type: 'tool_use', id: block.id, name: block.name, input: {} })];
    const partial = JSON.stringify(block.input);
    out.push(
      named('content_block_delta', { index: this.index, delta: { type: 'input_json_delta', partial_json: partial } }),
    );
    out.push(named('content_block_stop', { index: this.index }));
    return out;
  }

  private begin(block: Record<string, unknown>): SseFrame[] {
    if (this.index + 1 >= MAX_STREAM_BLOCKS) refuse('parts', `more than ${MAX_STREAM_BLOCKS} content blocks`);
    this.index += 1;
    return [named('content_block_start', { index: this.index, content_block: block })];
  }

  private close(): SseFrame[] {
    if (!this.textOpen) return [];
    this.textOpen = false;
    return [named('content_block_stop', { index: this.index })];
  }
}

/**
 * Messages events as Gemini chunks (`data:` frames, each a GenerateContentResponse): a chunk per text delta, a chunk
 * per tool_use once its input is whole (Gemini streams a function call whole). Each chunk is sent one event late, so
 * the last one can carry the finish reason and the final usageMetadata, as Gemini's own last chunk does.
 */
export class AnthropicToGeminiStream implements StreamTranslator {
  private id: string | null = null;
  private model: unknown = null;
  private usage: Record<string, unknown> = {};
  private stop: string | null = null;
  private pending: Record<string, unknown>[] | null = null;
  /** The open tool_use block: its id, name and the input's JSON so far (bounded by the reply's own bound). */
  private tool: { index: number; id: unknown; name: unknown; json: string } | null = null;
  private blocks = 0;

  push(f: SseFrame): SseFrame[] {
    if (f.data === null) return [];
    const json = eventJson(f.data);
    if (json === null) return [];
    const type = f.event ?? getString(json, 'type');
    if (type === 'message_start') {
      const message = getObject(json, 'message');
      this.id = getString(message, 'id');
      this.model = message?.model ?? null;
      this.usage = { ...(getObject(message, 'usage') ?? {}) };
      return [];
    }
    if (type === 'content_block_start') return this.blockStart(json);
    if (type === 'content_block_delta') return this.blockDelta(json);
    if (type === 'content_block_stop') return this.blockStop(json);
    if (type === 'message_delta') {
      const usage = getObject(json, 'usage');
      if (usage !== null)
        for (const [k, v] of Object.entries(usage)) if (v !== null && v !== undefined) this.usage[k] = v;
      const stop = getString(getObject(json, 'delta'), 'stop_reason');
      if (stop !== null) this.stop = anthropicStopToGemini(stop, 'stop_reason');
      return [];
    }
    if (type === 'message_stop') {
      const last = this.chunk(this.pending ?? [], this.stop ?? 'STOP');
      this.pending = null;
      return [last];
    }
    if (type === 'error') {
      const error = getObject(json, 'error');
      const message = getString(error, 'message') ?? 'upstream error';
      return [frame(null, { error: { code: 500, message, status: 'INTERNAL' } })];
    }
    return [];
  }

  private blockStart(json: JsonObject): SseFrame[] {
    const block = getObject(json, 'content_block');
    if (block === null) return [];
    this.blocks += 1;
    if (this.blocks > MAX_STREAM_BLOCKS) refuse('content_block', `more than ${MAX_STREAM_BLOCKS} content blocks`);
    if (block.type === 'text') {
      const text = getString(block, 'text') ?? '';
      return text === '' ? [] : this.parts([{ text }]);
    }
    if (block.type !== 'tool_use')
      refuse('content_block.type', `a ${shown(block.type)} block has no Gemini equivalent`);
    const index = typeof json.index === 'number' ? json.index : -1;
    this.tool = { index, id: block.id, name: block.name, json: '' };
    return [];
  }

  private blockDelta(json: JsonObject): SseFrame[] {
    const delta = getObject(json, 'delta');
    if (delta === null) return [];
    if (delta.type === 'text_delta') {
      const text = getString(delta, 'text') ?? '';
      return text === '' ? [] : this.parts([{ text }]);
    }
    if (delta.type === 'input_json_delta' && this.tool !== null && json.index === this.tool.index) {
      this.tool.json += getString(delta, 'partial_json') ?? '';
      return [];
    }
    return refuse('delta.type', `a ${shown(delta.type)} delta has no Gemini equivalent`);
  }

  private blockStop(json: JsonObject): SseFrame[] {
    const tool = this.tool;
    if (tool === null || json.index !== tool.index) return [];
    this.tool = null;
    let input: unknown;
    try {
      input = tool.json.trim() === '' ? {} : JSON.parse(tool.json);
    } catch {
      return refuse('input_json_delta', 'the tool input is not JSON');
    }
    return this.parts(blocksToParts([{ type: 'tool_use', id: tool.id, name: tool.name, input }], 'content_block'));
  }

  /** The chunk held back goes out; these parts are held in its place. */
  private parts(parts: Record<string, unknown>[]): SseFrame[] {
    const out = this.pending === null ? [] : [this.chunk(this.pending, null)];
    this.pending = parts;
    return out;
  }

  private chunk(parts: Record<string, unknown>[], finishReason: string | null): SseFrame {
    const candidate: Record<string, unknown> = { content: { role: 'model', parts }, index: 0 };
    if (finishReason !== null) candidate.finishReason = finishReason;
    const body: Record<string, unknown> = { candidates: [candidate] };
    if (finishReason !== null) body.usageMetadata = anthropicUsageToGemini(this.usage);
    body.modelVersion = this.model;
    body.responseId = this.id;
    return frame(null, body);
  }
}
