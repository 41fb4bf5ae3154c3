import { CpError } from '#kernel/errors.js';

/**
 * Normalised failure kinds. Retryable (by the router's one retry loop): rate_limited (429),
 * overloaded (529/503), server_error (5xx, 409), timeout (408 or the deadline) and network.
 * Never retried: spend_limit (a 429/402 spend cap), invalid_request and auth (other 4xx),
 * malformed_response (the provider may already have done and billed the work), cancelled (the caller aborted).
 */
export const PROVIDER_ERROR_KINDS = [
  'rate_limited',
  'overloaded',
  'server_error',
  'timeout',
  'spend_limit',
  'invalid_request',
  'auth',
  'malformed_response',
  'network',
  'cancelled',
] as const;
export type ProviderErrorKind = (typeof PROVIDER_ERROR_KINDS)[number];

const RETRYABLE: ReadonlySet<ProviderErrorKind> = new Set([
  'rate_limited',
  'overloaded',
  'server_error',
  'timeout',
  'network',
]);

export function isRetryableKind(kind: ProviderErrorKind): boolean {
  return RETRYABLE.has(kind);
}

const HINTS: Record<ProviderErrorKind, string> = {
  rate_limited: 'the provider rate-limited this call; retry after retry_after_ms or lower the request rate',
  overloaded: 'the provider is temporarily overloaded; retry with backoff',
  server_error: 'the provider failed internally; retry with backoff',
  timeout: 'the provider did not answer within the deadline; retry or raise the timeout',
  spend_limit: 'the account reached its spend limit or quota; raise it at the provider (retrying will not help)',
  invalid_request: 'the request was refused as invalid; fix the request (retrying will not help)',
  auth: 'the API key was refused; check the key in the provider config or its *_API_KEY environment variable',
  malformed_response:
    'the provider answered with a body that is not the expected wire format; check the base URL points at a compatible server',
  network: 'the provider could not be reached; check the base URL and that the server is running',
  cancelled: 'the caller cancelled the call',
};

export interface ProviderErrorInit {
  kind: ProviderErrorKind;
  providerId: string;
  message: string;
  status?: number | null;
  retryAfterMs?: number | null;
  requestId?: string | null;
  /** The provider's own error type/code, e.g. `overloaded_error` or `insufficient_quota`. */
  providerErrorType?: string | null;
  /**
   * The failure came after a 2xx status (body cut off, reset mid-body, malformed or oversized 2xx body):
   * the provider may already have done and billed the work, so it is never retried and its budget
   * reservation is kept charged as unknown, not released.
   */
  afterSuccess?: boolean;
  cause?: unknown;
}

/** The catalogued code of a kind: `ERR_PROVIDER_<KIND>`. */
export function providerErrorCode(kind: ProviderErrorKind): `ERR_PROVIDER_${Uppercase<ProviderErrorKind>}` {
  return `ERR_PROVIDER_${kind.toUpperCase() as Uppercase<ProviderErrorKind>}`;
}

/** Every provider failure. Code `ERR_PROVIDER_<KIND>`; `error_code` is the seed's upper-case kind (TIMEOUT, SERVER_ERROR, …). */
export class ProviderError extends CpError {
  readonly kind: ProviderErrorKind;
  readonly provider_id: string;
  readonly status: number | null;
  readonly retryable: boolean;
  readonly retry_after_ms: number | null;
  readonly request_id: string | null;
  readonly provider_error_type: string | null;
  readonly after_success: boolean;

  constructor(init: ProviderErrorInit) {
    const status = init.status ?? null;
    const retryAfterMs = init.retryAfterMs ?? null;
    const requestId = init.requestId ?? null;
    const providerErrorType = init.providerErrorType ?? null;
    const afterSuccess = init.afterSuccess === true;
    const retryable = isRetryableKind(init.kind) && !afterSuccess;
    super(providerErrorCode(init.kind), init.message, {
      hint: HINTS[init.kind],
      details: {
        provider_id: init.providerId,
        kind: init.kind,
        status,
        retryable,
        retry_after_ms: retryAfterMs,
        request_id: requestId,
        provider_error_type: providerErrorType,
        after_success: afterSuccess,
      },
      cause: init.cause,
    });
    this.name = 'ProviderError';
    this.kind = init.kind;
    this.provider_id = init.providerId;
    this.status = status;
    this.retryable = retryable;
    this.retry_after_ms = retryAfterMs;
    this.request_id = requestId;
    this.provider_error_type = providerErrorType;
    this.after_success = afterSuccess;
  }

  /** The seed's error code for EXCHANGE records: TIMEOUT, SERVER_ERROR, RATE_LIMITED, … */
  get error_code(): string {
    return this.kind.toUpperCase();
  }
}

export function isProviderError(value: unknown): value is ProviderError {
  if (value instanceof ProviderError) return true;
  // A ProviderError from another copy of this module (repository scripts driving an installed root).
  const v = value as { kind?: unknown; code?: unknown } | null;
  return (
    value instanceof Error &&
    typeof v?.code === 'string' &&
    v.code.startsWith('ERR_PROVIDER_') &&
    typeof v.kind === 'string' &&
    (PROVIDER_ERROR_KINDS as readonly string[]).includes(v.kind)
  );
}

/**
 * The kind an HTTP failure status means when the body says nothing more specific. Provider modules
 * refine it (spend-limit 429s, `overloaded_error` bodies).
 */
export function kindForStatus(status: number): ProviderErrorKind {
  if (status === 401 || status === 403) return 'auth';
  if (status === 402) return 'spend_limit';
  if (status === 408) return 'timeout';
  if (status === 429) return 'rate_limited';
  if (status === 503 || status === 529) return 'overloaded';
  // 409 (a conflicting concurrent request) clears on its own, like a server fault.
  if (status === 409 || status >= 500) return 'server_error';
  if (status >= 400) return 'invalid_request';
  return 'malformed_response';
}
