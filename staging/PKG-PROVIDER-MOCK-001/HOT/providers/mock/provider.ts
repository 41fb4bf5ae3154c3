import { show } from '#kernel/errors.js';
import { systemClock, systemTimers, type Clock, type Timers } from '#providers/clock.js';
import type { ModelProvider } from '#providers/contract.js';
import { ProviderError, type ProviderErrorKind } from '#providers/errors.js';
import { parseProviderRequest, requireModelMessagesMax, systemBlocks } from '#providers/request.js';
import {
  isRenderedRequest,
  type ProviderRequest,
  type ProviderResult,
  type SendOptions,
  type StopReason,
  type Usage,
  type ProviderPackage,
} from '#providers/spec.js';
import { anthropicReader } from '#providers/surfaces/anthropic.js';
import { openAiReader } from '#providers/surfaces/openai.js';
import type { WireCallOptions, WireReader, WireRequest, WireResponse, WireSurface } from '#providers/wire/spec.js';
import { waitWithDeadline } from './wait.js';
import { MOCK_SURFACES, mockWireBody, type MockReply } from './wire.js';

export type MockUsage = Omit<Usage, 'raw'>;

/** A scripted answer; anything left out comes from the provider's defaults. */
export interface MockAnswer {
  text?: string;
  usage?: Partial<MockUsage>;
  stop_reason?: StopReason;
  model?: string;
  request_id?: string | null;
  delay_ms?: number;
}

/** A scripted failure: the ProviderError the call will throw (status defaults to the kind's usual status). */
export interface MockFailure {
  error: {
    kind: ProviderErrorKind;
    status?: number | null;
    retry_after_ms?: number | null;
    message?: string;
    provider_error_type?: string | null;
    request_id?: string | null;
    /** The failure came after a 2xx status (a reply cut off mid-body): the call may have been billed. */
    after_success?: boolean;
  };
  delay_ms?: number;
}

export type MockStep = MockAnswer | MockFailure;

export interface MockCall {
  request: ProviderRequest;
  timeout_ms: number;
  /** Clock time when the call started. */
  at: number;
}

export interface MockProviderOptions {
  id?: string;
  /** Model reported when neither the step nor the request names one. */
  model?: string;
  /** Answer text when the script is empty, e.g. "The answer is 42" for the smoke test. */
  defaultResponse?: string;
  defaultUsage?: Partial<MockUsage>;
  /** Latency of every call unless a step sets its own `delay_ms`. */
  latencyMs?: number;
  script?: readonly MockStep[];
  clock?: Clock;
  timers?: Timers;
}

const DEFAULT_USAGE: MockUsage = { input_tokens: 100, output_tokens: 50, cache_read_tokens: 0, cache_write_tokens: 0 };

const USUAL_STATUS: Record<ProviderErrorKind, number | null> = {
  rate_limited: 429,
  overloaded: 529,
  server_error: 500,
  timeout: null,
  spend_limit: 429,
  invalid_request: 400,
  auth: 401,
  malformed_response: 200,
  network: null,
  cancelled: null,
};

/**
 * A deterministic provider: scripted answers and failures in order, then the default answer; records every call.
 * It meets the whole contract in-process: `send` answers a neutral request directly (the router's bench runs on it),
 * and the wire call answers the Anthropic and OpenAI generation surfaces in their real formats, whole or streamed,
 * with usage, read by the same readers as an upstream's reply.
 */
export class MockProvider implements ModelProvider {
  readonly id: string;
  readonly surfaces = MOCK_SURFACES;
  readonly calls: MockCall[] = [];
  readonly #script: MockStep[];
  readonly #options: MockProviderOptions;
  readonly #clock: Clock;
  readonly #timers: Timers;
  #sequence = 0;

  constructor(options: MockProviderOptions = {}) {
    this.id = options.id ?? 'mock';
    this.#options = options;
    this.#script = [...(options.script ?? [])];
    this.#clock = options.clock ?? systemClock;
    this.#timers = options.timers ?? systemTimers;
  }

  /** Append steps to the script. */
  enqueue(...steps: MockStep[]): this {
    this.#script.push(...steps);
    return this;
  }

  get pending(): number {
    return this.#script.length;
  }

  async send(request: ProviderRequest, options: SendOptions): Promise<ProviderResult> {
    const checked = parseProviderRequest(request, this.id, (body) =>
      requireModelMessagesMax(body, ['max_tokens', 'max_completion_tokens']),
    );
    const started = this.#clock.now();
    const step = await this.#take(checked, options);
    const reply = this.#reply(step, requestedModel(checked), sentBytes(checked));
    return {
      provider_id: this.id,
      model: reply.model,
      content: reply.text,
      stop_reason: reply.stop,
      raw_stop_reason: reply.stop,
      usage: { ...reply.usage, raw: { ...reply.usage } },
      request_id: this.#requestId(step),
      latency_ms: Math.max(0, this.#clock.now() - started),
    };
  }

  /** One wire call: the scripted step's failure before any byte, or its answer in the surface's own format. */
  async call(request: WireRequest, options: WireCallOptions): Promise<WireResponse> {
    if (!this.surfaces.includes(request.surface))
      throw new Error(`surface ${JSON.stringify(request.surface)} is not served by provider ${this.id}`);
    const body = request.body ?? {};
    const step = await this.#take({ body }, options);
    const reply = this.#reply(step, body.model, Buffer.byteLength(JSON.stringify(body)));
    const stream = body.stream === true;
    const includeUsage = (body.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true;
    const frames = mockWireBody(request.surface, reply, stream, includeUsage);
    let cancelled = false;
    async function* chunks(): AsyncGenerator<Uint8Array> {
      for (const frame of frames) {
        if (cancelled) return;
        yield Buffer.from(frame, 'utf8');
      }
    }
    return {
      status: 200,
      contentType: stream ? 'text/event-stream' : 'application/json',
      requestId: this.#requestId(step),
      body: chunks(),
      cancel: () => {
        cancelled = true;
      },
    };
  }

  reader(surface: WireSurface): WireReader {
    return surface.startsWith('anthropic.') ? anthropicReader(surface) : openAiReader(surface);
  }

  /** Records the call, takes the next step and waits its delay: a timeout or the caller's abort ends it first. */
  async #take(request: ProviderRequest, options: SendOptions): Promise<MockAnswer> {
    this.calls.push({ request, timeout_ms: options.timeoutMs, at: this.#clock.now() });
    this.#sequence += 1;
    const step: MockStep = this.#script.shift() ?? {};
    const waited = await waitWithDeadline(
      step.delay_ms ?? this.#options.latencyMs ?? 0,
      options.timeoutMs,
      options.signal,
      this.#timers,
    );
    if (waited === 'timeout')
      throw new ProviderError({
        kind: 'timeout',
        providerId: this.id,
        message: `provider ${show(this.id)} did not answer within ${options.timeoutMs} ms`,
      });
    if (waited === 'cancelled')
      throw new ProviderError({
        kind: 'cancelled',
        providerId: this.id,
        message: `call to provider ${show(this.id)} cancelled by the caller`,
      });
    if ('error' in step) throw this.#failure(step);
    return step;
  }

  #requestId(step: MockAnswer): string | null {
    return step.request_id === undefined ? `mock-req-${this.#sequence}` : step.request_id;
  }

  #failure(step: MockFailure): ProviderError {
    const e = step.error;
    const status = e.status === undefined ? USUAL_STATUS[e.kind] : e.status;
    return new ProviderError({
      kind: e.kind,
      providerId: this.id,
      status,
      retryAfterMs: e.retry_after_ms ?? null,
      requestId: e.request_id === undefined ? `mock-req-${this.#sequence}` : e.request_id,
      providerErrorType: e.provider_error_type ?? null,
      afterSuccess: e.after_success === true,
      message:
        e.message ??
        `provider ${show(this.id)} scripted failure ${e.kind}${status === null ? '' : ` (HTTP ${status})`}`,
    });
  }

  #reply(step: MockAnswer, requested: unknown, bytes: number): MockReply {
    // Like a real tokenizer, never more prompt tokens than the bytes sent: the router takes a count past the
    // request's bound for a lie and charges the reservation instead.
    const honest = { ...DEFAULT_USAGE, input_tokens: Math.min(DEFAULT_USAGE.input_tokens ?? 0, bytes) };
    return {
      text: step.text ?? this.#options.defaultResponse ?? 'Mock response',
      model: step.model ?? this.#options.model ?? (typeof requested === 'string' ? requested : 'mock-model-1'),
      stop: step.stop_reason ?? 'stop',
      usage: { ...honest, ...this.#options.defaultUsage, ...step.usage },
    };
  }
}

function requestedModel(request: ProviderRequest): unknown {
  return isRenderedRequest(request) ? request.body.model : request.model;
}

/** The UTF-8 bytes of the text a request carries: its rendered body, or its prompt and system blocks. */
function sentBytes(request: ProviderRequest): number {
  if (isRenderedRequest(request)) return Buffer.byteLength(JSON.stringify(request.body));
  return systemBlocks(request.system).reduce(
    (n, b) => n + Buffer.byteLength(b.text),
    Buffer.byteLength(request.prompt),
  );
}

/** This package's contribution to the router, found at open as `HOT/providers/<id>/provider.js`. */
// No `serves`: the mock answers the surfaces for tests, and is never picked to serve a gateway's clients.
const providerPackage: ProviderPackage = {
  create: (options) => new MockProvider({ id: options.id, defaultResponse: options.mockResponse ?? 'Mock response' }),
};
export default providerPackage;
