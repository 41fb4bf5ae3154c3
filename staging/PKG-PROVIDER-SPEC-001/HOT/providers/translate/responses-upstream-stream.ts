// A Responses API stream as Messages events, in order: response.created opens the message, each output message a
// text block (its text and refusal deltas), each function_call a tool_use block (its argument deltas as
// input_json_delta), and response.completed / .incomplete end it with the stop reason and the usage.
import { getObject, getString, type JsonObject } from '../json.js';
import { eventJson } from '../wire/reader.js';
import type { SseFrame } from '../wire/sse.js';
import { refuse, shown } from './refusal.js';
import { emptyReasoning, responsesStop } from './responses-upstream.js';
import { MAX_STREAM_BLOCKS, type StreamTranslator } from './stream.js';
import { responsesUsageToAnthropic } from './usage.js';

function named(type: string, body: Record<string, unknown>): SseFrame {
  const text = JSON.stringify({ type, ...body });
  return { raw: `event: ${type}\ndata: ${text}\n\n`, event: type, data: text };
}

/** The Messages block open for one output item: a text block, or a tool_use block and whether its input was sent. */
interface Open {
  output: number;
  kind: 'text' | 'call';
  sentArgs: boolean;
}

/** Events that carry nothing the message needs (their content also arrives as deltas or in the final response). */
const QUIET = new Set([
  'response.in_progress',
  'response.queued',
  'response.content_part.done',
  'response.output_text.done',
  'response.refusal.done',
]);

export class ResponsesToAnthropicStream implements StreamTranslator {
  private started = false;
  private index = -1;
  private open: Open | null = null;
  private calls = 0;
  private refused = false;

  push(f: SseFrame): SseFrame[] {
    if (f.data === null) return [];
    const json = eventJson(f.data);
    if (json === null) return [];
    const type = f.event ?? getString(json, 'type') ?? '';
    if (type === 'error') return [this.error(getString(json, 'message'))];
    if (type === 'response.failed')
      return [this.error(getString(getObject(getObject(json, 'response'), 'error'), 'message'))];
    const out = this.started ? [] : this.start(getObject(json, 'response'));
    if (type === 'response.created' || QUIET.has(type)) return out;
    const position = typeof json.output_index === 'number' ? json.output_index : -1;
    if (type === 'response.output_item.added') out.push(...this.itemAdded(getObject(json, 'item'), position));
    else if (type === 'response.content_part.added') {
      const part = getObject(json, 'part');
      if (part?.type === 'refusal') this.refused = true;
      else if (part?.type !== 'output_text')
        refuse('part.type', `a ${shown(part?.type)} part has no Messages equivalent`);
      out.push(...this.text(position, ''));
    } else if (type === 'response.output_text.delta' || type === 'response.refusal.delta') {
      this.refused ||= type === 'response.refusal.delta';
      out.push(...this.text(position, getString(json, 'delta') ?? ''));
    } else if (type === 'response.function_call_arguments.delta') out.push(...this.args(position, json, 'delta'));
    else if (type === 'response.function_call_arguments.done') {
      if (this.open?.sentArgs === false) out.push(...this.args(position, json, 'arguments'));
    } else if (type === 'response.output_item.done') out.push(...this.itemDone(getObject(json, 'item'), position));
    else if (type === 'response.completed' || type === 'response.incomplete')
      out.push(...this.end(getObject(json, 'response')));
    else refuse('type', `the event ${shown(type)} has no Messages equivalent`);
    return out;
  }

  private start(response: JsonObject | null): SseFrame[] {
    this.started = true;
    const message = {
      id: `msg_${getString(response, 'id') ?? 'translated'}`,
      type: 'message',
      role: 'assistant',
      model: response?.model ?? null,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      // The counts arrive with response.completed; message_delta carries them whole (the SDKs overwrite these).
      usage: { input_tokens: 0, output_tokens: 0 },
    };
    return [named('message_start', { message })];
  }

  private itemAdded(item: JsonObject | null, output: number): SseFrame[] {
    if (item?.type === 'message' || item?.type === 'reasoning') return [];
    if (item?.type !== 'function_call')
      return refuse('item.type', `a ${shown(item?.type)} output item has no Messages equivalent`);
    this.calls += 1;
    const block = { type: 'tool_use', id: getString(item, 'call_id'), name: getString(item, 'name') ?? '', input: {} };
    return [...this.close(), ...this.begin({ output, kind: 'call', sentArgs: false }, block)];
  }

  /** Text of output `output`: its text block, opened if need be (a message's parts run into one block). */
  private text(output: number, text: string): SseFrame[] {
    const out: SseFrame[] = [];
    if (this.open?.output !== output || this.open.kind !== 'text')
      out.push(...this.close(), ...this.begin({ output, kind: 'text', sentArgs: false }, { type: 'text', text: '' }));
    if (text !== '') out.push(named('content_block_delta', { index: this.index, delta: { type: 'text_delta', text } }));
    return out;
  }

  private args(output: number, json: JsonObject, key: 'delta' | 'arguments'): SseFrame[] {
    const open = this.open;
    if (open?.output !== output || open.kind !== 'call')
      refuse('output_index', `arguments for output ${output} arrived outside its function call`);
    const partial = getString(json, key) ?? '';
    if (partial === '') return [];
    open.sentArgs = true;
    return [
      named('content_block_delta', { index: this.index, delta: { type: 'input_json_delta', partial_json: partial } }),
    ];
  }

  private itemDone(item: JsonObject | null, output: number): SseFrame[] {
    if (item?.type === 'reasoning') {
      emptyReasoning(item, 'item');
      return [];
    }
    const out =
      item?.type === 'function_call' && this.open?.sentArgs === false ? this.args(output, item, 'arguments') : [];
    if (this.open?.output === output) out.push(...this.close());
    return out;
  }

  private end(response: JsonObject | null): SseFrame[] {
    const out = this.close();
    const stop = responsesStop(response ?? {}, this.calls > 0, this.refused);
    const usage = responsesUsageToAnthropic(getObject(response, 'usage'));
    out.push(named('message_delta', { delta: { stop_reason: stop, stop_sequence: null }, usage }));
    out.push(named('message_stop', {}));
    return out;
  }

  private error(message: string | null): SseFrame {
    return named('error', { error: { type: 'api_error', message: message ?? 'upstream error' } });
  }

  private begin(open: Open, block: Record<string, unknown>): SseFrame[] {
    if (this.index + 1 >= MAX_STREAM_BLOCKS) refuse('output', `more than ${MAX_STREAM_BLOCKS} content blocks`);
    this.index += 1;
    this.open = open;
    return [named('content_block_start', { index: this.index, content_block: block })];
  }

  private close(): SseFrame[] {
    if (this.open === null) return [];
    this.open = null;
    return [named('content_block_stop', { index: this.index })];
  }
}
