import { asObject, getString, parseJson } from '#providers/json.js';
import type { FailureFacts } from '#providers/reply.js';
import type { ReplyHeaders } from '#providers/transport.js';

/**
 * Error facts from a Bedrock error reply: the exception's name in `x-amzn-errortype` (`ThrottlingException:http://…`)
 * or the body's `__type`, its text in `{"message"}` / `{"Message"}`. The status gives the kind (429 rate limited, 503
 * overloaded, 5xx server, 403 auth, 400 bad request); ModelNotReadyException (429: the model is being loaded) is
 * overloaded, ModelTimeoutException (408) a timeout, ServiceQuotaExceededException a rate limit.
 */
export function bedrockErrorFacts(text: string, headerRequestId: string | null, headers?: ReplyHeaders): FailureFacts {
  const parsed = parseJson(text);
  const body = parsed.ok ? asObject(parsed.value) : null;
  const named = headers?.get('x-amzn-errortype') ?? getString(body, '__type') ?? getString(body, 'code');
  // `ThrottlingException:http://internal.amazon.com/coral/…` or `com.amazon.coral.service#ThrottlingException`.
  const type = named === null ? null : ((named.split(':')[0] as string).split('#').pop() ?? null);
  const facts: FailureFacts = {
    providerErrorType: type,
    providerMessage: getString(body, 'message') ?? getString(body, 'Message'),
    requestId: headerRequestId,
  };
  if (type === 'ModelNotReadyException') return { ...facts, kind: 'overloaded' };
  if (type === 'ModelTimeoutException') return { ...facts, kind: 'timeout' };
  if (type === 'ServiceQuotaExceededException') return { ...facts, kind: 'rate_limited' };
  return facts;
}
