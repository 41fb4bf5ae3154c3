// Whole replies across formats: content in order, tool calls with their ids, stop reasons, usage.
import { asObject, getObject, getString, type JsonObject } from '../json.js';
import { objectAt, refuse, shown } from './refusal.js';
import { anthropicUsageToChat, chatUsageToAnthropic } from './usage.js';

export const CHAT_TO_ANTHROPIC_STOP: Readonly<Record<string, string>> = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  content_filter: 'refusal',
};

export const ANTHROPIC_TO_CHAT_STOP: Readonly<Record<string, string>> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};

export function stopFor(table: Readonly<Record<string, string>>, raw: string, at: string): string {
  const mapped = table[raw];
  if (mapped === undefined) refuse(at, `the stop reason ${shown(raw)} has no equivalent`);
  return mapped;
}

/** A chat completion as a Messages reply (the request asked for one choice). */
export function chatReplyToAnthropic(body: JsonObject): Record<string, unknown> {
  const choices = Array.isArray(body.choices) ? body.choices : refuse('choices', 'an array is required');
  if (choices.length !== 1) refuse('choices', `one choice was asked for, the upstream sent ${choices.length}`);
  const choice = objectAt(choices[0], 'choices[0]');
  const message = objectAt(choice.message, 'choices[0].message');
  const content: Record<string, unknown>[] = [];
  const refusal = getString(message, 'refusal');
  const text = getString(message, 'content') ?? refusal;
  if (text !== null && text !== '') content.push({ type: 'text', text });
  if (Array.isArray(message.tool_calls))
    message.tool_calls.forEach((c, k) => {
      const call = objectAt(c, `choices[0].message.tool_calls[${k}]`);
      const fn = getObject(call, 'function');
      content.push({
        type: 'tool_use',
        id: getString(call, 'id'),
        name: getString(fn, 'name'),
        input: toolArguments(getString(fn, 'arguments') ?? '', `choices[0].message.tool_calls[${k}]`),
      });
    });
  const finish = getString(choice, 'finish_reason') ?? 'stop';
  return {
    id: `msg_${getString(body, 'id') ?? 'translated'}`,
    type: 'message',
    role: 'assistant',
    model: body.model,
    content,
    stop_reason: refusal !== null ? 'refusal' : stopFor(CHAT_TO_ANTHROPIC_STOP, finish, 'choices[0].finish_reason'),
    stop_sequence: null,
    usage: chatUsageToAnthropic(getObject(body, 'usage')),
  };
}

/** Tool arguments as the object Messages carries: the upstream's JSON, or a refusal when it is none. */
export function toolArguments(text: string, at: string, field = `${at}.function.arguments`): JsonObject {
  let value: unknown;
  try {
    value = text.trim() === '' ? {} : JSON.parse(text);
  } catch {
    return refuse(field, 'the tool arguments are not JSON');
  }
  return asObject(value) ?? refuse(field, 'the tool arguments are not a JSON object');
}

/** A Messages reply as a chat completion; `created` is the clock's seconds. */
export function anthropicReplyToChat(body: JsonObject, created: number): Record<string, unknown> {
  const blocks = Array.isArray(body.content) ? body.content : refuse('content', 'an array is required');
  let text: string | null = null;
  const calls: Record<string, unknown>[] = [];
  blocks.forEach((b, k) => {
    const block = objectAt(b, `content[${k}]`);
    if (block.type === 'text') text = (text ?? '') + (getString(block, 'text') ?? '');
    else if (block.type === 'tool_use')
      calls.push({
        id: getString(block, 'id'),
        type: 'function',
        function: { name: getString(block, 'name'), arguments: JSON.stringify(block.input ?? {}) },
      });
    else refuse(`content[${k}].type`, `a ${shown(block.type)} block has no Chat Completions equivalent`);
  });
  const message: Record<string, unknown> = { role: 'assistant', content: text, refusal: null };
  if (calls.length > 0) message.tool_calls = calls;
  const stop = getString(body, 'stop_reason') ?? 'end_turn';
  return {
    id: `chatcmpl-${getString(body, 'id') ?? 'translated'}`,
    object: 'chat.completion',
    created,
    model: body.model,
    choices: [
      { index: 0, message, finish_reason: stopFor(ANTHROPIC_TO_CHAT_STOP, stop, 'stop_reason'), logprobs: null },
    ],
    usage: anthropicUsageToChat(getObject(body, 'usage')),
  };
}
