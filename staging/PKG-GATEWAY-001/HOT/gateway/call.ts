import type { IncomingMessage, ServerResponse } from 'node:http';
import type { WireProvider } from '#providers/wire/spec.js';
import type { Translator } from '#providers/translate/index.js';
import type { Router } from '#router/router.js';
import type { RoutePlan } from '#router/routing/resolver.js';
import type { Identity } from './identity.js';
import type { UpstreamCounts } from './input-counts.js';
import type { RequestLog } from './log.js';
import type { RoutedLegs } from './routed-legs.js';
import type { GatewayRouting } from './routing.js';
import type { Endpoint, ErrorKind, Family } from './surfaces.js';
import type { Targets } from './targets.js';

/** What the server hands a call: the client family's provider (null: none configured) and the model → target choice. */
export interface IncomingCall extends Omit<CallContext, 'provider' | 'translator'> {
  provider: WireProvider | null;
  targets: Targets;
}

export interface CallContext {
  router: Router;
  /** The provider called: the client family's, the one the model's family names (targets.ts), or a routed call's
   * deployment that answered, once one has. */
  provider: WireProvider;
  /** Set when the provider speaks another format than the client: the request and the reply are translated. */
  translator: Translator | null;
  /** The upstream path's `{name}` values when they are not the client's (a translated call to Gemini: its model). */
  upstreamParams?: Readonly<Record<string, string>>;
  routing: GatewayRouting | null;
  /** A routed call's way through its alias's deployments (set before admission); null: not routed. */
  plan?: RoutePlan<WireProvider> | null;
  /** A routed generation's legs: how each deployment is spoken to and the body it is sent (routed-legs.ts). */
  legs?: RoutedLegs | null;
  /** `deployment/model` of the deployment that answered a routed call (the x-cplane-served-by header). */
  servedBy?: string | null;
  endpoint: Endpoint;
  identity: Identity;
  body: unknown;
  bytes: Buffer;
  /** The query string as the client sent it, without its '?'. */
  search: string;
  requestId: string;
  req: IncomingMessage;
  res: ServerResponse;
  /** Fires when the client goes away (or the drain gives up on the call). */
  signal: AbortSignal;
  log: RequestLog;
  upstreamTimeoutMs: number;
  /** Input counts by the upstream's count endpoint for reservations (gateway.count_input_tokens); absent: none. */
  inputCounts?: UpstreamCounts | null;
  /** The call's deadline (GatewayOptions.callDeadlineMs), and the performance.now() it falls at; null: none. */
  deadline: { ms: number; at: number } | null;
  refuse(code: string, message: string, retryAfterMs?: number | null): void;
  fail(family: Family, status: number, kind: ErrorKind, message: string, extra?: Record<string, string>): void;
}

/**
 * A call's context: `incoming` with the provider and translator the call is made with. `translator` is laid out
 * before the copied fields: an object spread and then given a field of its own gets a map of its own from V8 each
 * time, and every later read of the context (dozens per call) would miss its inline cache.
 */
export function callContext(
  incoming: IncomingCall,
  provider: WireProvider,
  translator: Translator | null,
): CallContext {
  return { translator, ...incoming, provider };
}
