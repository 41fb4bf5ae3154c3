import { systemClock, systemTimers, type Clock, type FetchLike, type Timers } from '#providers/clock.js';
import { resolveEndpoint, type HttpProviderOptions } from '#providers/config.js';
import { postJson } from '#providers/http.js';
import { failureFromReply, malformed, successResult } from '#providers/reply.js';
import { parseProviderRequest } from '#providers/request.js';
import {
  isRenderedRequest,
  type Provider,
  type ProviderRequest,
  type ProviderResult,
  type SendOptions,
  type ProviderPackage,
} from '#providers/spec.js';
import { openWire } from '#providers/wire/http.js';
import { nodeHttpFetch, type WireFetch } from '#providers/wire/transport.js';
import {
  type WireCallOptions,
  type WireProvider,
  type WireReader,
  type WireRequest,
  type WireResponse,
  type WireSurface,
  wireQuery,
} from '#providers/wire/spec.js';
import { checkMessagesBody, messagesBody } from './body.js';
import { ANTHROPIC_WIRE_PATHS, anthropicReader } from './wire.js';
import { errorFacts, normaliseStopReason, parseMessage } from './reply.js';

export const ANTHROPIC_VERSION = '2023-06-01';
export const ANTHROPIC_DEFAULT_BASE_URL = 'https://api.anthropic.com';

export type AnthropicProviderOptions = HttpProviderOptions;

/** The Anthropic Messages API over fetch: one POST {base}/v1/messages per send, no retries. */
export class AnthropicProvider implements Provider, WireProvider {
  readonly surfaces = Object.keys(ANTHROPIC_WIRE_PATHS) as WireSurface[];
  readonly id: string;
  readonly baseUrl: string;
  // A private field: the key is not an own enumerable property, so JSON.stringify/inspect never show it.
  readonly #apiKey: string;
  readonly #fetch: FetchLike;
  /** The pass-through path's transport: the injected fetch if any, else node:http(s) with keep-alive. */
  readonly #wireFetch: WireFetch;
  readonly #clock: Clock;
  readonly #timers: Timers;

  constructor(options: AnthropicProviderOptions = {}) {
    this.id = options.id ?? 'anthropic';
    const endpoint = resolveEndpoint(
      {
        providerId: this.id,
        baseUrlVar: 'ANTHROPIC_BASE_URL',
        apiKeyVar: 'ANTHROPIC_API_KEY',
        defaultBaseUrl: ANTHROPIC_DEFAULT_BASE_URL,
        keyRequired: true,
      },
      options.config,
      options.env ?? process.env,
    );
    this.baseUrl = endpoint.baseUrl;
    this.#apiKey = endpoint.apiKey ?? '';
    this.#fetch = options.fetch ?? ((input, init) => fetch(input, init));
    this.#wireFetch = options.fetch ?? nodeHttpFetch();
    this.#clock = options.clock ?? systemClock;
    this.#timers = options.timers ?? systemTimers;
  }

  async send(request: ProviderRequest, options: SendOptions): Promise<ProviderResult> {
    const checked = parseProviderRequest(request, this.id, checkMessagesBody);
    const body = isRenderedRequest(checked) ? checked.body : messagesBody(checked);
    const secrets = [this.#apiKey];
    const reply = await postJson({
      providerId: this.id,
      fetch: this.#fetch,
      clock: this.#clock,
      timers: this.#timers,
      options,
      secrets,
      body,
      url: `${this.baseUrl}/v1/messages`,
      headers: {
        'content-type': 'application/json',
        'x-api-key': this.#apiKey,
        'anthropic-version': ANTHROPIC_VERSION,
      },
    });
    const headerRequestId = reply.headers.get('request-id');
    if (reply.status < 200 || reply.status > 299) {
      throw failureFromReply(this.id, reply, errorFacts(reply.text, headerRequestId), this.#clock, secrets);
    }
    const message = parseMessage(reply.text);
    if (typeof message === 'string') throw malformed(this.id, reply, message, headerRequestId, secrets);
    return successResult(this.id, reply, message, body.model, headerRequestId, normaliseStopReason, secrets);
  }

  /** The pass-through call: the client's body as is, `anthropic-version`/`anthropic-beta` passed on, our key added. */
  async call(request: WireRequest, options: WireCallOptions): Promise<WireResponse> {
    const route = ANTHROPIC_WIRE_PATHS[request.surface];
    if (route === undefined) throw new Error(`surface ${JSON.stringify(request.surface)} is not an Anthropic surface`);
    const headers: Record<string, string> = {
      'anthropic-version': request.headers['anthropic-version'] ?? ANTHROPIC_VERSION,
      'x-api-key': this.#apiKey,
    };
    if (request.headers['anthropic-beta'] !== undefined) headers['anthropic-beta'] = request.headers['anthropic-beta'];
    if (route.method === 'POST') headers['content-type'] = 'application/json';
    return openWire({
      providerId: this.id,
      fetch: this.#wireFetch,
      clock: this.#clock,
      timers: this.#timers,
      options,
      secrets: [this.#apiKey],
      url: `${this.baseUrl}${route.path}${wireQuery(request)}`,
      method: route.method,
      headers,
      body: request.body,
      errorFacts,
      requestIdHeader: 'request-id',
    });
  }

  reader(surface: WireSurface): WireReader {
    return anthropicReader(surface);
  }
}

/** This package's contribution to the router, found at open as `HOT/providers/<id>/provider.js`. */
const providerPackage: ProviderPackage = {
  create: (options) => new AnthropicProvider({ id: options.id, env: options.env, config: options.config }),
};
export default providerPackage;
