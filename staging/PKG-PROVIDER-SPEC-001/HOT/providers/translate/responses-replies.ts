// A Messages reply as a Responses API response: each text block a message item (one output_text part), each
// tool_use block a function_call item keeping its id as the call_id; the stop reason as the status.
import { getObject, getString, type JsonObject } from '../json.js';
import { objectAt, refuse, shown } from './refusal.js';
import { anthropicUsageToResponses } from './usage.js';

type Item = Record<string, unknown>;

/** How a Messages reply ended, as a response's status and incomplete_details. */
export function responseStatus(stop: string, at: string): { status: string; incomplete_details: unknown } {
  if (stop === 'end_turn' || stop === 'stop_sequence' || stop === 'tool_use')
    return { status: 'completed', incomplete_details: null };
  if (stop === 'max_tokens' || stop === 'model_context_window_exceeded')
    return { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } };
  if (stop === 'refusal') return { status: 'incomplete', incomplete_details: { reason: 'content_filter' } };
  return refuse(at, `the stop reason ${shown(stop)} has no Responses API equivalent`);
}

/** The fields every response object carries, whatever its state. */
export function responseBase(messageId: string, model: unknown, created: number): Item {
  return { id: `resp_${messageId}`, object: 'response', created_at: created, model, error: null };
}

export const textPart = (text: string): Item => ({ type: 'output_text', text, annotations: [], logprobs: [] });

/** Item ids: unique in the response, a message's from the Messages id and the block's place, a call's from its id. */
export const messageItemId = (messageId: string, block: number): string => `msg_${block}_${messageId}`;
export const callItemId = (callId: string): string => `fc_${callId}`;

export function messageItem(id: string, status: string, text: string | null): Item {
  return { id, type: 'message', status, role: 'assistant', content: text === null ? [] : [textPart(text)] };
}

export function callItem(callId: string, name: string, args: string, status: string): Item {
  return { id: callItemId(callId), type: 'function_call', status, arguments: args, call_id: callId, name };
}

/** A whole Messages reply as a response object; `created` is the clock's seconds. */
export function anthropicReplyToResponses(body: JsonObject, created: number): Record<string, unknown> {
  const blocks = Array.isArray(body.content) ? body.content : refuse('content', 'an array is required');
  const messageId = getString(body, 'id') ?? 'translated';
  const output = blocks.map((b, k) => {
    const block = objectAt(b, `content[${k}]`);
    if (block.type === 'text')
      return messageItem(messageItemId(messageId, k), 'completed', getString(block, 'text') ?? '');
    if (block.type === 'tool_use')
      return callItem(
        getString(block, 'id') ?? `call_${k}`,
        getString(block, 'name') ?? '',
        JSON.stringify(block.input ?? {}),
        'completed',
      );
    return refuse(`content[${k}].type`, `a ${shown(block.type)} block has no Responses API equivalent`);
  });
  return {
    ...responseBase(messageId, body.model, created),
    ...responseStatus(getString(body, 'stop_reason') ?? 'end_turn', 'stop_reason'),
    output,
    usage: anthropicUsageToResponses(getObject(body, 'usage')),
  };
}
