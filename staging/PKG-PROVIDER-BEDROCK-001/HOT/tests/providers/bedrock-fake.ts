// A local Bedrock runtime as AWS documents it: InvokeModel answers the Anthropic message as JSON;
// InvokeModelWithResponseStream answers `application/vnd.amazon.eventstream` messages, each an event `chunk` whose
// payload is `{"bytes": base64(one Anthropic streaming event), "p": padding}`, or an exception message. The frames
// are built with the official codec (@smithy/core's EventStreamCodec, the one the AWS SDK for JavaScript uses).
import { EventStreamCodec } from '@smithy/core/event-streams';
import type { ScriptedReply } from '#tests/providers/fixtures/server.js';
import type { LogicalReply } from '#tests/providers/fixtures/wire-extras.js';

const codec = new EventStreamCodec(
  (bytes) => Buffer.from(bytes).toString('utf8'),
  (text) => Buffer.from(text, 'utf8'),
);

function message(headers: Record<string, string>, payload: string): Uint8Array {
  const wire: Record<string, { type: 'string'; value: string }> = {};
  for (const [name, value] of Object.entries(headers)) wire[name] = { type: 'string', value };
  return codec.encode({ headers: wire, body: Buffer.from(payload, 'utf8') });
}

/** One `chunk` event carrying an Anthropic streaming event, padded as Bedrock pads them. */
export function chunkFrame(event: unknown): Uint8Array {
  const bytes = Buffer.from(JSON.stringify(event), 'utf8').toString('base64');
  return message(
    { ':event-type': 'chunk', ':content-type': 'application/json', ':message-type': 'event' },
    JSON.stringify({ bytes, p: 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJ' }),
  );
}

/** A modeled exception inside the stream (e.g. `throttlingException`, `modelStreamErrorException`). */
export function exceptionFrame(type: string, text: string): Uint8Array {
  return message(
    { ':exception-type': type, ':content-type': 'application/json', ':message-type': 'exception' },
    JSON.stringify({ message: text }),
  );
}

/** The data of each event of an SSE text (the fixtures' Anthropic streams), in order. */
export function sseEvents(text: string): unknown[] {
  return text
    .split('\n\n')
    .map((block) => block.split('\n').find((line) => line.startsWith('data: ')))
    .filter((line): line is string => line !== undefined)
    .map((line) => JSON.parse(line.slice('data: '.length)));
}

export function streamReply(requestId: string, frames: Uint8Array[], cut = false): ScriptedReply {
  return {
    status: 200,
    headers: {
      'content-type': 'application/vnd.amazon.eventstream',
      'x-amzn-requestid': requestId,
      'x-amzn-bedrock-content-type': 'application/json',
    },
    body: '',
    bytes: Buffer.concat(frames),
    cut,
  };
}

/** The wire-extras replies in Bedrock's framing (a cut stream stops inside its fourth message). */
export function bedrockFrame(reply: LogicalReply, stream: boolean, cut: boolean): ScriptedReply {
  if (!stream) return { status: 200, headers: { 'x-amzn-requestid': reply.requestId }, body: reply.whole };
  const frames = reply.events.map(([, data]) => chunkFrame(data));
  if (!cut) return streamReply(reply.requestId, frames);
  const partial = frames.slice(0, 4);
  const last = partial[3] as Uint8Array;
  partial[3] = last.subarray(0, last.byteLength >> 1);
  return streamReply(reply.requestId, partial, true);
}

export function bedrockError(status: number, type: string, text: string, requestId: string): ScriptedReply {
  return {
    status,
    headers: {
      'x-amzn-requestid': requestId,
      'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`,
    },
    body: { message: text },
  };
}
