import { asObject, getObject, getString, parseJson, type JsonObject } from '#providers/json.js';
import type { FailureFacts, ParsedReply } from '#providers/reply.js';
import { geminiReader, normaliseStopReason, parseUsage } from '#providers/surfaces/gemini.js';

export { normaliseStopReason, parseUsage };

/** A generateContent success body as the neutral send reports it: its text parts joined. */
export function parseGenerate(text: string): ParsedReply | string {
  const parsed = parseJson(text);
  if (!parsed.ok) return `not JSON (${parsed.error.message})`;
  const reader = geminiReader('gemini.generate');
  const problem = reader.body(parsed.value);
  if (problem !== null) return problem;
  const result = reader.result();
  return {
    content: result.blocks
      .filter((b) => b.type === 'text')
      .map((b) => String(b.text))
      .join(''),
    model: result.model,
    rawStopReason: result.raw_stop_reason,
    stopReason: result.stop_reason,
    requestId: result.response_id ?? null,
    usage: result.usage,
  };
}

/** The neutral stop reason from a finish reason alone (the neutral send reads the tool calls from the body). */
export function neutralStopReason(raw: string | null): ReturnType<typeof normaliseStopReason> {
  return normaliseStopReason(raw);
}

/** `google.rpc.Status`'s `details`, each an object with its `@type`. */
function details(error: JsonObject | null): JsonObject[] {
  const list = error?.details;
  return Array.isArray(list) ? list.map(asObject).filter((d): d is JsonObject => d !== null) : [];
}

function detail(error: JsonObject | null, type: string): JsonObject | null {
  return details(error).find((d) => d['@type'] === `type.googleapis.com/google.rpc.${type}`) ?? null;
}

/** `RetryInfo.retryDelay`, a protobuf Duration in JSON (`"13s"`, `"0.5s"`), in milliseconds. */
export function retryDelayMs(error: JsonObject | null): number | null {
  const delay = getString(detail(error, 'RetryInfo'), 'retryDelay');
  const match = delay === null ? null : /^(\d{1,9})(?:\.(\d{1,9}))?s$/.exec(delay.trim());
  if (match === null) return null;
  return Math.ceil(Number(`${match[1]}.${match[2] ?? '0'}`) * 1000);
}

/** The prepaid balance at zero (a 429 RESOURCE_EXHAUSTED like any quota, but retrying will not help). */
const SPEND_LIMIT = /\b(prepayment credits|credits are depleted|spend(ing)? cap)\b/i;

/**
 * Error facts from Google's error JSON `{"error":{"code","message","status","details"[]}}` (or the one-element
 * array the streaming route answers with when it is not asked for SSE). The status decides where the HTTP code
 * would mislead: an invalid key is a 400 INVALID_ARGUMENT whose ErrorInfo reason is API_KEY_INVALID (auth), UNAVAILABLE
 * means overloaded, and a RESOURCE_EXHAUSTED that names depleted prepayment credits is a spend limit. The wait a
 * 429 asks for is in its RetryInfo detail. Gemini replies carry no request id header, and its errors no id at all.
 */
export function errorFacts(text: string, headerRequestId: string | null): FailureFacts {
  const parsed = parseJson(text);
  const value = parsed.ok ? (Array.isArray(parsed.value) ? parsed.value[0] : parsed.value) : null;
  const error = getObject(asObject(value), 'error');
  const status = getString(error, 'status');
  const message = getString(error, 'message');
  const reason = getString(detail(error, 'ErrorInfo'), 'reason');
  const facts: FailureFacts = {
    providerErrorType: reason ?? status,
    providerMessage: message,
    requestId: headerRequestId,
    retryAfterMs: retryDelayMs(error),
  };
  if (status === 'UNAUTHENTICATED' || status === 'PERMISSION_DENIED' || reason === 'API_KEY_INVALID')
    return { ...facts, kind: 'auth' };
  if (status === 'UNAVAILABLE') return { ...facts, kind: 'overloaded' };
  if (status === 'RESOURCE_EXHAUSTED' && message !== null && SPEND_LIMIT.test(message))
    return { ...facts, kind: 'spend_limit', retryAfterMs: null };
  return facts;
}
