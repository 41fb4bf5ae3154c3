// Bedrock's Converse API under the Anthropic Messages surface: the request mapped before anything is sent, the reply
// (a JSON body, or ConverseStream's eventstream) turned into what Anthropic's readers and clients expect.
import { show } from '#kernel/errors.js';
import { ProviderError } from '#providers/errors.js';
import { readText } from '#providers/http.js';
import { asObject, parseJson } from '#providers/json.js';
import { TranslationRefused } from '#providers/translate/refusal.js';
import type { WireRequest, WireResponse } from '#providers/wire/spec.js';
import { broken, eventStreamMessages, exceptionSse, header, payloadText, sse } from '../eventstream.js';
import { bedrockVendor } from '../vendor.js';
import { converseReplyToMessages } from './reply.js';
import { messagesToConverse } from './request.js';
import { ConverseToMessages } from './stream.js';

const encoder = new TextEncoder();

/**
 * The Converse body for the client's Messages body sent to `modelId`, or an invalid_request naming the field
 * Converse cannot take.
 */
export function converseBody(providerId: string, request: WireRequest, modelId: string): Record<string, unknown> {
  try {
    return messagesToConverse(request.body ?? {}, bedrockVendor(modelId) === 'anthropic');
  } catch (error) {
    if (!(error instanceof TranslationRefused)) throw error;
    const { field, why } = error.refusal;
    throw new ProviderError({
      kind: 'invalid_request',
      providerId,
      providerErrorType: 'TRANSLATION_UNSUPPORTED',
      message: `provider ${show(providerId)} cannot send ${show(field)} to Bedrock Converse: ${why} (nothing was sent)`,
    });
  }
}

/** The message id a translated reply carries: Converse gives none, so the upstream's request id stands in. */
const messageId = (response: WireResponse): string => `msg_bdrk_${response.requestId ?? 'converse'}`;

async function* wholeAsMessages(providerId: string, response: WireResponse, model: string): AsyncGenerator<Uint8Array> {
  const text = await readText(response.body, Number.POSITIVE_INFINITY);
  const parsed = parseJson(text);
  const body = parsed.ok ? asObject(parsed.value) : null;
  if (body === null) throw broken(providerId, response.requestId, 'the Converse reply is not a JSON object');
  try {
    yield encoder.encode(JSON.stringify(converseReplyToMessages(body, model, messageId(response))));
  } catch (error) {
    if (!(error instanceof TranslationRefused)) throw error;
    throw broken(providerId, response.requestId, `${error.refusal.field}: ${error.refusal.why}`);
  }
}

async function* streamAsMessages(
  providerId: string,
  response: WireResponse,
  model: string,
): AsyncGenerator<Uint8Array> {
  const fail = (problem: string) => broken(providerId, response.requestId, problem);
  const translator = new ConverseToMessages(model, messageId(response));
  for await (const message of eventStreamMessages(response.body, fail)) {
    const payload = payloadText(message);
    if (header(message, ':message-type') !== 'event') {
      yield exceptionSse(message, payload);
      continue;
    }
    const parsed = parseJson(payload);
    const event = parsed.ok ? asObject(parsed.value) : null;
    if (event === null) throw fail(`the ${show(header(message, ':event-type'))} event is not a JSON object`);
    let events: ReturnType<ConverseToMessages['push']>;
    try {
      events = translator.push(header(message, ':event-type') ?? '', event);
    } catch (error) {
      if (!(error instanceof TranslationRefused)) throw error;
      throw fail(`${error.refusal.field}: ${error.refusal.why}`);
    }
    for (const [name, data] of events) yield sse(name, JSON.stringify({ type: name, ...data }));
  }
}

/** A Converse reply as the Anthropic Messages reply (JSON, or SSE when streamed) its client and reader expect. */
export function converseReply(
  providerId: string,
  response: WireResponse,
  model: string,
  streamed: boolean,
): WireResponse {
  return streamed
    ? {
        ...response,
        contentType: 'text/event-stream; charset=utf-8',
        body: streamAsMessages(providerId, response, model),
      }
    : { ...response, contentType: 'application/json', body: wholeAsMessages(providerId, response, model) };
}
