// ConverseStream's events as Anthropic Messages streaming events, in order.
import { getObject, getString, type JsonObject } from '#providers/json.js';
import { refuse, shown } from '#providers/translate/refusal.js';
import { MAX_STREAM_BLOCKS } from '#providers/translate/stream.js';
import { converseUsage, stopReason } from './reply.js';

export type MessagesEvent = [name: string, data: Record<string, unknown>];

type Kind = 'text' | 'tool_use' | 'thinking' | 'redacted_thinking';

/**
 * One ConverseStream reply as Messages events: `messageStart` opens the message; a text or reasoning delta opens
 * its block on first sight (Converse sends no `contentBlockStart` for them), a `toolUse` start opens a tool_use
 * block whose input arrives as `input_json_delta`; `messageStop` holds the stop reason until `metadata` brings the
 * usage, which ends the message as `message_delta` + `message_stop`. A stream cut before `metadata` never ends it,
 * so its usage is never final.
 */
export class ConverseToMessages {
  private started = false;
  private next = 0;
  private readonly open = new Map<number, { index: number; kind: Kind }>();
  private stop: string | null = null;

  constructor(
    private readonly model: string,
    private readonly id: string,
  ) {}

  push(type: string, event: JsonObject): MessagesEvent[] {
    const out: MessagesEvent[] = this.started ? [] : [this.start()];
    if (type === 'messageStart') return out;
    if (type === 'contentBlockStart') return [...out, ...this.blockStart(event)];
    if (type === 'contentBlockDelta') return [...out, ...this.blockDelta(event)];
    if (type === 'contentBlockStop') {
      const index = this.converseIndex(event);
      const block = this.open.get(index);
      if (block === undefined) return out;
      this.open.delete(index);
      return [...out, ['content_block_stop', { index: block.index }]];
    }
    if (type === 'messageStop') {
      this.stop = stopReason(event.stopReason, 'messageStop.stopReason');
      return out;
    }
    if (type === 'metadata') {
      if (this.stop === null) refuse('metadata', 'the usage arrived before messageStop');
      const usage = converseUsage(getObject(event, 'usage'));
      return [
        ...out,
        ['message_delta', { delta: { stop_reason: this.stop, stop_sequence: null }, usage }],
        ['message_stop', {}],
      ];
    }
    return out;
  }

  private start(): MessagesEvent {
    this.started = true;
    const message = {
      id: this.id,
      type: 'message',
      role: 'assistant',
      model: this.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      // Converse counts arrive in its last event; message_delta carries them whole (the SDKs overwrite these).
      usage: { input_tokens: 0, output_tokens: 0 },
    };
    return ['message_start', { message }];
  }

  private converseIndex(event: JsonObject): number {
    const index = event.contentBlockIndex;
    if (typeof index !== 'number' || !Number.isSafeInteger(index) || index < 0)
      refuse('contentBlockIndex', `a block index is required, got ${shown(index)}`);
    return index;
  }

  private begin(at: number, kind: Kind, block: Record<string, unknown>): MessagesEvent[] {
    if (this.next >= MAX_STREAM_BLOCKS) refuse('contentBlockIndex', `more than ${MAX_STREAM_BLOCKS} content blocks`);
    const index = this.next;
    this.next += 1;
    this.open.set(at, { index, kind });
    return [['content_block_start', { index, content_block: block }]];
  }

  private blockStart(event: JsonObject): MessagesEvent[] {
    const at = this.converseIndex(event);
    const toolUse = getObject(getObject(event, 'start'), 'toolUse');
    if (toolUse === null) refuse('contentBlockStart.start', 'only a toolUse block start has a Messages equivalent');
    if (this.open.has(at)) refuse('contentBlockStart.contentBlockIndex', `block ${at} started twice`);
    const id = getString(toolUse, 'toolUseId') ?? refuse('contentBlockStart.start.toolUse.toolUseId', 'required');
    const name = getString(toolUse, 'name') ?? refuse('contentBlockStart.start.toolUse.name', 'required');
    return this.begin(at, 'tool_use', { type: 'tool_use', id, name, input: {} });
  }

  private blockDelta(event: JsonObject): MessagesEvent[] {
    const at = this.converseIndex(event);
    const delta = getObject(event, 'delta');
    const text = getString(delta, 'text');
    if (text !== null) return this.delta(at, 'text', { type: 'text', text: '' }, { type: 'text_delta', text });
    const input = getString(getObject(delta, 'toolUse'), 'input');
    if (input !== null) {
      if (this.open.get(at)?.kind !== 'tool_use') refuse('contentBlockDelta.delta.toolUse', 'no tool use was started');
      return this.delta(at, 'tool_use', {}, { type: 'input_json_delta', partial_json: input });
    }
    const reasoning = getObject(delta, 'reasoningContent');
    const thinking = { type: 'thinking', thinking: '', signature: '' };
    const thought = getString(reasoning, 'text');
    if (thought !== null) return this.delta(at, 'thinking', thinking, { type: 'thinking_delta', thinking: thought });
    const signature = getString(reasoning, 'signature');
    if (signature !== null) return this.delta(at, 'thinking', thinking, { type: 'signature_delta', signature });
    const redacted = getString(reasoning, 'redactedContent');
    if (redacted !== null) {
      // Messages carries redacted thinking whole in its block start: one redacted delta is one block.
      if (this.open.has(at)) refuse('contentBlockDelta.delta.reasoningContent.redactedContent', 'a second part');
      return this.begin(at, 'redacted_thinking', { type: 'redacted_thinking', data: redacted });
    }
    return refuse('contentBlockDelta.delta', `a delta ${shown(Object.keys(delta ?? {}))} has no Messages equivalent`);
  }

  private delta(
    at: number,
    kind: Kind,
    block: Record<string, unknown>,
    delta: Record<string, unknown>,
  ): MessagesEvent[] {
    const open = this.open.get(at);
    if (open !== undefined && open.kind !== kind)
      refuse('contentBlockDelta.delta', `a ${kind} delta inside a ${open.kind} block`);
    const out = open === undefined ? this.begin(at, kind, block) : [];
    const index = (this.open.get(at) as { index: number }).index;
    return [...out, ['content_block_delta', { index, delta }]];
  }
}
