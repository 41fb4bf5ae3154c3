// A Responses API reply (the response object) as a Messages reply: output items in order — a message's text as text
// blocks, a function_call as a tool_use with its call id — the status as the stop reason, usage bucket by bucket.
import { getObject, getString, type JsonObject } from '../json.js';
import { objectAt, refuse, shown } from './refusal.js';
import { toolArguments } from './replies.js';
import { responsesUsageToAnthropic } from './usage.js';

/** The reasons `incomplete_details` gives, as Messages stop reasons. */
const INCOMPLETE_TO_STOP: Readonly<Record<string, string>> = {
  max_output_tokens: 'max_tokens',
  content_filter: 'refusal',
};

/**
 * The stop reason for a finished response: `incomplete` by its reason; `completed` as a turn that called a tool,
 * that refused, or that ended. Any other status (failed, queued, in progress) is not a finished reply.
 */
export function responsesStop(response: JsonObject, calledTools: boolean, refused: boolean): string {
  const status = getString(response, 'status');
  if (status === 'incomplete') {
    const reason = getString(getObject(response, 'incomplete_details'), 'reason');
    return (
      INCOMPLETE_TO_STOP[reason ?? ''] ??
      refuse('incomplete_details.reason', `the reason ${shown(reason)} has no Messages stop reason`)
    );
  }
  if (status !== 'completed') refuse('status', `a finished response is required, got ${shown(status)}`);
  return calledTools ? 'tool_use' : refused ? 'refusal' : 'end_turn';
}

/**
 * One output message's content as text: output_text parts run together (a Messages text block each message), a
 * refusal part read as text and flagged. Annotations come only from OpenAI's own tools, which are never asked for.
 */
export function messageText(item: JsonObject, at: string, flags: { refused: boolean }): string {
  const content = Array.isArray(item.content) ? item.content : refuse(`${at}.content`, 'an array is required');
  let text = '';
  content.forEach((c, j) => {
    const part = objectAt(c, `${at}.content[${j}]`);
    if (part.type === 'output_text') {
      if (Array.isArray(part.annotations) && part.annotations.length > 0)
        refuse(`${at}.content[${j}].annotations`, 'annotations have no Messages equivalent');
      text += getString(part, 'text') ?? '';
    } else if (part.type === 'refusal') {
      flags.refused = true;
      text += getString(part, 'refusal') ?? '';
    } else refuse(`${at}.content[${j}].type`, `a ${shown(part.type)} part has no Messages equivalent`);
  });
  return text;
}

/**
 * Whether a reasoning item carries nothing a Messages reply could show: no summary was asked for, so its text is
 * empty and its tokens are counted in the output tokens. One that carries text is refused (a thinking block needs
 * Anthropic's signature).
 */
export function emptyReasoning(item: JsonObject, at: string): true {
  for (const key of ['summary', 'content'] as const)
    if (Array.isArray(item[key]) && item[key].length > 0)
      refuse(`${at}.${key}`, 'reasoning text has no Messages equivalent (a thinking block carries a signature)');
  return true;
}

/** A response object as a Messages reply. */
export function responsesReplyToAnthropic(body: JsonObject): Record<string, unknown> {
  const output = Array.isArray(body.output) ? body.output : refuse('output', 'an array is required');
  const content: Record<string, unknown>[] = [];
  const flags = { refused: false };
  output.forEach((o, k) => {
    const at = `output[${k}]`;
    const item = objectAt(o, at);
    if (item.type === 'message') {
      const text = messageText(item, at, flags);
      if (text !== '') content.push({ type: 'text', text });
    } else if (item.type === 'function_call')
      content.push({
        type: 'tool_use',
        id: getString(item, 'call_id'),
        name: getString(item, 'name'),
        input: toolArguments(getString(item, 'arguments') ?? '', at, `${at}.arguments`),
      });
    else if (item.type !== 'reasoning' || !emptyReasoning(item, at))
      refuse(`${at}.type`, `a ${shown(item.type)} output item has no Messages equivalent`);
  });
  return {
    id: `msg_${getString(body, 'id') ?? 'translated'}`,
    type: 'message',
    role: 'assistant',
    model: body.model ?? null,
    content,
    stop_reason: responsesStop(
      body,
      content.some((b) => b.type === 'tool_use'),
      flags.refused,
    ),
    stop_sequence: null,
    usage: responsesUsageToAnthropic(getObject(body, 'usage')),
  };
}
