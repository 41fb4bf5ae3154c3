import { errorFacts as anthropicErrorFacts } from '#providers/anthropic/reply.js';
import { asObject, getObject, getString, parseJson } from '#providers/json.js';
import type { FailureFacts } from '#providers/reply.js';

/**
 * Error facts from a Vertex reply: Google's envelope `{"error":{"code":429,"message","status":"RESOURCE_EXHAUSTED"}}`
 * (quota, permissions, a model not enabled), else Anthropic's own error body, which Vertex passes through
 * (`overloaded_error`, …). The status gives the kind; Google's billing refusals are the spend limit.
 */
export function vertexErrorFacts(text: string, headerRequestId: string | null): FailureFacts {
  const parsed = parseJson(text);
  const body = parsed.ok ? asObject(parsed.value) : null;
  const error = getObject(body, 'error');
  const status = getString(error, 'status');
  if (status === null) return anthropicErrorFacts(text, headerRequestId);
  const message = getString(error, 'message');
  const facts: FailureFacts = { providerErrorType: status, providerMessage: message, requestId: headerRequestId };
  if (
    message !== null &&
    /\bbilling\b/i.test(message) &&
    (status === 'PERMISSION_DENIED' || status === 'FAILED_PRECONDITION')
  )
    return { ...facts, kind: 'spend_limit' };
  return facts;
}
