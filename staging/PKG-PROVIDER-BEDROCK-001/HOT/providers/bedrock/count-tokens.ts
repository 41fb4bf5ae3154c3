// Anthropic's count_tokens on Bedrock's CountTokens (`POST /model/{modelId}/count-tokens`): the request counted as the
// InvokeModel body or the Converse request it would be sent as, `{"inputTokens"}` answered as `{"input_tokens"}`.
import { readText } from '#providers/http.js';
import { asObject, getCount, parseJson } from '#providers/json.js';
import type { WireRequest, WireResponse } from '#providers/wire/spec.js';
import { converseBody } from './converse/route.js';
import { broken } from './eventstream.js';

/** InvokeModel's schema wants a `max_tokens` that count_tokens bodies lack; the count is of the input only. */
const COUNTED_MAX_TOKENS = 1;

/**
 * The CountTokens body: `{input: {invokeModel: {body}}}` with the InvokeModel body as a JSON string, or
 * `{input: {converse: {messages, system, toolConfig}}}` for a model called through Converse (its refusals apply).
 */
export function countTokensBody(
  providerId: string,
  request: WireRequest,
  converse: boolean,
  invokeBody: (request: WireRequest) => Record<string, unknown>,
  modelId: string,
): Record<string, unknown> {
  if (converse) {
    const { messages, system, toolConfig } = converseBody(providerId, request, modelId);
    return { input: { converse: { messages, system, toolConfig } } };
  }
  const body = invokeBody(request);
  if (body.max_tokens === undefined) body.max_tokens = COUNTED_MAX_TOKENS;
  return { input: { invokeModel: { body: JSON.stringify(body) } } };
}

async function* asAnthropic(providerId: string, response: WireResponse): AsyncGenerator<Uint8Array> {
  const parsed = parseJson(await readText(response.body, Number.POSITIVE_INFINITY));
  const count = getCount(parsed.ok ? asObject(parsed.value) : null, 'inputTokens');
  if (count === null) throw broken(providerId, response.requestId, 'the CountTokens reply has no inputTokens count');
  yield new TextEncoder().encode(JSON.stringify({ input_tokens: count }));
}

/** The CountTokens reply as Anthropic's count_tokens reply. */
export function countTokensReply(providerId: string, response: WireResponse): WireResponse {
  return { ...response, contentType: 'application/json', body: asAnthropic(providerId, response) };
}
