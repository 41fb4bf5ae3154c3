import type { SendFailure } from '#router/send.js';
import type { ErrorKind, Family } from './surfaces.js';

export interface HttpRefusal {
  status: number;
  kind: ErrorKind;
  /** `x-should-retry: false`: the SDKs would otherwise send every denial three times. */
  noRetry: boolean;
}

const UNAUTHENTICATED = new Set([
  'AUTH_MISSING',
  'AUTH_MALFORMED',
  'AUTH_BAD_SIGNATURE',
  'AUTH_EXPIRED',
  'AUTH_NOT_YET_VALID',
  'AUTH_UNKNOWN_KEY',
]);

/** The HTTP answer to a router refusal code (PROMPT_REJECTED's `error_code`). */
export function refusalFor(code: string): HttpRefusal {
  if (UNAUTHENTICATED.has(code)) return { status: 401, kind: 'authentication', noRetry: true };
  if (code.startsWith('AUTH_')) return { status: 403, kind: 'permission', noRetry: true };
  if (code === 'BUDGET_EXHAUSTED') return { status: 429, kind: 'budget', noRetry: true };
  if (code === 'RATE_LIMITED') return { status: 429, kind: 'rate_limit', noRetry: true };
  if (code === 'BUDGET_PRICE_UNKNOWN' || code === 'VALIDATION_FAILED' || code === 'TRANSLATION_UNSUPPORTED')
    return { status: 400, kind: 'invalid_request', noRetry: true };
  // The gateway cannot serve now, through no fault of the request: worth retrying after retry-after.
  if (code === 'CIRCUIT_OPEN' || code === 'BUDGET_UNAVAILABLE' || code === 'LEDGER_UNAVAILABLE')
    return { status: 503, kind: 'unavailable', noRetry: false };
  return { status: 500, kind: 'api_error', noRetry: true };
}

/**
 * The HTTP answer when every attempt upstream failed. The gateway's own retry loop has already run, so the
 * client is told not to retry on top of it.
 */
export function failureFor(failure: SendFailure, family: Family): HttpRefusal {
  switch (failure.kind) {
    case 'rate_limited':
      return { status: 429, kind: 'rate_limit', noRetry: true };
    case 'spend_limit':
      return { status: 429, kind: 'budget', noRetry: true };
    case 'overloaded':
      return { status: family === 'anthropic' ? 529 : 503, kind: 'overloaded', noRetry: true };
    case 'timeout':
      return { status: 504, kind: 'upstream', noRetry: true };
    case 'invalid_request': {
      const status = failure.status !== null && failure.status >= 400 && failure.status < 500 ? failure.status : 400;
      return {
        status,
        kind: status === 404 ? 'not_found' : status === 413 ? 'too_large' : 'invalid_request',
        noRetry: true,
      };
    }
    case 'cancelled':
      return { status: 499, kind: 'api_error', noRetry: true };
    default:
      return { status: 502, kind: 'upstream', noRetry: true };
  }
}
