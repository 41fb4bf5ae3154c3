import type { SendOptions, StopReason, Usage } from '../spec.js';

/**
 * The wire call, the primitive of every provider (`contract.ts`): a request body in the surface's own JSON, the
 * reply's bytes handed back as they arrive, and a reader per surface that assembles what the reply said (whole or
 * streamed, with typed usage). The gateway (PKG-GATEWAY-001) forwards client bodies through it; the neutral `send`
 * is derived from it. One attempt per call: the router's one retry loop decides on retries.
 */
export const WIRE_SURFACES = [
  'anthropic.messages',
  'anthropic.count_tokens',
  'anthropic.models',
  'openai.chat',
  'openai.responses',
  'openai.models',
  'openai.embeddings',
  'gemini.generate',
  'gemini.stream',
  'gemini.count_tokens',
  'gemini.models',
] as const;
export type WireSurface = (typeof WIRE_SURFACES)[number];

export interface WireRequest {
  surface: WireSurface;
  /** The client's JSON body (already parsed and bounded by the caller); null for a GET. */
  body: Readonly<Record<string, unknown>> | null;
  /** Headers passed through to the upstream (e.g. anthropic-version, anthropic-beta); never a credential. */
  headers: Readonly<Record<string, string>>;
  /** Query parameters passed through (a models list's paging), already checked by the caller. */
  query?: Readonly<Record<string, string>>;
  /**
   * Values for the `{name}` segments of the route's path (the model of an API that names it in the URL, such as
   * Gemini's `/v1beta/models/{model}:generateContent`), already checked by the caller; each is percent-encoded.
   */
  params?: Readonly<Record<string, string>>;
}

/** The query string of a wire request: '' when it has none. */
export function wireQuery(request: WireRequest): string {
  const query = request.query;
  // A record without own keys makes no parameters: most calls, spared a URLSearchParams (~10K instructions).
  if (query === undefined || Reflect.ownKeys(query).length === 0) return '';
  const search = new URLSearchParams(query).toString();
  return search === '' ? '' : `?${search}`;
}

/**
 * A route's path with its `{name}` segments filled from `params`, each value percent-encoded (a `/` or `..` in a
 * value stays inside its segment), or the name of the first segment left without one.
 */
export function wirePath(
  path: string,
  params: Readonly<Record<string, string>> = {},
): { path: string } | { missing: string } {
  // Most routes name nothing to fill: no regular expression is run for them.
  if (!path.includes('{')) return { path };
  let missing: string | null = null;
  const filled = path.replace(/\{([a-z_]+)\}/gi, (_, name: string) => {
    const value = Object.hasOwn(params, name) ? params[name] : undefined;
    if (value === undefined || value === '') missing ??= name;
    return encodeURIComponent(value ?? '');
  });
  return missing === null ? { path: filled } : { missing };
}

export interface WireCallOptions extends SendOptions {
  /** Longest wait for the next chunk once the reply's headers arrived; default `timeoutMs`. */
  idleTimeoutMs?: number;
  /**
   * Longest the call may take in all, its body included; absent: none. An upstream that sends a byte just inside
   * the idle timeout, forever, would otherwise hold the call, its reservation and its connection without end.
   */
  deadlineMs?: number;
  /**
   * The caller reads the reply whole (a neutral send): `timeoutMs` then covers the body too, a redirect is a
   * network failure as with fetch, and a content-encoding the upstream applied is undone.
   */
  whole?: boolean;
}

/**
 * A 2xx reply whose body is still arriving. Reading past a failure (reset, stall, oversize) throws a
 * ProviderError with `after_success`: the upstream may have billed the call.
 */
export interface WireResponse {
  status: number;
  /** The upstream's content type (e.g. `text/event-stream`). */
  contentType: string;
  requestId: string | null;
  body: AsyncIterable<Uint8Array>;
  /** Abort the upstream call (the client went away). */
  cancel(): void;
}

/** What a surface's reply said, assembled from its JSON body or its SSE events (bounded, secret-free). */
export interface WireResult {
  model: string | null;
  /** Text and tool calls in the surface's order, as content blocks (`{type:"text",text}`, `{type:"tool_use",…}`). */
  blocks: Record<string, unknown>[];
  stop_reason: StopReason;
  raw_stop_reason: string | null;
  usage: Usage;
  /** True once the final usage was seen (the stream's last usage event, or a whole body). */
  usage_final: boolean;
  /** The surface's terminal event arrived (`message_stop`, `[DONE]`, `response.completed`). */
  complete: boolean;
  /** An error event inside a 2xx stream (`event: error`, `response.failed`), as `type: message`. */
  stream_error: string | null;
  /** The upstream's id for the reply from its body, for an API whose headers carry none (Gemini's `responseId`). */
  response_id?: string | null;
}

/** Reads one reply of one surface: the whole JSON body, or its SSE events one by one. */
export interface WireReader {
  /** A non-streaming body; returns a problem when it is not the surface's format. */
  body(value: unknown): string | null;
  /** One SSE event (`event:` name or null, the joined `data:` lines). */
  event(name: string | null, data: string): void;
  result(): WireResult;
}

export interface WireProvider {
  readonly id: string;
  readonly surfaces: readonly WireSurface[];
  /** Model patterns this provider serves (ProviderEntry.models); absent: none declared. */
  readonly models?: readonly string[];
  /** Patterns of the models it serves only on `openai.responses` (ProviderEntry.responsesOnly); absent: none. */
  readonly responsesOnly?: readonly string[];
  call(request: WireRequest, options: WireCallOptions): Promise<WireResponse>;
  reader(surface: WireSurface): WireReader;
}

export function isWireProvider(value: unknown): value is WireProvider {
  const v = value as Partial<WireProvider> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.call === 'function' &&
    typeof v.reader === 'function' &&
    Array.isArray(v.surfaces)
  );
}
