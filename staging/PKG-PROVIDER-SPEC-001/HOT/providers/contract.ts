import type { Clock } from './clock.js';
import { readText } from './http.js';
import type { JsonObject } from './json.js';
import { malformed, successResult, type ParsedReply } from './reply.js';
import { parseProviderRequest } from './request.js';
import {
  isRenderedRequest,
  type Provider,
  type ProviderRequest,
  type ProviderResult,
  type SendOptions,
  type SimpleRequest,
  type StopReason,
} from './spec.js';
import type { WireProvider, WireRequest, WireSurface } from './wire/spec.js';

/**
 * The one provider contract. The wire call (`call` + `reader`: one attempt, a whole or streamed reply, its usage
 * typed by the reader) is what a provider is; `send`, the neutral whole reply `cplane route` asks for, is the same
 * call made with the provider's `NeutralMapping` (`sendOverWire`), so the two can never disagree. The HTTP
 * providers are entries built by `defineProvider` (`entry.ts`); the mock answers the same surfaces in-process.
 */
export interface ModelProvider extends Provider, WireProvider {}

/** How a provider answers a neutral request on one of its surfaces. */
export interface NeutralMapping {
  /** The surface a neutral request is sent on (e.g. `anthropic.messages`). */
  readonly surface: WireSurface;
  /** A pre-rendered body's problem, or null: checked before anything is sent. */
  check(body: JsonObject): string | null;
  /** A simple request as the surface's body. */
  render(request: SimpleRequest): Record<string, unknown>;
  /**
   * For an API that names the model in its URL (Gemini): the body's fields that travel as the route's path
   * parameters, moved out of the body sent. Absent: the body is sent whole.
   */
  split?(body: Readonly<Record<string, unknown>>): { body: Record<string, unknown>; params: Record<string, string> };
  /**
   * The whole reply's body, strictly: a body that is not the surface's format is a problem (malformed_response),
   * where the surface's reader, which only reports what a pass-through saw, would let it by.
   */
  parse(text: string): ParsedReply | string;
  stopReason(raw: string | null): StopReason;
}

/** What the derived send needs from the provider beside its wire call: its clock and the strings it must scrub. */
export interface SendContext {
  clock: Clock;
  /** The provider's key(s): scrubbed from every field of the result. */
  secrets: readonly string[];
}

/**
 * The neutral send over the wire call: validate, render, call with the whole reply covered by `timeoutMs`, read
 * the body, parse it. One attempt, like the call.
 */
export async function sendOverWire(
  provider: WireProvider,
  mapping: NeutralMapping,
  request: ProviderRequest,
  options: SendOptions,
  context: SendContext,
): Promise<ProviderResult> {
  const { wire, body } = neutralWire(provider, mapping, request);
  const started = context.clock.now();
  const response = await provider.call(wire, { ...options, whole: true });
  const text = await readText(response.body, Number.POSITIVE_INFINITY);
  const reply = {
    status: response.status,
    text,
    latencyMs: Math.max(0, context.clock.now() - started),
  };
  const parsed = mapping.parse(text);
  if (typeof parsed === 'string') throw malformed(provider.id, reply, parsed, response.requestId, context.secrets);
  const requestId = response.requestId ?? parsed.requestId ?? null;
  return successResult(provider.id, reply, parsed, body.model, requestId, mapping.stopReason, context.secrets);
}

/**
 * The wire request a neutral request is sent as (checked, rendered, split), and the body before the split (its
 * `model` names what was asked for). A problem with the request throws ProviderError `invalid_request`.
 */
export function neutralWire(
  provider: { readonly id: string },
  mapping: NeutralMapping,
  request: ProviderRequest,
): { wire: WireRequest; body: Record<string, unknown> } {
  const checked = parseProviderRequest(request, provider.id, mapping.check);
  const body = isRenderedRequest(checked) ? checked.body : mapping.render(checked);
  const sent = mapping.split === undefined ? { body, params: {} } : mapping.split(body);
  return { wire: { surface: mapping.surface, body: sent.body, headers: {}, params: sent.params }, body };
}

/**
 * The wire request `provider.send` would make for `request`, for a reservation to count what the upstream reads;
 * null when the provider does not say (the mock) or the request would be refused before it is sent.
 */
export function sentWireRequest(provider: Provider, request: ProviderRequest): WireRequest | null {
  const neutral = (provider as { neutralRequest?: (r: ProviderRequest) => WireRequest }).neutralRequest;
  if (typeof neutral !== 'function') return null;
  try {
    return neutral.call(provider, request);
  } catch {
    return null;
  }
}

/**
 * The one way the router asks any provider for a whole reply (one attempt): the seam where fallbacks and
 * instrumentation attach.
 */
export function sendOnce(provider: Provider, request: ProviderRequest, options: SendOptions): Promise<ProviderResult> {
  return provider.send(request, options);
}
