// Messages events as Responses API events, in the order OpenAI streams them: response.created and .in_progress at
// message_start; per text block a message item (output_item.added, content_part.added, output_text.delta…, then
// output_text.done, content_part.done, output_item.done); per tool_use block a function_call item (its arguments
// as function_call_arguments.delta…/done); response.completed (or .incomplete) with the usage at message_stop.
import { getObject, getString, type JsonObject } from '../json.js';
import { eventJson } from '../wire/reader.js';
import type { SseFrame } from '../wire/sse.js';
import { refuse, shown } from './refusal.js';
import {
  callItem,
  callItemId,
  messageItem,
  messageItemId,
  responseBase,
  responseStatus,
  textPart,
} from './responses-replies.js';
import { MAX_STREAM_BLOCKS, type StreamTranslator } from './stream.js';
import { anthropicUsageToResponses } from './usage.js';

/** One open output item: a message (its text so far) or a function call (its arguments so far). */
interface Open {
  kind: 'text' | 'call';
  output: number;
  itemId: string;
  callId: string;
  name: string;
  text: string;
}

export class AnthropicToResponsesStream implements StreamTranslator {
  private sequence = 0;
  private messageId = 'translated';
  private model: unknown = null;
  private usage: Record<string, unknown> = {};
  private stop = 'end_turn';
  private readonly open = new Map<number, Open>();
  /** The output items finished so far, in output order: the final response carries them. */
  private readonly output: Record<string, unknown>[] = [];
  private items = 0;

  constructor(private readonly created: number) {}

  push(f: SseFrame): SseFrame[] {
    if (f.data === null) return [];
    const json = eventJson(f.data);
    if (json === null) return [];
    const type = f.event ?? getString(json, 'type');
    if (type === 'message_start') return this.start(getObject(json, 'message'));
    if (type === 'content_block_start') return this.blockStart(json);
    if (type === 'content_block_delta') return this.blockDelta(json);
    if (type === 'content_block_stop') return this.blockStop(json);
    if (type === 'message_delta') {
      const usage = getObject(json, 'usage');
      // Cumulative totals, overwritten field by field (never summed), as Anthropic's own SDK reads them.
      if (usage !== null)
        for (const [k, v] of Object.entries(usage)) if (v !== null && v !== undefined) this.usage[k] = v;
      this.stop = getString(getObject(json, 'delta'), 'stop_reason') ?? this.stop;
      return [];
    }
    if (type === 'message_stop') return this.end();
    if (type === 'error') {
      const error = getObject(json, 'error');
      const message = getString(error, 'message') ?? 'upstream error';
      return [this.event('error', { code: getString(error, 'type') ?? 'api_error', message, param: null })];
    }
    return [];
  }

  private event(type: string, body: Record<string, unknown>): SseFrame {
    const data = JSON.stringify({ type, sequence_number: this.sequence, ...body });
    this.sequence += 1;
    return { raw: `event: ${type}\ndata: ${data}\n\n`, event: type, data };
  }

  private response(extra: Record<string, unknown>): Record<string, unknown> {
    return { ...responseBase(this.messageId, this.model, this.created), ...extra };
  }

  private start(message: JsonObject | null): SseFrame[] {
    this.messageId = getString(message, 'id') ?? this.messageId;
    this.model = message?.model ?? null;
    this.usage = { ...(getObject(message, 'usage') ?? {}) };
    const response = this.response({ status: 'in_progress', incomplete_details: null, output: [], usage: null });
    return [this.event('response.created', { response }), this.event('response.in_progress', { response })];
  }

  private blockStart(json: JsonObject): SseFrame[] {
    const index = json.index;
    const block = getObject(json, 'content_block');
    if (typeof index !== 'number' || block === null) return [];
    if (this.items >= MAX_STREAM_BLOCKS) refuse('content_block', `more than ${MAX_STREAM_BLOCKS} content blocks`);
    const output = this.items;
    this.items += 1;
    if (block.type === 'text') {
      const itemId = messageItemId(this.messageId, index);
      this.open.set(index, { kind: 'text', output, itemId, callId: '', name: '', text: '' });
      const at = { item_id: itemId, output_index: output, content_index: 0 };
      const out = [
        this.event('response.output_item.added', {
          output_index: output,
          item: messageItem(itemId, 'in_progress', null),
        }),
        this.event('response.content_part.added', { ...at, part: textPart('') }),
      ];
      const text = getString(block, 'text') ?? '';
      return text === '' ? out : [...out, ...this.textDelta(index, text)];
    }
    if (block.type !== 'tool_use')
      refuse('content_block.type', `a ${shown(block.type)} block has no Responses API equivalent`);
    const callId = getString(block, 'id') ?? `call_${index}`;
    const name = getString(block, 'name') ?? '';
    this.open.set(index, { kind: 'call', output, itemId: callItemId(callId), callId, name, text: '' });
    return [
      this.event('response.output_item.added', {
        output_index: output,
        item: callItem(callId, name, '', 'in_progress'),
      }),
    ];
  }

  private textDelta(index: number, text: string): SseFrame[] {
    const open = this.open.get(index) as Open;
    open.text += text;
    const at = { item_id: open.itemId, output_index: open.output, content_index: 0 };
    return [this.event('response.output_text.delta', { ...at, delta: text, logprobs: [] })];
  }

  private blockDelta(json: JsonObject): SseFrame[] {
    const index = typeof json.index === 'number' ? json.index : -1;
    const open = this.open.get(index);
    const delta = getObject(json, 'delta');
    if (open === undefined || delta === null) return [];
    if (delta.type === 'text_delta' && open.kind === 'text') {
      const text = getString(delta, 'text') ?? '';
      return text === '' ? [] : this.textDelta(index, text);
    }
    if (delta.type === 'input_json_delta' && open.kind === 'call') {
      const args = getString(delta, 'partial_json') ?? '';
      if (args === '') return [];
      open.text += args;
      const at = { item_id: open.itemId, output_index: open.output };
      return [this.event('response.function_call_arguments.delta', { ...at, delta: args })];
    }
    return refuse('delta.type', `a ${shown(delta.type)} delta has no Responses API equivalent`);
  }

  private blockStop(json: JsonObject): SseFrame[] {
    const index = typeof json.index === 'number' ? json.index : -1;
    const open = this.open.get(index);
    if (open === undefined) return [];
    this.open.delete(index);
    if (open.kind === 'text') {
      const item = messageItem(open.itemId, 'completed', open.text);
      this.output.push(item);
      const at = { item_id: open.itemId, output_index: open.output, content_index: 0 };
      return [
        this.event('response.output_text.done', { ...at, text: open.text, logprobs: [] }),
        this.event('response.content_part.done', { ...at, part: textPart(open.text) }),
        this.event('response.output_item.done', { output_index: open.output, item }),
      ];
    }
    // A call without input streams no JSON: its arguments are the empty object, as a whole reply's are.
    const args = open.text === '' ? '{}' : open.text;
    const item = callItem(open.callId, open.name, args, 'completed');
    this.output.push(item);
    const at = { item_id: open.itemId, output_index: open.output };
    return [
      this.event('response.function_call_arguments.done', { ...at, name: open.name, arguments: args }),
      this.event('response.output_item.done', { output_index: open.output, item }),
    ];
  }

  private end(): SseFrame[] {
    const { status, incomplete_details } = responseStatus(this.stop, 'stop_reason');
    const response = this.response({
      status,
      incomplete_details,
      output: this.output,
      usage: anthropicUsageToResponses(this.usage),
    });
    return [this.event(status === 'completed' ? 'response.completed' : 'response.incomplete', { response })];
  }
}
