// Bedrock's Converse API as AWS documents it (API_runtime_Converse, API_runtime_ConverseStream): Converse answers
// `{output: {message: {role, content[]}}, stopReason, usage, metrics}`; ConverseStream answers
// `application/vnd.amazon.eventstream` messages, each an event named by `:event-type` (messageStart,
// contentBlockStart, contentBlockDelta, contentBlockStop, messageStop, metadata) whose payload is that event's JSON
// with a `p` padding field, framed by the official codec (@smithy/core's EventStreamCodec, CRCs included).
import { EventStreamCodec } from '@smithy/core/event-streams';
import type { ScriptedReply } from '#tests/providers/fixtures/server.js';
import type { WireAnswer } from '#tests/providers/fixtures/streams.js';

const codec = new EventStreamCodec(
  (bytes) => Buffer.from(bytes).toString('utf8'),
  (text) => Buffer.from(text, 'utf8'),
);

const PADDING = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0';

function message(headers: Record<string, string>, payload: string): Uint8Array {
  const wire: Record<string, { type: 'string'; value: string }> = {};
  for (const [name, value] of Object.entries(headers)) wire[name] = { type: 'string', value };
  return codec.encode({ headers: wire, body: Buffer.from(payload, 'utf8') });
}

/** One ConverseStream event, as the service frames it. */
export function converseEvent(type: string, payload: Record<string, unknown>): Uint8Array {
  return message(
    { ':event-type': type, ':content-type': 'application/json', ':message-type': 'event' },
    JSON.stringify({ ...payload, p: PADDING.slice(0, 1 + (type.length % PADDING.length)) }),
  );
}

/** A modeled exception inside the stream (`throttlingException`, `modelStreamErrorException`, …). */
export function converseException(type: string, text: string): Uint8Array {
  return message(
    { ':exception-type': type, ':content-type': 'application/json', ':message-type': 'exception' },
    JSON.stringify({ message: text }),
  );
}

export interface ConverseUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadInputTokens?: number;
  cacheWriteInputTokens?: number;
}

/** The usage object as Converse reports it: `totalTokens` sums the uncached input, the cache buckets and the output. */
export function usage(u: ConverseUsage): Record<string, number> {
  const total = u.inputTokens + u.outputTokens + (u.cacheReadInputTokens ?? 0) + (u.cacheWriteInputTokens ?? 0);
  return { ...u, totalTokens: total };
}

export function converseWhole(
  requestId: string,
  content: Record<string, unknown>[],
  stopReason: string,
  u: ConverseUsage,
): ScriptedReply {
  return {
    status: 200,
    headers: { 'content-type': 'application/json', 'x-amzn-requestid': requestId },
    body: {
      output: { message: { role: 'assistant', content } },
      stopReason,
      usage: usage(u),
      metrics: { latencyMs: 412 },
    },
  };
}

export function converseStream(requestId: string, frames: Uint8Array[], cut = false): ScriptedReply {
  return {
    status: 200,
    headers: { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-requestid': requestId },
    body: '',
    bytes: Buffer.concat(frames),
    cut,
  };
}

/** The events of a streamed text reply: the text in two deltas (no contentBlockStart for text, as the service sends). */
export function textEvents(text: string, stopReason: string, u: ConverseUsage): Uint8Array[] {
  const half = Math.ceil(text.length / 2);
  return [
    converseEvent('messageStart', { role: 'assistant' }),
    converseEvent('contentBlockDelta', { contentBlockIndex: 0, delta: { text: text.slice(0, half) } }),
    converseEvent('contentBlockDelta', { contentBlockIndex: 0, delta: { text: text.slice(half) } }),
    converseEvent('contentBlockStop', { contentBlockIndex: 0 }),
    converseEvent('messageStop', { stopReason }),
    converseEvent('metadata', { usage: usage(u), metrics: { latencyMs: 380 } }),
  ];
}

/** A text block, then a tool call whose input arrives in two pieces, stopped for tool use. */
export function toolEvents(tool: { id: string; name: string; input: unknown }, u: ConverseUsage): Uint8Array[] {
  const input = JSON.stringify(tool.input);
  const half = Math.ceil(input.length / 2);
  return [
    converseEvent('messageStart', { role: 'assistant' }),
    converseEvent('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Let me check.' } }),
    converseEvent('contentBlockStop', { contentBlockIndex: 0 }),
    converseEvent('contentBlockStart', {
      contentBlockIndex: 1,
      start: { toolUse: { toolUseId: tool.id, name: tool.name } },
    }),
    converseEvent('contentBlockDelta', { contentBlockIndex: 1, delta: { toolUse: { input: input.slice(0, half) } } }),
    converseEvent('contentBlockDelta', { contentBlockIndex: 1, delta: { toolUse: { input: input.slice(half) } } }),
    converseEvent('contentBlockStop', { contentBlockIndex: 1 }),
    converseEvent('messageStop', { stopReason: 'tool_use' }),
    converseEvent('metadata', { usage: usage(u), metrics: { latencyMs: 512 } }),
  ];
}

const STOP: Record<WireAnswer['stop'], string> = { stop: 'end_turn', length: 'max_tokens' };

/** The wire contract's answer in Converse's terms: its usage split into the uncached input and the cache buckets. */
export function answerUsage(a: WireAnswer): ConverseUsage {
  return {
    inputTokens: a.usage.input_tokens - a.usage.cache_read_tokens - a.usage.cache_write_tokens,
    outputTokens: a.usage.output_tokens,
    cacheReadInputTokens: a.usage.cache_read_tokens,
    cacheWriteInputTokens: a.usage.cache_write_tokens,
  };
}

export function converseAnswer(a: WireAnswer, stream: boolean): ScriptedReply {
  if (!stream) return converseWhole(a.request_id, [{ text: a.text }], STOP[a.stop], answerUsage(a));
  return converseStream(a.request_id, textEvents(a.text, STOP[a.stop], answerUsage(a)));
}

/** An error reply as Bedrock sends it: the exception's name in `x-amzn-ErrorType`, `{"message"}` in the body. */
export function converseError(status: number, type: string, text: string, requestId: string): ScriptedReply {
  return {
    status,
    headers: {
      'content-type': 'application/json',
      'x-amzn-requestid': requestId,
      'x-amzn-ErrorType': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`,
    },
    body: { message: text },
  };
}

/**
 * A streamed reply with reasoning (API_runtime_ReasoningContentBlockDelta): the reasoning text in deltas, then its
 * signature, a redacted reasoning block (its bytes base64 in the JSON payload), then the answer's text.
 */
export function reasoningEvents(
  thought: [string, string],
  signature: string,
  redacted: string,
  text: string,
  u: ConverseUsage,
): Uint8Array[] {
  const reasoning = (index: number, delta: Record<string, string>) =>
    converseEvent('contentBlockDelta', { contentBlockIndex: index, delta: { reasoningContent: delta } });
  return [
    converseEvent('messageStart', { role: 'assistant' }),
    reasoning(0, { text: thought[0] }),
    reasoning(0, { text: thought[1] }),
    reasoning(0, { signature }),
    converseEvent('contentBlockStop', { contentBlockIndex: 0 }),
    reasoning(1, { redactedContent: redacted }),
    converseEvent('contentBlockStop', { contentBlockIndex: 1 }),
    converseEvent('contentBlockDelta', { contentBlockIndex: 2, delta: { text } }),
    converseEvent('contentBlockStop', { contentBlockIndex: 2 }),
    converseEvent('messageStop', { stopReason: 'end_turn' }),
    converseEvent('metadata', { usage: usage(u), metrics: { latencyMs: 950 } }),
  ];
}
