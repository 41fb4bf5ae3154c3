import { show } from '../kernel/errors.js';
import type { Clock } from './clock.js';
import { kindForStatus, ProviderError, type ProviderErrorKind } from './errors.js';
import type { HttpReply } from './http.js';
import { redact } from './redact.js';
import { parseRetryAfter } from './retry-after.js';
import type { ProviderResult, StopReason, Usage } from './spec.js';

export interface FailureFacts {
  /** The provider's own error type/code from the body, if any. */
  providerErrorType: string | null;
  /** The provider's error message from the body, if any (redacted and bounded before use). */
  providerMessage: string | null;
  requestId: string | null;
  /** A provider-specific refinement of the status-derived kind (spend limit, overloaded body). */
  kind?: ProviderErrorKind;
}

/** The ProviderError for a non-2xx reply, with `retry-after` parsed against the injected clock. */
export function failureFromReply(providerId: string, reply: HttpReply, facts: FailureFacts, clock: Clock, secrets: readonly string[]): ProviderError {
  const kind = facts.kind ?? kindForStatus(reply.status);
  const said = facts.providerMessage === null ? '' : `: ${show(redact(facts.providerMessage, secrets), 300)}`;
  const type = facts.providerErrorType === null ? '' : ` ${facts.providerErrorType}`;
  return new ProviderError({
    kind, providerId, status: reply.status, retryAfterMs: parseRetryAfter(reply.headers, clock), requestId: facts.requestId, providerErrorType: facts.providerErrorType,
    message: `provider ${show(providerId)} answered HTTP ${reply.status}${type}${said}`,
  });
}

/** A 2xx reply whose body is not the expected wire format. */
export function malformed(providerId: string, reply: HttpReply, problem: string, requestId: string | null, secrets: readonly string[]): ProviderError {
  return new ProviderError({
    kind: 'malformed_response', providerId, status: reply.status, requestId,
    message: `provider ${show(providerId)} answered HTTP ${reply.status} with a malformed body: ${problem} (body starts ${show(redact(reply.text, secrets), 80)})`,
  });
}

/** A provider's success body, parsed into what every provider reports. */
export interface ParsedReply {
  content: string;
  model: string | null;
  rawStopReason: string | null;
  usage: Usage;
}

/** The ProviderResult for a parsed success body: the model falls back to the one requested. */
export function successResult(providerId: string, reply: HttpReply, parsed: ParsedReply, requestedModel: unknown, requestId: string | null,
  normaliseStopReason: (raw: string | null) => StopReason): ProviderResult {
  return {
    provider_id: providerId,
    model: parsed.model ?? String(requestedModel),
    content: parsed.content,
    stop_reason: normaliseStopReason(parsed.rawStopReason),
    raw_stop_reason: parsed.rawStopReason,
    usage: parsed.usage,
    request_id: requestId,
    latency_ms: reply.latencyMs,
  };
}

/** A provider's stop-reason mapping: its own values to the normalised ones; anything else is `other`. */
export function stopReasonNormaliser(table: Readonly<Record<string, StopReason>>): (raw: string | null) => StopReason {
  return (raw) => (raw === null || !Object.hasOwn(table, raw) ? 'other' : (table[raw] as StopReason));
}
