import { asObject, getObject, getString, parseJson } from '#providers/json.js';
import type { FailureFacts, ParsedReply } from '#providers/reply.js';
import type { JsonObject } from '#providers/json.js';
import { normaliseStopReason, parseUsage } from '#providers/surfaces/anthropic.js';
import type { Usage } from '#providers/spec.js';

export { normaliseStopReason, parseUsage };

export type ParsedMessage = ParsedReply;

/** Parse a Messages API success body (its usage read by `readUsage`); returns a problem string when it is not one. */
export function parseMessage(
  text: string,
  readUsage: (u: JsonObject | null) => Usage = parseUsage,
): ParsedMessage | string {
  const parsed = parseJson(text);
  if (!parsed.ok) return `not JSON (${parsed.error.message})`;
  const body = asObject(parsed.value);
  if (body === null) return 'not a JSON object';
  if (body.type !== undefined && body.type !== 'message') return `type is ${JSON.stringify(body.type)}, not "message"`;
  if (!Array.isArray(body.content)) return 'content is not an array';
  const texts: string[] = [];
  for (const block of body.content) {
    const b = asObject(block);
    if (b === null || typeof b.type !== 'string') return 'a content block is not an object with a type';
    if (b.type === 'text') {
      if (typeof b.text !== 'string') return 'a text block has no string text';
      texts.push(b.text);
    }
  }
  return {
    content: texts.join(''),
    model: getString(body, 'model'),
    rawStopReason: getString(body, 'stop_reason'),
    usage: readUsage(getObject(body, 'usage')),
  };
}

/**
 * Error facts from an error body `{"type":"error","error":{"type","message","details"?},"request_id"}`.
 * A spend cap is recognised by `error.details.error_code == "enforced_spend_limit_reached"` (a 429 sent
 * without retry-after), or by a `billing_error`, or by a message saying the account reached its spend or
 * API usage limit (sent as 400 or 429). `overloaded_error` means overloaded whatever the status.
 */
export function errorFacts(text: string, headerRequestId: string | null): FailureFacts {
  const parsed = parseJson(text);
  const body = parsed.ok ? asObject(parsed.value) : null;
  const error = getObject(body, 'error');
  const type = getString(error, 'type');
  const message = getString(error, 'message');
  const facts: FailureFacts = {
    providerErrorType: type,
    providerMessage: message,
    requestId: headerRequestId ?? getString(body, 'request_id'),
  };
  const detailCode = getString(getObject(error, 'details'), 'error_code');
  if (detailCode === 'enforced_spend_limit_reached' || type === 'billing_error' || isSpendLimitMessage(message)) {
    return { ...facts, providerErrorType: detailCode ?? type, kind: 'spend_limit' };
  }
  if (type === 'overloaded_error') return { ...facts, kind: 'overloaded' };
  return facts;
}

function isSpendLimitMessage(message: string | null): boolean {
  return (
    message !== null &&
    /\b(spend limit|reached your (specified )?API usage limits?|credit balance is too low)\b/i.test(message)
  );
}
