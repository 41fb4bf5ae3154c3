import type { WireSurface } from '#providers/wire/spec.js';

/** Which API family a request speaks: it decides error shapes, the request-id header and the provider. */
export type Family = 'anthropic' | 'openai' | 'gemini';

export interface Endpoint {
  surface: WireSurface;
  family: Family;
  method: 'GET' | 'POST';
  /** A generation: governed end to end (budget, breaker, DISPATCH, EXCHANGE). Others are authenticated pass-through. */
  generation: boolean;
  /** What the path named for the upstream's own path (Gemini's `{model}`). */
  params?: Readonly<Record<string, string>>;
}

const ENDPOINTS: Readonly<Record<string, Endpoint>> = {
  'POST /v1/messages': { surface: 'anthropic.messages', family: 'anthropic', method: 'POST', generation: true },
  'POST /v1/messages/count_tokens': {
    surface: 'anthropic.count_tokens',
    family: 'anthropic',
    method: 'POST',
    generation: false,
  },
  'POST /v1/chat/completions': { surface: 'openai.chat', family: 'openai', method: 'POST', generation: true },
  'POST /v1/responses': { surface: 'openai.responses', family: 'openai', method: 'POST', generation: true },
  'POST /v1/embeddings': { surface: 'openai.embeddings', family: 'openai', method: 'POST', generation: true },
};

/** Gemini's methods on a model, `POST /v1beta/models/{model}:{method}`. */
const GEMINI_METHODS: Readonly<Record<string, Pick<Endpoint, 'surface' | 'generation'>>> = {
  generateContent: { surface: 'gemini.generate', generation: true },
  streamGenerateContent: { surface: 'gemini.stream', generation: true },
  countTokens: { surface: 'gemini.count_tokens', generation: false },
};

/** A model as Gemini's path names it (`gemini-2.5-flash`): its ids are lower-case words, digits, dots and dashes. */
const GEMINI_MODEL_PATH = /^\/v1beta\/models\/([A-Za-z0-9][A-Za-z0-9._-]{0,199}):([A-Za-z]+)$/;

/**
 * The endpoint for a method and path (the query string is ignored: Claude Code calls `/v1/messages?beta=true`).
 * `GET /v1/models` exists in both APIs: a request carrying `anthropic-version` is Anthropic's. Gemini names the
 * model in the path: it is read here, and any other spelling of it (escapes, a second segment) is no endpoint.
 */
export function endpointFor(method: string, path: string, anthropicVersion: boolean): Endpoint | null {
  if (method === 'GET' && path === '/v1/models') {
    return anthropicVersion
      ? { surface: 'anthropic.models', family: 'anthropic', method: 'GET', generation: false }
      : { surface: 'openai.models', family: 'openai', method: 'GET', generation: false };
  }
  if (path.startsWith('/v1beta/')) {
    if (method === 'GET' && path === '/v1beta/models')
      return { surface: 'gemini.models', family: 'gemini', method: 'GET', generation: false };
    const match = method === 'POST' ? GEMINI_MODEL_PATH.exec(path) : null;
    const name = match?.[2] ?? '';
    const named = Object.hasOwn(GEMINI_METHODS, name) ? GEMINI_METHODS[name] : undefined;
    if (match === null || named === undefined) return null;
    return { ...named, family: 'gemini', method: 'POST', params: { model: match[1] ?? '' } };
  }
  return ENDPOINTS[`${method} ${path}`] ?? null;
}

/**
 * Query parameters a surface passes on, each with the values it takes; every other parameter is ignored (Claude
 * Code's `?beta=true`). A models list pages with them: were they dropped, an SDK walking the pages (`after_id` set
 * to the page's `last_id`) would be handed the first page for ever.
 */
const QUERY_PARAMS: Partial<Record<WireSurface, Readonly<Record<string, RegExp>>>> = {
  'anthropic.models': {
    limit: /^[1-9][0-9]{0,3}$/,
    after_id: /^[\x21-\x7e]{1,200}$/,
    before_id: /^[\x21-\x7e]{1,200}$/,
  },
  // `key` is never among them: the client's credential stays with the gateway.
  'gemini.models': {
    pageSize: /^[1-9][0-9]{0,3}$/,
    pageToken: /^[\x21-\x7e]{1,500}$/,
  },
};

/** The query an endpoint passes on, or a problem naming the parameter whose value it refuses. */
export function passedQuery(surface: WireSurface, search: string): Record<string, string> | string {
  const allowed = QUERY_PARAMS[surface];
  const out: Record<string, string> = {};
  if (allowed === undefined) return out;
  for (const [name, value] of new URLSearchParams(search)) {
    const shape = allowed[name];
    if (shape === undefined) continue;
    if (!shape.test(value) || name in out)
      return `query parameter ${name}: ${name in out ? 'given twice' : `${JSON.stringify(value).slice(0, 60)} is not accepted`}`;
    out[name] = value;
  }
  return out;
}

/** The family whose error shape a request gets when no endpoint matched. */
export function familyOf(path: string, anthropicVersion: boolean): Family {
  if (path.startsWith('/v1beta/')) return 'gemini';
  return anthropicVersion || path.startsWith('/v1/messages') ? 'anthropic' : 'openai';
}

export function providerFor(family: Family): string {
  return family;
}

/** The header that carries a request id back to the client. */
export function requestIdHeader(family: Family): string {
  return family === 'anthropic' ? 'request-id' : 'x-request-id';
}

export type ErrorKind =
  | 'invalid_request'
  | 'authentication'
  | 'permission'
  | 'not_found'
  | 'too_large'
  | 'rate_limit'
  | 'budget'
  | 'overloaded'
  | 'unavailable'
  | 'api_error'
  | 'upstream';

const ANTHROPIC_TYPES: Record<ErrorKind, string> = {
  invalid_request: 'invalid_request_error',
  authentication: 'authentication_error',
  permission: 'permission_error',
  not_found: 'not_found_error',
  too_large: 'request_too_large',
  rate_limit: 'rate_limit_error',
  budget: 'rate_limit_error',
  overloaded: 'overloaded_error',
  unavailable: 'overloaded_error',
  api_error: 'api_error',
  upstream: 'api_error',
};

const OPENAI_TYPES: Record<ErrorKind, [type: string, code: string | null]> = {
  invalid_request: ['invalid_request_error', null],
  authentication: ['invalid_request_error', 'invalid_api_key'],
  permission: ['invalid_request_error', 'permission_denied'],
  not_found: ['invalid_request_error', 'unknown_url'],
  too_large: ['invalid_request_error', 'request_too_large'],
  rate_limit: ['requests', 'rate_limit_exceeded'],
  budget: ['insufficient_quota', 'budget_exhausted'],
  overloaded: ['server_error', 'overloaded'],
  unavailable: ['server_error', 'circuit_open'],
  api_error: ['server_error', null],
  upstream: ['server_error', 'upstream_error'],
};

/** Google's canonical status for each kind, and the HTTP code it goes with when the caller names none. */
const GOOGLE_STATUSES: Record<ErrorKind, [status: string, code: number]> = {
  invalid_request: ['INVALID_ARGUMENT', 400],
  authentication: ['UNAUTHENTICATED', 401],
  permission: ['PERMISSION_DENIED', 403],
  not_found: ['NOT_FOUND', 404],
  too_large: ['INVALID_ARGUMENT', 413],
  rate_limit: ['RESOURCE_EXHAUSTED', 429],
  budget: ['RESOURCE_EXHAUSTED', 429],
  overloaded: ['UNAVAILABLE', 503],
  unavailable: ['UNAVAILABLE', 503],
  api_error: ['INTERNAL', 500],
  upstream: ['INTERNAL', 502],
};

/** The error body in the family's own shape (Google's carries the HTTP status it is sent with). */
export function errorBody(
  family: Family,
  kind: ErrorKind,
  message: string,
  requestId: string,
  status?: number,
): unknown {
  if (family === 'gemini') {
    const [name, code] = GOOGLE_STATUSES[kind];
    return { error: { code: status ?? code, message, status: name } };
  }
  if (family === 'anthropic')
    return { type: 'error', error: { type: ANTHROPIC_TYPES[kind], message }, request_id: requestId };
  const [type, code] = OPENAI_TYPES[kind];
  return { error: { message, type, param: null, code } };
}

/** An SSE frame announcing an error mid-stream, in the family's shape (Anthropic's `event: error`). */
export function errorFrame(family: Family, surface: WireSurface, message: string, requestId: string): string {
  // Google's SDK reads a chunk holding `error` (its code 400-599) as a failure of the stream.
  if (family === 'gemini') return `data: ${JSON.stringify(errorBody('gemini', 'upstream', message, requestId))}\n\n`;
  if (family === 'anthropic')
    return `event: error\ndata: ${JSON.stringify(errorBody('anthropic', 'upstream', message, requestId))}\n\n`;
  if (surface === 'openai.responses') {
    return `event: error\ndata: ${JSON.stringify({ type: 'error', code: 'upstream_error', message, param: null, sequence_number: 0 })}\n\n`;
  }
  return `data: ${JSON.stringify(errorBody('openai', 'upstream', message, requestId))}\n\n`;
}
