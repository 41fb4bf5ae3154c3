// A Converse reply as an Anthropic Messages reply: content in order, tool calls with their ids, stop reason, usage.
import { asObject, getObject, getString, getCount, type JsonObject } from '#providers/json.js';
import { arrayAt, objectAt, refuse, shown, stringAt } from '#providers/translate/refusal.js';

/**
 * Converse's stop reasons as Anthropic's. A guardrail or content filter stopping the reply is a refusal; the
 * model's malformed output (`malformed_model_output`, `malformed_tool_use`) has no Messages equivalent.
 */
export const CONVERSE_TO_ANTHROPIC_STOP: Readonly<Record<string, string>> = {
  end_turn: 'end_turn',
  tool_use: 'tool_use',
  max_tokens: 'max_tokens',
  stop_sequence: 'stop_sequence',
  guardrail_intervened: 'refusal',
  content_filtered: 'refusal',
  model_context_window_exceeded: 'model_context_window_exceeded',
};

export function stopReason(raw: unknown, at: string): string {
  const text = stringAt(raw, at);
  const mapped = CONVERSE_TO_ANTHROPIC_STOP[text];
  if (mapped === undefined) refuse(at, `the stop reason ${shown(text)} has no Anthropic equivalent`);
  return mapped;
}

/** A count AWS may leave out: absent is none (AWS omits the cache counts when nothing was cached), else the count. */
function optionalCount(usage: JsonObject, key: string): number | null {
  return usage[key] === undefined ? 0 : getCount(usage, key);
}

/**
 * Converse usage as Anthropic's, bucket by bucket: `inputTokens` counts the uncached prompt tokens only (the cache
 * reads and writes are their own counts, and `totalTokens` sums all four), exactly as Anthropic's `input_tokens`.
 * A count the upstream did not give stays null.
 */
export function converseUsage(usage: JsonObject | null): Record<string, number | null> {
  if (usage === null)
    return {
      input_tokens: null,
      cache_creation_input_tokens: null,
      cache_read_input_tokens: null,
      output_tokens: null,
    };
  return {
    input_tokens: getCount(usage, 'inputTokens'),
    cache_creation_input_tokens: optionalCount(usage, 'cacheWriteInputTokens'),
    cache_read_input_tokens: optionalCount(usage, 'cacheReadInputTokens'),
    output_tokens: getCount(usage, 'outputTokens'),
  };
}

/** One block of `output.message.content` as a Messages content block. */
export function contentBlock(value: unknown, at: string): Record<string, unknown> {
  const block = objectAt(value, at);
  if (typeof block.text === 'string') return { type: 'text', text: block.text };
  const toolUse = getObject(block, 'toolUse');
  if (toolUse !== null)
    return {
      type: 'tool_use',
      id: stringAt(toolUse.toolUseId, `${at}.toolUse.toolUseId`),
      name: stringAt(toolUse.name, `${at}.toolUse.name`),
      input: asObject(toolUse.input) ?? refuse(`${at}.toolUse.input`, 'the tool input is not a JSON object'),
    };
  const reasoning = getObject(block, 'reasoningContent');
  const thought = getObject(reasoning, 'reasoningText');
  if (thought !== null)
    return {
      type: 'thinking',
      thinking: stringAt(thought.text, `${at}.reasoningContent.reasoningText.text`),
      signature: getString(thought, 'signature') ?? '',
    };
  if (typeof reasoning?.redactedContent === 'string')
    return { type: 'redacted_thinking', data: reasoning.redactedContent };
  return refuse(at, `a content block ${shown(Object.keys(block))} has no Anthropic equivalent`);
}

/** A whole Converse reply as a Messages reply; the model is the one the call addressed (Converse names none). */
export function converseReplyToMessages(body: JsonObject, model: string, id: string): Record<string, unknown> {
  const output = objectAt(body.output, 'output');
  const message = objectAt(output.message, 'output.message');
  const content = arrayAt(message.content, 'output.message.content').map((b, k) =>
    contentBlock(b, `output.message.content[${k}]`),
  );
  return {
    id,
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: stopReason(body.stopReason, 'stopReason'),
    stop_sequence: null,
    usage: converseUsage(getObject(body, 'usage')),
  };
}
