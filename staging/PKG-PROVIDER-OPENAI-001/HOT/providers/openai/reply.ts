import { asObject, getObject, getString, type JsonObject, parseJson } from '#providers/json.js';
import type { FailureFacts, ParsedReply } from '#providers/reply.js';
import type { Usage } from '#providers/spec.js';
import { normaliseStopReason, parseUsage } from '#providers/surfaces/openai.js';

export { normaliseStopReason, parseUsage };

export type ParsedCompletion = ParsedReply;

/** Parse a Chat Completions success body (first choice); returns a problem string when it is not one. */
export function parseCompletion(
  text: string,
  readUsage: (u: JsonObject | null) => Usage = parseUsage,
): ParsedCompletion | string {
  const parsed = parseJson(text);
  if (!parsed.ok) return `not JSON (${parsed.error.message})`;
  const body = asObject(parsed.value);
  if (body === null) return 'not a JSON object';
  if (!Array.isArray(body.choices) || body.choices.length === 0) return 'choices is not a non-empty array';
  const choice = asObject(body.choices[0]);
  const message = getObject(choice, 'message');
  if (message === null) return 'choices[0].message is not an object';
  const content = message.content;
  if (content !== null && content !== undefined && typeof content !== 'string')
    return 'choices[0].message.content is not a string or null';
  return {
    content: content ?? '',
    model: getString(body, 'model'),
    rawStopReason: getString(choice, 'finish_reason'),
    usage: readUsage(getObject(body, 'usage')),
  };
}

/**
 * Error facts from `{"error":{"message","type","param","code"}}` (servers that send `{"error":"text"}`
 * or `{"detail":…}` are understood too). `insufficient_quota` (as code or type) is the spend limit.
 */
export function errorFacts(text: string, headerRequestId: string | null): FailureFacts {
  const parsed = parseJson(text);
  const body = parsed.ok ? asObject(parsed.value) : null;
  const error = getObject(body, 'error');
  const code = getString(error, 'code');
  const type = getString(error, 'type');
  const message =
    getString(error, 'message') ?? getString(body, 'error') ?? getString(body, 'detail') ?? getString(body, 'message');
  const facts: FailureFacts = { providerErrorType: code ?? type, providerMessage: message, requestId: headerRequestId };
  if (code === 'insufficient_quota' || type === 'insufficient_quota')
    return { ...facts, providerErrorType: 'insufficient_quota', kind: 'spend_limit' };
  return facts;
}
