// Streams across formats, event by event in order: each upstream SSE frame becomes the client format's frames.
import { asObject, getObject, getString, type JsonObject } from '../json.js';
import { eventJson } from '../wire/reader.js';
import type { SseFrame } from '../wire/sse.js';
import { refuse, shown } from './refusal.js';
import { ANTHROPIC_TO_CHAT_STOP, CHAT_TO_ANTHROPIC_STOP, stopFor } from './replies.js';
import { anthropicUsageToChat, chatUsageToAnthropic } from './usage.js';

/** One direction of a stream: frames in, frames out; a frame it cannot express throws a TranslationRefused. */
export interface StreamTranslator {
  push(frame: SseFrame): SseFrame[];
}

/** Tool calls one reply may open: past it the stream is refused (a hostile upstream cannot grow the map). */
export const MAX_STREAM_TOOL_CALLS = 1024;
/** Content blocks of any kind one Messages stream may open, for the same reason. */
export const MAX_STREAM_BLOCKS = 4096;

function frame(event: string | null, data: unknown): SseFrame {
  const text = typeof data === 'string' ? data : JSON.stringify(data);
  return { raw: `${event === null ? '' : `event: ${event}\n`}data: ${text}\n\n`, event, data: text };
}

const named = (type: string, body: Record<string, unknown>): SseFrame => frame(type, { type, ...body });

/**
 * Chat chunks as Messages events: message_start on the first chunk, a content block per text run and per tool
 * call (its arguments as input_json_delta), the finish reason and the usage chunk's counts in message_delta at
 * `[DONE]`, then message_stop.
 */
export class ChatToAnthropicStream implements StreamTranslator {
  private started = false;
  private index = -1;
  private open: 'text' | number | null = null;
  private readonly tools = new Map<number, number>();
  private finish: string | null = null;
  /** A refusal was streamed (`delta.refusal`): the message stops as a refusal, as a whole reply's would. */
  private refused = false;
  private usage: JsonObject | null = null;

  push(f: SseFrame): SseFrame[] {
    if (f.data === null) return [];
    if (f.data.trim() === '[DONE]') return this.end();
    const chunk = eventJson(f.data);
    if (chunk === null) return [];
    if (chunk.error !== undefined) {
      const error = getObject(chunk, 'error');
      const message = getString(error, 'message') ?? 'upstream error';
      return [named('error', { error: { type: 'api_error', message } })];
    }
    const out: SseFrame[] = [];
    if (!this.started) {
      this.started = true;
      out.push(named('message_start', { message: this.message(chunk) }));
    }
    const usage = getObject(chunk, 'usage');
    if (usage !== null) this.usage = usage;
    const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
    if (choices.length > 1) refuse('choices', `one choice was asked for, the upstream streamed ${choices.length}`);
    const choice = asObject(choices[0]);
    const delta = getObject(choice, 'delta');
    const refusal = getString(delta, 'refusal');
    this.refused ||= refusal !== null;
    const text = getString(delta, 'content') ?? refusal;
    if (text !== null && text !== '') {
      if (this.open !== 'text') out.push(...this.close(), ...this.begin('text', { type: 'text', text: '' }));
      out.push(named('content_block_delta', { index: this.index, delta: { type: 'text_delta', text } }));
    }
    if (Array.isArray(delta?.tool_calls))
      for (const call of delta.tool_calls) out.push(...this.toolDelta(asObject(call)));
    const finish = getString(choice, 'finish_reason');
    if (finish !== null) {
      this.finish = this.refused ? 'refusal' : stopFor(CHAT_TO_ANTHROPIC_STOP, finish, 'finish_reason');
      out.push(...this.close());
    }
    return out;
  }

  private message(chunk: JsonObject): Record<string, unknown> {
    return {
      id: `msg_${getString(chunk, 'id') ?? 'translated'}`,
      type: 'message',
      role: 'assistant',
      model: chunk.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      // Counts arrive with the last chunk; message_delta carries them whole (the SDKs overwrite these).
      usage: { input_tokens: 0, output_tokens: 0 },
    };
  }

  private toolDelta(call: JsonObject | null): SseFrame[] {
    const position = typeof call?.index === 'number' ? call.index : 0;
    const fn = getObject(call, 'function');
    const out: SseFrame[] = [];
    if (!this.tools.has(position)) {
      if (this.tools.size >= MAX_STREAM_TOOL_CALLS)
        refuse('tool_calls', `more than ${MAX_STREAM_TOOL_CALLS} tool calls`);
      out.push(...this.close());
      const block = { type: 'tool_use', id: getString(call, 'id'), name: getString(fn, 'name') ?? '', input: {} };
      out.push(...this.begin(position, block));
      this.tools.set(position, this.index);
    } else if (this.open !== position) refuse('tool_calls', `tool call ${position} resumed after another began`);
    const args = getString(fn, 'arguments');
    if (args !== null && args !== '')
      out.push(
        named('content_block_delta', { index: this.index, delta: { type: 'input_json_delta', partial_json: args } }),
      );
    return out;
  }

  private begin(open: 'text' | number, block: Record<string, unknown>): SseFrame[] {
    this.index += 1;
    this.open = open;
    return [named('content_block_start', { index: this.index, content_block: block })];
  }

  private close(): SseFrame[] {
    if (this.open === null) return [];
    this.open = null;
    return [named('content_block_stop', { index: this.index })];
  }

  private end(): SseFrame[] {
    // A stream with no chunk before `[DONE]` still opens its message: the SDKs refuse events before message_start.
    const out = this.started ? this.close() : [named('message_start', { message: this.message({}) })];
    this.started = true;
    const usage = chatUsageToAnthropic(this.usage);
    out.push(named('message_delta', { delta: { stop_reason: this.finish ?? 'end_turn', stop_sequence: null }, usage }));
    out.push(named('message_stop', {}));
    return out;
  }
}

/**
 * Messages events as Chat chunks: a role chunk at message_start, text and tool-call deltas (each tool call its own
 * index), the finish reason at message_delta, then the usage chunk (`choices: []`) and `[DONE]` at message_stop.
 */
export class AnthropicToChatStream implements StreamTranslator {
  private id = 'chatcmpl-translated';
  private model: unknown = null;
  private usage: Record<string, unknown> = {};
  private readonly blocks = new Map<number, number | 'text'>();
  private tools = 0;

  constructor(private readonly created: number) {}

  push(f: SseFrame): SseFrame[] {
    if (f.data === null) return [];
    const json = eventJson(f.data);
    if (json === null) return [];
    const type = f.event ?? getString(json, 'type');
    if (type === 'message_start') {
      const message = getObject(json, 'message');
      this.id = `chatcmpl-${getString(message, 'id') ?? 'translated'}`;
      this.model = message?.model ?? null;
      this.usage = { ...(getObject(message, 'usage') ?? {}) };
      return [this.chunk({ role: 'assistant', content: '' })];
    }
    if (type === 'content_block_start') return this.blockStart(json);
    if (type === 'content_block_delta') return this.blockDelta(json);
    if (type === 'message_delta') {
      const usage = getObject(json, 'usage');
      // Cumulative totals, overwritten field by field (never summed), as Anthropic's own SDK reads them.
      if (usage !== null)
        for (const [k, v] of Object.entries(usage)) if (v !== null && v !== undefined) this.usage[k] = v;
      const stop = getString(getObject(json, 'delta'), 'stop_reason');
      return stop === null ? [] : [this.chunk({}, stopFor(ANTHROPIC_TO_CHAT_STOP, stop, 'stop_reason'))];
    }
    if (type === 'message_stop') {
      const usage = { ...this.base(), choices: [], usage: anthropicUsageToChat(this.usage) };
      return [frame(null, usage), frame(null, '[DONE]')];
    }
    if (type === 'error') {
      const error = getObject(json, 'error');
      const message = getString(error, 'message') ?? 'upstream error';
      return [
        frame(null, { error: { message, type: getString(error, 'type') ?? 'api_error', param: null, code: null } }),
      ];
    }
    return [];
  }

  private blockStart(json: JsonObject): SseFrame[] {
    const index = json.index;
    const block = getObject(json, 'content_block');
    if (typeof index !== 'number' || block === null) return [];
    if (this.blocks.size >= MAX_STREAM_BLOCKS) refuse('content_block', `more than ${MAX_STREAM_BLOCKS} content blocks`);
    if (block.type === 'text') {
      this.blocks.set(index, 'text');
      const text = getString(block, 'text') ?? '';
      return text === '' ? [] : [this.chunk({ content: text })];
    }
    if (block.type !== 'tool_use')
      refuse('content_block.type', `a ${shown(block.type)} block has no Chat Completions equivalent`);
    if (this.tools >= MAX_STREAM_TOOL_CALLS) refuse('content_block', `more than ${MAX_STREAM_TOOL_CALLS} tool calls`);
    const position = this.tools;
    this.tools += 1;
    this.blocks.set(index, position);
    const call = {
      index: position,
      id: getString(block, 'id'),
      type: 'function',
      function: { name: getString(block, 'name'), arguments: '' },
    };
    return [this.chunk({ tool_calls: [call] })];
  }

  private blockDelta(json: JsonObject): SseFrame[] {
    const open = typeof json.index === 'number' ? this.blocks.get(json.index) : undefined;
    const delta = getObject(json, 'delta');
    if (open === undefined || delta === null) return [];
    if (delta.type === 'text_delta' && open === 'text')
      return [this.chunk({ content: getString(delta, 'text') ?? '' })];
    if (delta.type === 'input_json_delta' && typeof open === 'number') {
      const args = getString(delta, 'partial_json') ?? '';
      return args === '' ? [] : [this.chunk({ tool_calls: [{ index: open, function: { arguments: args } }] })];
    }
    return refuse('delta.type', `a ${shown(delta.type)} delta has no Chat Completions equivalent`);
  }

  private base(): Record<string, unknown> {
    return { id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model };
  }

  private chunk(delta: Record<string, unknown>, finish: string | null = null): SseFrame {
    return frame(null, { ...this.base(), choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] });
  }
}
