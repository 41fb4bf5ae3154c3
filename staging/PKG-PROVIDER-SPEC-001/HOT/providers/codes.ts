import { defineCodes } from '#kernel/catalogue/define.js';

/** The codes PKG-PROVIDER-SPEC-001 raises (docs/codes.md: Error codes; adding a code is one line here, then `npm run docs`). */
export const CODES = defineCodes({
  ERR_PROVIDER_CONFIG: {
    kind: 'error',
    meaning:
      'a provider config has unknown or non-string fields, a bad base URL, or a missing or malformed key (the key is never shown)',
    hint: 'a provider config has only base_url and api_key (strings)',
  },
  ERR_PROVIDER_BASE_URL_CREDENTIALS: {
    kind: 'error',
    meaning:
      'a provider base URL holds user info (`https://user:pass@host`); credentials belong in `api_key`, never in a URL that errors would name',
  },
  ERR_PROVIDER_RATE_LIMITED: {
    kind: 'error',
    meaning: 'HTTP 429 that is not a spend cap (retryable; `retry_after_ms` from `retry-after-ms`/`retry-after`)',
  },
  ERR_PROVIDER_OVERLOADED: { kind: 'error', meaning: 'HTTP 529/503 or an Anthropic `overloaded_error` (retryable)' },
  ERR_PROVIDER_SERVER_ERROR: { kind: 'error', meaning: 'another 5xx, or 409 (retryable)' },
  ERR_PROVIDER_TIMEOUT: {
    kind: 'error',
    meaning: 'no full reply within the timeout, or HTTP 408 (retryable, unless the body of a 2xx was being read)',
  },
  ERR_PROVIDER_NETWORK: {
    kind: 'error',
    meaning:
      'connection refused or reset, DNS failure, a refused redirect (retryable, unless cut off after a 2xx status)',
  },
  ERR_PROVIDER_SPEND_LIMIT: {
    kind: 'error',
    meaning:
      'a spend cap or quota (`enforced_spend_limit_reached`, `billing_error`, `insufficient_quota`); never retried',
  },
  ERR_PROVIDER_INVALID_REQUEST: {
    kind: 'error',
    meaning: 'another 4xx, or a request refused before sending; never retried',
  },
  ERR_PROVIDER_AUTH: { kind: 'error', meaning: 'HTTP 401/403; never retried' },
  ERR_PROVIDER_MALFORMED_RESPONSE: {
    kind: 'error',
    meaning: 'a 2xx body that is not the wire format, or over 32 MiB; never retried',
  },
  ERR_PROVIDER_CANCELLED: { kind: 'error', meaning: "the caller's AbortSignal fired; never retried" },
  TRANSLATION_UNSUPPORTED: {
    kind: 'refusal',
    meaning:
      "a request's model is served by another API family and a field of the request has no exact equivalent there (the message names the field); nothing was sent upstream: HTTP 400",
    hint: 'drop or change the named field, or ask for a model of the API family the client speaks (docs/translation.md lists every field)',
  },
});

type Codes = typeof CODES;
declare global {
  interface CplaneCodes extends Codes {}
}
