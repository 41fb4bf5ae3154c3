import { systemClock, systemTimers, type Clock, type Timers } from './clock.js';
import { resolveEndpoint, type EndpointSpec, type HttpProviderOptions } from './config.js';
import { sendOverWire, type ModelProvider, type NeutralMapping } from './contract.js';
import { openWire } from './http.js';
import type { FailureFacts } from './reply.js';
import type { ProviderPackage, ProviderRequest, ProviderResult, SendOptions } from './spec.js';
import { nodeHttpFetch, type WireFetch } from './transport.js';
import {
  type WireCallOptions,
  type WireReader,
  type WireRequest,
  type WireResponse,
  type WireSurface,
  wireQuery,
} from './wire/spec.js';

export interface WireRoute {
  method: 'GET' | 'POST';
  path: string;
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
  /** The full URL of a route's path under the configured base URL. */
  url(baseUrl: string, path: string): string;
  /** The headers of one call: the key, and whatever of the client's headers the surface passes on. */
  headers(apiKey: string | null, request: WireRequest, route: WireRoute): Record<string, string>;
  /** The reply header carrying the upstream's request id. */
  readonly requestIdHeader: string;
  errorFacts(text: string, headerRequestId: string | null): FailureFacts;
  reader(surface: WireSurface): WireReader;
  readonly neutral: NeutralMapping;
}

/** The one implementation of every HTTP provider: an entry, an endpoint, a key, one transport. */
export class HttpProvider implements ModelProvider {
  readonly id: string;
  readonly surfaces: readonly WireSurface[];
  readonly models: readonly string[];
  readonly baseUrl: string;
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
    const endpoint = resolveEndpoint(
      { ...entry.endpoint, providerId: this.id },
      options.config,
      options.env ?? process.env,
    );
    this.baseUrl = endpoint.baseUrl;
    this.#apiKey = endpoint.apiKey;
    // The injected fetch if any (a fetch Response is a reply), else node:http(s) with keep-alive.
    this.#fetch = options.fetch ?? nodeHttpFetch();
    this.#clock = options.clock ?? systemClock;
    this.#timers = options.timers ?? systemTimers;
  }

  send(request: ProviderRequest, options: SendOptions): Promise<ProviderResult> {
    return sendOverWire(this, this.#entry.neutral, request, options, { clock: this.#clock, secrets: this.#secrets() });
  }

  async call(request: WireRequest, options: WireCallOptions): Promise<WireResponse> {
    const entry = this.#entry;
    const route = entry.routes[request.surface];
    if (route === undefined)
      throw new Error(`surface ${JSON.stringify(request.surface)} is not served by provider ${this.id}`);
    return openWire({
      providerId: this.id,
      fetch: this.#fetch,
      clock: this.#clock,
      timers: this.#timers,
      options,
      secrets: this.#secrets(),
      url: `${entry.url(this.baseUrl, route.path)}${wireQuery(request)}`,
      method: route.method,
      headers: entry.headers(this.#apiKey, request, route),
      body: request.body,
      errorFacts: entry.errorFacts,
      requestIdHeader: entry.requestIdHeader,
    });
  }

  reader(surface: WireSurface): WireReader {
    return this.#entry.reader(surface);
  }

  #secrets(): readonly string[] {
    return this.#apiKey === null ? [] : [this.#apiKey];
  }
}

/** A provider package (`HOT/providers/<id>/provider.js`'s default export) for an entry. */
export function defineProvider(entry: ProviderEntry): ProviderPackage {
  return {
    serves: Object.keys(entry.routes) as WireSurface[],
    create: (options) => new HttpProvider(entry, { id: options.id, env: options.env, config: options.config }),
  };
}
