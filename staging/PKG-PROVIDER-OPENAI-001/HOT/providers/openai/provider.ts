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
import { chatBody, chatCompletionsUrl, checkChatBody } from './body.js';
import { OPENAI_WIRE_PATHS, openAiReader, v1Url } from './wire.js';
import { errorFacts, normaliseStopReason, parseCompletion } from './reply.js';

export const OPENAI_DEFAULT_BASE_URL = 'https://api.openai.com';

export type OpenAiProviderOptions = HttpProviderOptions;

/** Chat Completions over fetch against any compatible server: one POST per send, no retries. */
export class OpenAiProvider implements Provider, WireProvider {
  readonly surfaces = Object.keys(OPENAI_WIRE_PATHS) as WireSurface[];
  readonly id: string;
  readonly baseUrl: string;
  readonly #apiKey: string | null;
  readonly #fetch: FetchLike;
  /** The pass-through path's transport: the injected fetch if any, else node:http(s) with keep-alive. */
  readonly #wireFetch: WireFetch;
  readonly #clock: Clock;
  readonly #timers: Timers;

  constructor(options: OpenAiProviderOptions = {}) {
    this.id = options.id ?? 'openai';
    const endpoint = resolveEndpoint(
      {
        providerId: this.id,
        baseUrlVar: 'OPENAI_BASE_URL',
        apiKeyVar: 'OPENAI_API_KEY',
        defaultBaseUrl: OPENAI_DEFAULT_BASE_URL,
        keyRequired: false,
      },
      options.config,
      options.env ?? process.env,
    );
    this.baseUrl = endpoint.baseUrl;
    this.#apiKey = endpoint.apiKey;
    this.#fetch = options.fetch ?? ((input, init) => fetch(input, init));
    this.#wireFetch = options.fetch ?? nodeHttpFetch();
    this.#clock = options.clock ?? systemClock;
    this.#timers = options.timers ?? systemTimers;
  }

  async send(request: ProviderRequest, options: SendOptions): Promise<ProviderResult> {
    const checked = parseProviderRequest(request, this.id, checkChatBody);
    const body = isRenderedRequest(checked) ? checked.body : chatBody(checked);
    const secrets = this.#apiKey === null ? [] : [this.#apiKey];
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.#apiKey !== null) headers.authorization = `Bearer ${this.#apiKey}`;
    const reply = await postJson({
      providerId: this.id,
      fetch: this.#fetch,
      clock: this.#clock,
      timers: this.#timers,
      options,
      secrets,
      body,
      headers,
      url: chatCompletionsUrl(this.baseUrl),
    });
    const headerRequestId = reply.headers.get('x-request-id');
    if (reply.status < 200 || reply.status > 299) {
      throw failureFromReply(this.id, reply, errorFacts(reply.text, headerRequestId), this.#clock, secrets);
    }
    const completion = parseCompletion(reply.text);
    if (typeof completion === 'string') throw malformed(this.id, reply, completion, headerRequestId, secrets);
    return successResult(this.id, reply, completion, body.model, headerRequestId, normaliseStopReason, secrets);
  }

  /** The pass-through call: the client's body as is, our key (if any) as the bearer. */
  async call(request: WireRequest, options: WireCallOptions): Promise<WireResponse> {
    const route = OPENAI_WIRE_PATHS[request.surface];
    if (route === undefined) throw new Error(`surface ${JSON.stringify(request.surface)} is not an OpenAI surface`);
    const headers: Record<string, string> = {};
    if (route.method === 'POST') headers['content-type'] = 'application/json';
    if (this.#apiKey !== null) headers.authorization = `Bearer ${this.#apiKey}`;
    return openWire({
      providerId: this.id,
      fetch: this.#wireFetch,
      clock: this.#clock,
      timers: this.#timers,
      options,
      secrets: this.#apiKey === null ? [] : [this.#apiKey],
      url: `${v1Url(this.baseUrl, route.path)}${wireQuery(request)}`,
      method: route.method,
      headers,
      body: request.body,
      errorFacts,
      requestIdHeader: 'x-request-id',
    });
  }

  reader(surface: WireSurface): WireReader {
    return openAiReader(surface);
  }
}

/** This package's contribution to the router, found at open as `HOT/providers/<id>/provider.js`. */
const providerPackage: ProviderPackage = {
  create: (options) => new OpenAiProvider({ id: options.id, env: options.env, config: options.config }),
};
export default providerPackage;
