import { EventStreamCodec } from '@smithy/core/event-streams';
import { show } from '#kernel/errors.js';
import { ProviderError } from '#providers/errors.js';
import type { WireResponse } from '#providers/wire/spec.js';

export type Message = ReturnType<EventStreamCodec['decode']>;

/** AWS's eventstream limit for one message (prelude, headers and payload). */
const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
const MIN_MESSAGE_BYTES = 16;

const codec = new EventStreamCodec(
  (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'),
  (text) => Buffer.from(text, 'utf8'),
);
const encoder = new TextEncoder();

export function broken(providerId: string, requestId: string | null, problem: string): ProviderError {
  // After a 2xx status: the call may have been billed, so it is charged as unknown and never retried.
  return new ProviderError({
    kind: 'malformed_response',
    providerId,
    status: 200,
    requestId,
    afterSuccess: true,
    message: `provider ${show(providerId)} sent a broken eventstream: ${problem}`,
  });
}

export function header(message: Message, name: string): string | null {
  const value = message.headers[name];
  return value?.type === 'string' ? value.value : null;
}

export function sse(event: string, data: string): Uint8Array {
  return encoder.encode(`event: ${event}\ndata: ${data}\n\n`);
}

/**
 * One decoded message as the Anthropic SSE event it carries: a `chunk` holds `{"bytes": base64(event JSON)}`; an
 * exception (`throttlingException`, `modelStreamErrorException`, …) becomes the `error` event Anthropic streams.
 */
function toSse(message: Message, fail: (problem: string) => ProviderError): Uint8Array {
  const kind = header(message, ':message-type');
  const payload = payloadText(message);
  if (kind === 'event') {
    if (header(message, ':event-type') !== 'chunk') return new Uint8Array(0);
    let event: unknown;
    try {
      const bytes = (JSON.parse(payload) as { bytes?: unknown }).bytes;
      if (typeof bytes !== 'string') throw new Error('no bytes');
      const text = Buffer.from(bytes, 'base64').toString('utf8');
      event = JSON.parse(text);
      const type = (event as { type?: unknown }).type;
      if (typeof type !== 'string' || !/^[a-z_]{1,64}$/.test(type)) throw new Error('no event type');
      return sse(type, text);
    } catch (error) {
      throw fail(`a chunk is not {"bytes": base64 of an event} (${(error as Error).message})`);
    }
  }
  return exceptionSse(message, payload);
}

/** An exception message (`throttlingException`, `modelStreamErrorException`, …) as Anthropic's `error` event. */
export function exceptionSse(message: Message, payload: string): Uint8Array {
  const type = header(message, ':exception-type') ?? header(message, ':error-code') ?? 'unknown';
  let said = header(message, ':error-message') ?? '';
  try {
    const m = (JSON.parse(payload) as { message?: unknown }).message;
    if (typeof m === 'string') said = m;
  } catch {
    // An exception without a JSON body still ends the stream as an error event.
  }
  return sse('error', JSON.stringify({ type: 'error', error: { type, message: said } }));
}

/** A message's payload as text. */
export function payloadText(message: Message): string {
  return Buffer.from(message.body.buffer, message.body.byteOffset, message.body.byteLength).toString('utf8');
}

/** The eventstream's messages, split by their length prefix and CRC-checked by the codec. */
export async function* eventStreamMessages(
  body: AsyncIterable<Uint8Array>,
  fail: (problem: string) => ProviderError,
): AsyncGenerator<Message> {
  let pending: Buffer = Buffer.alloc(0);
  // Chunks of a message not yet whole wait in a list and are joined once it is: joining on every chunk would copy a
  // large message dripped in small chunks over and over (quadratic in its size).
  let waiting: Buffer[] = [];
  let waitingBytes = 0;
  let needed = 0;
  for await (const chunk of body) {
    waiting.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    waitingBytes += chunk.byteLength;
    if (pending.length + waitingBytes < needed) continue;
    pending = Buffer.concat([pending, ...waiting]);
    waiting = [];
    waitingBytes = 0;
    needed = 0;
    while (pending.length >= 4) {
      const total = pending.readUInt32BE(0);
      if (total < MIN_MESSAGE_BYTES || total > MAX_MESSAGE_BYTES) throw fail(`a message claims ${total} bytes`);
      if (pending.length < total) {
        needed = total;
        break;
      }
      let message: Message;
      try {
        message = codec.decode(pending.subarray(0, total));
      } catch (error) {
        throw fail((error as Error).message);
      }
      pending = pending.subarray(total);
      yield message;
    }
  }
  const left = pending.length + waitingBytes;
  if (left > 0) throw fail(`the stream ended inside a message (${left} bytes left)`);
}

async function* eventsAsSse(
  body: AsyncIterable<Uint8Array>,
  fail: (problem: string) => ProviderError,
): AsyncGenerator<Uint8Array> {
  for await (const message of eventStreamMessages(body, fail)) {
    const out = toSse(message, fail);
    if (out.byteLength > 0) yield out;
  }
}

/** A streamed InvokeModel reply as the Anthropic Messages SSE stream its client and reader expect. */
export function eventStreamReply(providerId: string, response: WireResponse): WireResponse {
  return {
    ...response,
    contentType: 'text/event-stream; charset=utf-8',
    body: eventsAsSse(response.body, (problem) => broken(providerId, response.requestId, problem)),
  };
}
