import type { WireSurface } from './wire/spec.js';

/**
 * The neutral whole-reply side of the provider contract (`contract.ts`'s `ModelProvider`, whose `send` is derived
 * from its wire call). A provider makes exactly ONE attempt per `send`: the router owns the single retry loop, so
 * providers never retry and never sleep on `retry-after` themselves.
 *
 * Shapes that end up in ledger records (ProviderResult, Usage) keep snake_case field names; their JSON
 * Schemas are `HOT/schemas/provider-result.schema.json` and `provider-request.schema.json`.
 */

/** A system prompt block; `cache: true` asks providers that support it to place a cache breakpoint after it. */
export interface SystemBlock {
  text: string;
  cache?: boolean;
}

/** Provider-neutral request: one user prompt with an optional system prompt. */
export interface SimpleRequest {
  model: string;
  max_tokens: number;
  prompt: string;
  system?: string | readonly SystemBlock[];
  temperature?: number;
  stop_sequences?: readonly string[];
}

/**
 * A body already rendered in the provider's own wire format (e.g. an Anthropic Messages body with
 * `cache_control` breakpoints from the prompt compiler). Sent as is after a shape check.
 */
export interface RenderedRequest {
  body: Readonly<Record<string, unknown>>;
}

export type ProviderRequest = SimpleRequest | RenderedRequest;

export function isRenderedRequest(request: ProviderRequest): request is RenderedRequest {
  return 'body' in request;
}

export interface SendOptions {
  /** Caller cancellation; an abort is reported as kind `cancelled`, never retried. */
  signal?: AbortSignal;
  /** Deadline for the whole attempt, including reading the body; exceeding it is kind `timeout`. */
  timeoutMs: number;
}

/**
 * Normalised token usage. `input_tokens` counts ALL prompt tokens processed, including the cached
 * buckets, so uncached input = input_tokens - cache_read_tokens - cache_write_tokens.
 * A count the provider did not report is `null` (unknown), never 0. A bucket the wire format does not
 * have at all (cache writes in Chat Completions, where every uncached prompt token is plain input) is 0
 * whenever the prompt count itself is known.
 */
export interface Usage {
  input_tokens: number | null;
  output_tokens: number | null;
  cache_read_tokens: number | null;
  cache_write_tokens: number | null;
  /** The provider's own usage object as received (no secrets can be in it), or null if absent. */
  raw: Readonly<Record<string, unknown>> | null;
}

/** Usage that says nothing: the provider may have billed, nobody knows how much. */
export const UNKNOWN_USAGE: Usage = Object.freeze({
  input_tokens: null,
  output_tokens: null,
  cache_read_tokens: null,
  cache_write_tokens: null,
  raw: null,
});

/** Normalised stop reason; the provider's own value is kept in `raw_stop_reason`. */
export type StopReason = 'stop' | 'length' | 'tool_use' | 'content_filter' | 'other';

export interface ProviderResult {
  provider_id: string;
  /** The model that answered, as reported by the provider (falls back to the requested model). */
  model: string;
  content: string;
  stop_reason: StopReason;
  raw_stop_reason: string | null;
  usage: Usage;
  request_id: string | null;
  latency_ms: number;
}

/** What the router calls: the whole-reply view of a `ModelProvider` (a test double may implement just this). */
export interface Provider {
  readonly id: string;
  send(request: ProviderRequest, options: SendOptions): Promise<ProviderResult>;
}

/** Uncached input tokens, or null when any bucket it depends on is unknown. */
export function uncachedInputTokens(usage: Usage): number | null {
  const { input_tokens: all, cache_read_tokens: read, cache_write_tokens: write } = usage;
  if (all === null || read === null || write === null) return null;
  return Math.max(0, all - read - write);
}

/** What the router hands a provider package when it constructs the provider a route asked for. */
export interface ProviderFactoryOptions {
  /** The id the provider is installed under (its folder, `HOT/providers/<id>/`): the provider must answer to it. */
  id: string;
  env: NodeJS.ProcessEnv;
  /** The mock's default answer (the smoke test's); other providers ignore it. */
  mockResponse?: string;
  /** The provider's section of the effective config (base_url, api_key_file, …); the HTTP providers read it. */
  config?: unknown;
}

/**
 * The contract of a provider package: `HOT/providers/<id>/provider.js` exports one by default, and the router
 * discovers it at open like commands and gates, so a provider is installed, not wired in.
 */
export interface ProviderPackage {
  /**
   * The surfaces the package offers the gateway (its families are their prefixes); absent or empty: none, as for
   * the mock, which answers them in-process for tests but is never picked to serve clients.
   */
  readonly serves?: readonly WireSurface[];
  /**
   * Serve a gateway family only when the operator names the package for it (`gateway.upstreams`): a cloud route that
   * ambient credentials (an AWS profile) would otherwise switch on unasked.
   */
  readonly optIn?: boolean;
  create(options: ProviderFactoryOptions): Provider;
}
