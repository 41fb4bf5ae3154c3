import { show } from '#kernel/errors.js';
import { systemClock, systemTimers, type Clock, type Timers } from './clock.js';
import { resolveEndpoint, type EndpointSpec, type HttpProviderOptions } from './config.js';
import { neutralWire, sendOverWire, type ModelProvider, type NeutralMapping } from './contract.js';
import { isProviderError, ProviderError } from './errors.js';
import { openWire } from './http.js';
import type { FailureFacts } from './reply.js';
import { asObject } from './json.js';
import type { ProviderPackage, ProviderRequest, ProviderResult, SendOptions } from './spec.js';
import { nodeHttpFetch, type ReplyHeaders, type WireFetch } from './transport.js';
import { LISTING_SURFACES, localListing } from './wire/listing.js';
import {
  type WireCallOptions,
  type WireReader,
  type WireRequest,
  type WireResponse,
  type WireSurface,
  wirePath,
  wireQuery,
} from './wire/spec.js';

export interface WireRoute {
  method: 'GET' | 'POST';
  /** The path under the base URL; a `{name}` segment is filled from the request's `params` (`wirePath`). */
  path: string;
  /** Query parameters the route always carries (Gemini's `alt=sse` on its streaming route). */
  query?: Readonly<Record<string, string>>;
}

/** One call as it goes on the wire: what a request signature covers. */
export interface OutgoingCall {
  url: string;
  method: 'GET' | 'POST';
  headers: Readonly<Record<string, string>>;
  /** The body's exact text as sent; null for a GET. */
  body: string | null;
}

/**
 * Credentials that are not one static key (a request signature, an OAuth access token): the call's headers are
 * completed just before it is sent, and what they hold is scrubbed like a key.
 */
export interface CallAuth {
  /** The headers to add to this call (they may depend on its URL, body and the time). */
  sign(call: OutgoingCall): Promise<Record<string, string>>;
  /** The upstream refused the credentials (HTTP 401): drop any cached ones; true when one fresh try is worth it. */
  refused?(): boolean;
  /** The strings that must never show in a result or error (tokens, secret keys). */
  secrets(): readonly string[];
}

/**
 * An HTTP provider, declared: where it lives, how it authenticates, which surfaces it serves at which paths, how
 * its errors and replies read, and how a neutral request maps onto it. `defineProvider` builds the provider.
 */
export interface ProviderEntry {
  /** The id it answers to unless installed under another folder name. */
  readonly id: string;
  /** Base URL and key: config first, then these environment variables, then the default base URL. */
  readonly endpoint: Omit<EndpointSpec, 'providerId'>;
  readonly routes: Readonly<Partial<Record<WireSurface, WireRoute>>>;
  /**
   * The models this provider serves, as patterns (`*` any characters, `[0-9]` a class): a gateway request for a
   * model that matches is sent here whichever API family the client speaks, translated if need be.
   */
  readonly models?: readonly string[];
  /**
   * The models (patterns, as `models`) the upstream serves only on its Responses API (`openai.responses`): a
   * generation for one is sent there, translated from whatever the client speaks.
   */
  readonly responsesOnly?: readonly string[];
  /**
   * The model names the provider's configuration gives it (Bedrock's and Vertex's model maps, Azure's deployments):
   * the answer to its family's models listing when it has no route for one, as those upstreams list no such names.
   */
  listModels?(): readonly string[];
  /** The full URL of a route's path under the configured base URL (it may name the request's model). */
  url(baseUrl: string, path: string, request: WireRequest): string;
  /** The body the upstream wants when it differs from the surface's (absent: the client's body as is). */
  body?(request: WireRequest): Readonly<Record<string, unknown>>;
  readonly auth?: CallAuth;
  /** The headers of one call: the key, and whatever of the client's headers the surface passes on. */
  headers(apiKey: string | null, request: WireRequest, route: WireRoute): Record<string, string>;
  /** The reply header carrying the upstream's request id; null for an API that sends none (Gemini). */
  readonly requestIdHeader: string | null;
  /** What an error reply says; `headers` for upstreams that name the error there (AWS's x-amzn-errortype). */
  errorFacts(text: string, headerRequestId: string | null, headers: ReplyHeaders): FailureFacts;
  reader(surface: WireSurface): WireReader;
  /** The reply as the surface's reader and clients expect it, when the upstream frames it otherwise. */
  reply?(response: WireResponse, request: WireRequest): WireResponse;
  readonly neutral: NeutralMapping;
}

/** The one implementation of every HTTP provider: an entry, an endpoint, a key, one transport. */
export class HttpProvider implements ModelProvider {
  readonly id: string;
  readonly surfaces: readonly WireSurface[];
  readonly models: readonly string[];
  readonly responsesOnly: readonly string[];
  readonly baseUrl: string;
  /** Whether config or the environment named its endpoint or key (false: the entry's defaults alone, no key). */
  readonly configured: boolean;
  // Private fields: the key is not an own enumerable property, so JSON.stringify/inspect never show it.
  readonly #entry: ProviderEntry;
  readonly #apiKey: string | null;
  readonly #fetch: WireFetch;
  readonly #clock: Clock;
  readonly #timers: Timers;

  constructor(entry: ProviderEntry, options: HttpProviderOptions = {}) {
    this.#entry = entry;
    this.id = options.id ?? entry.id;
    this.surfaces = Object.keys(entry.routes) as WireSurface[];
    this.models = entry.models ?? [];
    this.responsesOnly = entry.responsesOnly ?? [];
    const endpoint = resolveEndpoint(
      { ...entry.endpoint, providerId: this.id },
      options.config,
      options.env ?? process.env,
    );
    this.baseUrl = endpoint.baseUrl;
    this.#apiKey = endpoint.apiKey;
    this.configured = endpoint.apiKey !== null || endpoint.baseUrl !== entry.endpoint.defaultBaseUrl;
    // The injected fetch if any (a fetch Response is a reply), else node:http(s) with keep-alive.
    this.#fetch = options.fetch ?? nodeHttpFetch();
    this.#clock = options.clock ?? systemClock;
    this.#timers = options.timers ?? systemTimers;
  }

  /** The wire request `send` makes for a neutral request (contract.ts sentWireRequest). */
  neutralRequest(request: ProviderRequest): WireRequest {
    return neutralWire(this, this.#entry.neutral, request).wire;
  }

  send(request: ProviderRequest, options: SendOptions): Promise<ProviderResult> {
    return sendOverWire(this, this.#entry.neutral, request, options, { clock: this.#clock, secrets: this.#secrets() });
  }

  async call(request: WireRequest, options: WireCallOptions): Promise<WireResponse> {
    const entry = this.#entry;
    const route = entry.routes[request.surface];
    if (route === undefined && entry.listModels !== undefined && LISTING_SURFACES.has(request.surface))
      return localListing(request.surface, this.id, entry.listModels());
    if (route === undefined)
      throw new Error(`surface ${JSON.stringify(request.surface)} is not served by provider ${this.id}`);
    const path = wirePath(route.path, request.params);
    if ('missing' in path)
      throw new ProviderError({
        kind: 'invalid_request',
        providerId: this.id,
        message: `the ${show(request.surface)} call to provider ${show(this.id)} names no ${path.missing} for its URL`,
      });
    const queried = route.query === undefined ? request : { ...request, query: { ...request.query, ...route.query } };
    const url = `${entry.url(this.baseUrl, path.path, request)}${wireQuery(queried)}`;
    const body = route.method === 'POST' ? JSON.stringify(entry.body?.(request) ?? request.body) : null;
    const headers = entry.headers(this.#apiKey, request, route);
    const open = async (): Promise<WireResponse> =>
      openWire({
        providerId: this.id,
        fetch: this.#fetch,
        clock: this.#clock,
        timers: this.#timers,
        options,
        secrets: this.#secrets(),
        url,
        method: route.method,
        headers:
          entry.auth === undefined
            ? headers
            : { ...headers, ...(await entry.auth.sign({ url, method: route.method, headers, body })) },
        body: request.body,
        bodyText: body,
        errorFacts: entry.errorFacts,
        requestIdHeader: entry.requestIdHeader,
      });
    let response: WireResponse;
    try {
      response = await open();
    } catch (error) {
      // Cached credentials the upstream no longer takes (an expired token) are renewed once, then the refusal stands.
      if (!(isProviderError(error) && error.status === 401 && entry.auth?.refused?.() === true)) throw error;
      response = await open();
    }
    return entry.reply === undefined ? response : entry.reply(response, request);
  }

  reader(surface: WireSurface): WireReader {
    return this.#entry.reader(surface);
  }

  #secrets(): readonly string[] {
    const signed = this.#entry.auth?.secrets() ?? [];
    return this.#apiKey === null ? signed : [this.#apiKey, ...signed];
  }
}

/** A provider package (`HOT/providers/<id>/provider.js`'s default export) for an entry. */
export function defineProvider(entry: ProviderEntry): ProviderPackage {
  return {
    serves: Object.keys(entry.routes) as WireSurface[],
    create: (options) => new HttpProvider(entry, { id: options.id, env: options.env, config: options.config }),
  };
}

/** What builds the entry of a provider whose wiring depends on its config's `options` (a preset, a region). */
export interface ConfiguredEntryInput {
  id: string;
  env: Readonly<Record<string, string | undefined>>;
  /** The provider config's `options` object (the package parses and bounds it), or undefined. */
  options: unknown;
  /** The rest of the config (`base_url`, `api_key`), as `resolveEndpoint` will read it. */
  endpoint: unknown;
  /** The clock and fetch the provider was given (tests and benches inject them), else the real ones. */
  clock: Clock;
  fetch: WireFetch;
}

/**
 * The entry and provider options of a configured provider created with `options`: its config split into `options`
 * (handed to `build`) and the endpoint part, which `resolveEndpoint` checks as for every entry.
 */
export function configuredEntry(
  options: HttpProviderOptions,
  defaultId: string,
  build: (input: ConfiguredEntryInput) => ProviderEntry,
): [ProviderEntry, HttpProviderOptions] {
  const id = options.id ?? defaultId;
  const { options: own, endpoint } = splitOptions(options.config);
  const env = options.env ?? process.env;
  const clock = options.clock ?? systemClock;
  const entry = build({ id, env, options: own, endpoint, clock, fetch: options.fetch ?? nodeHttpFetch() });
  return [entry, { ...options, id, env, config: endpoint }];
}

/**
 * A provider package whose entry is built from its config: `{base_url?, api_key?, options?}`, the endpoint part
 * resolved as for every entry, `options` handed to `entry`.
 */
export function defineConfiguredProvider(spec: {
  serves: readonly WireSurface[];
  optIn?: boolean;
  entry(input: ConfiguredEntryInput): ProviderEntry;
}): ProviderPackage {
  return {
    serves: spec.serves,
    ...(spec.optIn === undefined ? {} : { optIn: spec.optIn }),
    create: (factory) =>
      new HttpProvider(
        ...configuredEntry({ id: factory.id, env: factory.env, config: factory.config }, factory.id, spec.entry),
      ),
  };
}

/** The config's `options` apart from its endpoint fields (which `resolveEndpoint` checks). */
export function splitOptions(config: unknown): { options: unknown; endpoint: unknown } {
  const obj = asObject(config);
  if (obj === null || !('options' in obj)) return { options: undefined, endpoint: config };
  const { options, ...endpoint } = obj;
  return { options, endpoint };
}
