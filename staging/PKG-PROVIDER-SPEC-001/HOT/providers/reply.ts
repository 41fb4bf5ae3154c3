import { show } from '#kernel/errors.js';
import { boundJson, boundText } from './bound.js';
import type { Clock } from './clock.js';
import { kindForStatus, ProviderError, type ProviderErrorKind } from './errors.js';
import type { HttpReply } from './http.js';
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
  /** The wait the body asks for (Google's `RetryInfo.retryDelay`), used when no `retry-after` header says one. */
  retryAfterMs?: number | null;
}

/** The ProviderError for a non-2xx reply, with `retry-after` parsed against the injected clock (else the body's wait). */
export function failureFromReply(
  providerId: string,
  reply: HttpReply,
  facts: FailureFacts,
  clock: Clock,
  secrets: readonly string[],
): ProviderError {
  const kind = facts.kind ?? kindForStatus(reply.status);
  const said = facts.providerMessage === null ? '' : `: ${show(boundText(facts.providerMessage, secrets, 1024), 300)}`;
  // The error type and request id come from the body too: bounded and redacted like the message.
  const errorType = facts.providerErrorType === null ? null : boundText(facts.providerErrorType, secrets);
  const requestId = facts.requestId === null ? null : boundText(facts.requestId, secrets);
  const type = errorType === null ? '' : ` ${show(errorType, 80)}`;
  return new ProviderError({
    kind,
    providerId,
    status: reply.status,
    retryAfterMs: parseRetryAfter(reply.headers, clock) ?? facts.retryAfterMs ?? null,
    requestId,
    providerErrorType: errorType,
    message: `provider ${show(providerId)} answered HTTP ${reply.status}${type}${said}`,
  });
}

/** A 2xx reply whose body is not the expected wire format: the provider may have billed it (`after_success`). */
export function malformed(
  providerId: string,
  reply: Pick<HttpReply, 'status' | 'text'>,
  problem: string,
  requestId: string | null,
  secrets: readonly string[],
): ProviderError {
  return new ProviderError({
    kind: 'malformed_response',
    providerId,
    status: reply.status,
    requestId: requestId === null ? null : boundText(requestId, secrets),
    afterSuccess: reply.status >= 200 && reply.status <= 299,
    message: `provider ${show(providerId)} answered HTTP ${reply.status} with a malformed body: ${boundText(problem, secrets, 300)} (body starts ${show(boundText(reply.text.slice(0, 400), secrets), 80)})`,
  });
}

/** A provider's success body, parsed into what every provider reports. */
export interface ParsedReply {
  content: string;
  model: string | null;
  rawStopReason: string | null;
  /** The normalised reason when the raw one alone does not say it (a Gemini `STOP` that called a function). */
  stopReason?: StopReason;
  /** The reply's id from its body, for an API whose headers carry none (Gemini's `responseId`). */
  requestId?: string | null;
  usage: Usage;
}

/**
 * The ProviderResult for a parsed success body: the model falls back to the one requested. Everything the
 * server chose is bounded here, at the edge, before any record is built: short fields capped, strings made
 * well-formed, the raw usage object bounded in depth, entries and sizes, and the provider's key scrubbed
 * from all of it (a server that echoes the key gets it recorded nowhere). The content is kept whole
 * (the body size cap bounds it).
 */
export function successResult(
  providerId: string,
  reply: Pick<HttpReply, 'latencyMs'>,
  parsed: ParsedReply,
  requestedModel: unknown,
  requestId: string | null,
  normaliseStopReason: (raw: string | null) => StopReason,
  secrets: readonly string[] = [],
): ProviderResult {
  const raw = parsed.usage.raw === null ? null : (boundJson(parsed.usage.raw, secrets) as Usage['raw']);
  return {
    provider_id: providerId,
    model: boundText(parsed.model ?? String(requestedModel), secrets),
    content: boundText(parsed.content, secrets, Number.MAX_SAFE_INTEGER),
    stop_reason: parsed.stopReason ?? normaliseStopReason(parsed.rawStopReason),
    raw_stop_reason: parsed.rawStopReason === null ? null : boundText(parsed.rawStopReason, secrets),
    usage: { ...parsed.usage, raw },
    request_id: requestId === null ? null : boundText(requestId, secrets),
    latency_ms: reply.latencyMs,
  };
}

/** A provider's stop-reason mapping: its own values to the normalised ones; anything else is `other`. */
export function stopReasonNormaliser(table: Readonly<Record<string, StopReason>>): (raw: string | null) => StopReason {
  return (raw) => (raw === null || !Object.hasOwn(table, raw) ? 'other' : (table[raw] as StopReason));
}
