import type { WireResponse } from '#providers/wire/spec.js';
import type { GovernedCall } from '#router/governed.js';
import type { AttemptRecord } from '#router/records.js';
import type { SendFailure } from '#router/send.js';
import type { CallContext } from './call.js';
import { noteConcluded } from './conclusion.js';
import { failureFor } from './refusals.js';

/** A 2xx reply that is no answer: concluded as a malformed reply, answered as an upstream failure. */
export async function failMalformed(
  ctx: CallContext,
  call: GovernedCall,
  wire: WireResponse,
  attempts: AttemptRecord[],
  extra: Record<string, unknown>,
  problem: string,
): Promise<void> {
  const failure = malformedReply(ctx, wire, problem);
  noteConcluded(ctx, await ctx.router.conclude(call, { kind: 'failed', failure, attempts, extra }), 'error');
  failUpstream(ctx, failure);
}

export function malformedReply(ctx: CallContext, wire: WireResponse, problem: string): SendFailure {
  return {
    kind: 'malformed_response',
    error_code: 'MALFORMED_RESPONSE',
    status: wire.status,
    retryable: false,
    retry_after_ms: null,
    message: `provider ${JSON.stringify(ctx.provider.id)} answered HTTP ${wire.status} with a malformed body: ${problem}`,
    after_success: true,
  };
}

export function failUpstream(ctx: CallContext, failure: SendFailure): void {
  const answer = failureFor(failure, ctx.endpoint.family);
  ctx.log.outcome = 'error';
  const extra: Record<string, string> = {};
  if (failure.retry_after_ms !== null) extra['retry-after'] = String(Math.ceil(failure.retry_after_ms / 1000));
  ctx.fail(ctx.endpoint.family, answer.status, answer.kind, clientMessage(ctx, failure), extra);
}

/** Failures without an upstream answer are described, not quoted: their text names the upstream's address. */
const UNANSWERED = new Set(['network', 'timeout', 'malformed_response', 'internal', 'cancelled']);

/** What the client is told about an upstream failure (the ledger keeps the whole message). */
export function clientMessage(ctx: CallContext, failure: SendFailure): string {
  if (!UNANSWERED.has(failure.kind)) return scrubbedMessage(ctx, failure.message);
  // The gateway's own limit, not the upstream's failure: said as such, so the caller knows what to change.
  if (failure.kind === 'timeout' && ctx.deadline !== null && performance.now() >= ctx.deadline.at)
    return `the call ran past the gateway's call deadline of ${ctx.deadline.ms} ms (gateway.call_deadline_ms) and was cut (${failure.error_code})`;
  const status = failure.status === null ? '' : ` (HTTP ${failure.status})`;
  const when = failure.after_success ? ' after the reply began' : '';
  return `upstream ${failure.kind.replace('_', ' ')}${status}${when} (${failure.error_code})`;
}

/** Upstream error text is already redacted of the upstream key by the provider; the client's token too, here. */
function scrubbedMessage(ctx: CallContext, message: string): string {
  const token = ctx.identity.token;
  return token !== null && token.length >= 4 ? message.split(token).join('[REDACTED]') : message;
}
