import { show } from '#kernel/errors.js';
import { boundText } from './bound.js';
import type { Clock, Timers } from './clock.js';
import { ProviderError } from './errors.js';
import { redact } from './redact.js';
import { failureFromReply, type FailureFacts } from './reply.js';
import type { SendOptions } from './spec.js';
import type { ReplyHeaders, WireFetch, WireHttpReply } from './transport.js';
import type { WireCallOptions, WireResponse } from './wire/spec.js';

/** A reply read whole: what the error and success mappings look at. */
export interface HttpReply {
  status: number;
  headers: ReplyHeaders;
  text: string;
  latencyMs: number;
}

/** Far above any real completion; bounds memory when a hostile or broken server streams forever. */
export const DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024;

/** Error bodies are short; a longer one is cut here (it only feeds a bounded message). */
const MAX_ERROR_BODY_BYTES = 64 * 1024;

/** One upstream call: where, how, and what may never show in an error (the key). */
export interface ExchangeArgs {
  providerId: string;
  fetch: WireFetch;
  clock: Clock;
  timers: Timers;
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body: unknown;
  /** The body's text when the caller serialised it already (a signature covers exactly these bytes). */
  bodyText?: string | null;
  options: WireCallOptions;
  /** Strings that must never appear in an error message (API keys). */
  secrets: readonly string[];
  maxResponseBytes?: number;
}

export interface OpenWireArgs extends ExchangeArgs {
  /** The provider's reading of an error body. */
  errorFacts: (text: string, headerRequestId: string | null, headers: ReplyHeaders) => FailureFacts;
  /** Null: the upstream sends no request id header. */
  requestIdHeader: string | null;
}

/** An exchange whose status line arrived: its body still to read, through the timers and the size cap. */
interface Opened {
  reply: WireHttpReply;
  status: number;
  started: number;
  body: AsyncGenerator<Uint8Array>;
  /** Clears the timers and the caller's listener; the body's end calls it too. */
  done(): void;
  cancel(): void;
}

/**
 * The timers of one call: `timeoutMs` until the status line, then (re-armed per chunk) `idleTimeoutMs`, unless the
 * caller reads the reply whole, when the first keeps running over the body; `deadlineMs` over it all; the caller's
 * signal. Any of them aborts the request and its body.
 */
class CallTimers {
  readonly controller = new AbortController();
  timedOut = false;
  pastDeadline = false;
  readonly #timers: Timers;
  readonly #options: WireCallOptions;
  #timer: unknown;
  readonly #deadline: unknown;
  readonly #onCallerAbort = (): void => this.controller.abort();
  readonly #onTimeout = (): void => {
    this.timedOut = true;
    this.controller.abort();
  };

  constructor(timers: Timers, options: WireCallOptions) {
    this.#timers = timers;
    this.#options = options;
    this.#timer = timers.setTimeout(this.#onTimeout, options.timeoutMs);
    this.#deadline =
      options.deadlineMs === undefined
        ? undefined
        : timers.setTimeout(() => {
            this.pastDeadline = true;
            this.controller.abort();
          }, options.deadlineMs);
    options.signal?.addEventListener('abort', this.#onCallerAbort, { once: true });
  }

  /** A chunk arrived: the idle timer starts again (a whole-reply read keeps its one deadline). */
  rearm(): void {
    if (this.#options.whole === true) return;
    this.#timers.clearTimeout(this.#timer);
    this.#timer = this.#timers.setTimeout(this.#onTimeout, this.#options.idleTimeoutMs ?? this.#options.timeoutMs);
  }

  done(): void {
    this.#timers.clearTimeout(this.#timer);
    if (this.#deadline !== undefined) this.#timers.clearTimeout(this.#deadline);
    this.#options.signal?.removeEventListener('abort', this.#onCallerAbort);
  }
}

/**
 * The one transport every provider call goes through (timers: `CallTimers`). Transport failures become
 * ProviderErrors: a timer → `timeout`, the caller's signal → `cancelled`, anything else → `network`, each
 * `after_success` once a 2xx status arrived (the upstream may have billed the call).
 */
async function exchange(args: ExchangeArgs): Promise<Opened> {
  const { providerId, options } = args;
  if (options.signal?.aborted === true) {
    throw new ProviderError({
      kind: 'cancelled',
      providerId,
      message: `call to provider ${show(providerId)} cancelled before it was sent`,
    });
  }
  const timers = new CallTimers(args.timers, options);
  const started = args.clock.now();
  let reply: WireHttpReply;
  try {
    reply = await args.fetch(args.url, {
      method: args.method,
      headers: args.headers,
      signal: timers.controller.signal,
      redirect: 'error',
      ...(args.method === 'POST' ? { body: args.bodyText ?? JSON.stringify(args.body) } : {}),
      ...(options.whole === true ? { decode: true } : {}),
    });
  } catch (error) {
    timers.done();
    if (timers.pastDeadline) throw deadlineError(providerId, options.deadlineMs as number, null);
    throw transportError(args, error, timers.timedOut, null);
  }
  if (options.whole === true && reply.status >= 300 && reply.status <= 399) {
    // What fetch's `redirect: 'error'` does: a whole-reply caller never sees a redirect as an answer.
    timers.controller.abort();
    timers.done();
    throw transportError(args, new Error(`redirect (HTTP ${reply.status}) refused`), false, null);
  }
  return {
    reply,
    status: reply.status,
    started,
    body: boundedBody(args, reply, timers),
    done: () => timers.done(),
    cancel: () => timers.controller.abort(),
  };
}

/** The reply's body through the size cap and the timers; a failure reading it is a ProviderError. */
async function* boundedBody(args: ExchangeArgs, reply: WireHttpReply, timers: CallTimers): AsyncGenerator<Uint8Array> {
  const { providerId, options } = args;
  const status = reply.status;
  const succeeded = status >= 200 && status <= 299;
  const maxBytes = args.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  let size = 0;
  try {
    timers.rearm();
    if (reply.body === null) return;
    for await (const chunk of reply.body) {
      size += chunk.byteLength;
      // Leaving the loop early cancels the stream, which closes the connection.
      if (size > maxBytes) {
        throw new ProviderError({
          kind: 'malformed_response',
          providerId,
          status,
          afterSuccess: succeeded,
          message: `provider ${show(providerId)} answered HTTP ${status} with a body over ${maxBytes} bytes`,
        });
      }
      timers.rearm();
      yield chunk;
    }
  } catch (error) {
    if (error instanceof ProviderError) throw error;
    if (timers.pastDeadline) throw deadlineError(providerId, options.deadlineMs as number, status);
    const named =
      options.whole === true ? options : { ...options, timeoutMs: options.idleTimeoutMs ?? options.timeoutMs };
    throw transportError({ ...args, options: named }, error, timers.timedOut, succeeded ? status : null);
  } finally {
    timers.done();
  }
}

/**
 * One upstream call whose 2xx body is handed back unread. A non-2xx reply becomes the provider's ProviderError
 * (retryable or not, `retry-after` parsed) before anything reaches the caller, so a retry loop can act on it.
 */
export async function openWire(args: OpenWireArgs): Promise<WireResponse> {
  const opened = await exchange(args);
  const { reply, status } = opened;
  // The upstream's header, recorded with the exchange: bounded and without our key, like every field of its reply.
  const sentId = args.requestIdHeader === null ? null : reply.headers.get(args.requestIdHeader);
  const requestId = sentId === null ? null : boundText(sentId, args.secrets);
  if (status < 200 || status > 299) {
    let text = '';
    try {
      text = await readText(opened.body, MAX_ERROR_BODY_BYTES);
    } catch {
      text = '';
    } finally {
      opened.done();
    }
    const failed: HttpReply = {
      status,
      headers: reply.headers,
      text,
      latencyMs: Math.max(0, args.clock.now() - opened.started),
    };
    throw failureFromReply(
      args.providerId,
      failed,
      args.errorFacts(text, requestId, reply.headers),
      args.clock,
      args.secrets,
    );
  }
  return {
    status,
    requestId,
    contentType: reply.headers.get('content-type') ?? '',
    body: opened.body,
    cancel: opened.cancel,
  };
}

export interface PostJsonArgs extends Omit<ExchangeArgs, 'method' | 'options'> {
  options: SendOptions;
}

/**
 * One POST read whole, whatever its status, with a deadline covering headers and body (the same exchange as
 * `openWire`, for a caller that maps the status itself).
 */
export async function postJson(args: PostJsonArgs): Promise<HttpReply> {
  const opened = await exchange({ ...args, method: 'POST', options: { ...args.options, whole: true } });
  const text = await readText(opened.body, Number.POSITIVE_INFINITY);
  return {
    status: opened.status,
    headers: opened.reply.headers,
    text,
    latencyMs: Math.max(0, args.clock.now() - opened.started),
  };
}

/** A body as text: the whole of it (its size cap is the exchange's), or its first `maxBytes`. */
export async function readText(body: AsyncIterable<Uint8Array>, maxBytes: number): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.byteLength;
    if (size >= maxBytes) break;
  }
  const all = Buffer.concat(chunks);
  return (size > maxBytes ? all.subarray(0, maxBytes) : all).toString('utf8');
}

/**
 * A call cut at its deadline. The request was sent and the provider may be generating (or have billed) it: the
 * reservation stays charged, and it is not retried, since the deadline has passed for any retry too.
 */
function deadlineError(providerId: string, deadlineMs: number, status: number | null): ProviderError {
  return new ProviderError({
    kind: 'timeout',
    providerId,
    status,
    afterSuccess: true,
    message: `the call to provider ${show(providerId)} ran past its deadline of ${deadlineMs} ms${status === null ? ' before its reply began' : ' while its reply was still arriving'} (the call may have been billed)`,
  });
}

export function transportError(
  args: { providerId: string; options: SendOptions; url: string; secrets: readonly string[] },
  error: unknown,
  timedOut: boolean,
  successStatus: number | null,
): ProviderError {
  const { providerId } = args;
  // A failure while reading a 2xx body (deadline, reset, truncation): the work may be done and billed.
  const afterSuccess = successStatus !== null;
  const during = afterSuccess
    ? ` while reading the body of an HTTP ${successStatus} reply (the call may have been billed)`
    : '';
  if (timedOut) {
    return new ProviderError({
      kind: 'timeout',
      providerId,
      status: successStatus,
      afterSuccess,
      message: `provider ${show(providerId)} did not answer within ${args.options.timeoutMs} ms${during}`,
    });
  }
  if (args.options.signal?.aborted === true) {
    return new ProviderError({
      kind: 'cancelled',
      providerId,
      status: successStatus,
      afterSuccess,
      message: `call to provider ${show(providerId)} cancelled by the caller${during}`,
    });
  }
  const reason = redact(describeTransportFailure(error), args.secrets);
  // The raw error is not kept as the cause: its text could quote a header value (the key).
  return new ProviderError({
    kind: 'network',
    providerId,
    cause: new Error(reason),
    status: successStatus,
    afterSuccess,
    message: `provider ${show(providerId)} unreachable at ${show(redact(safeOrigin(args.url), args.secrets))}: ${show(reason, 200)}${during}`,
  });
}

function describeTransportFailure(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  if (typeof cause?.code === 'string') return cause.code;
  // node:http's errors carry the code themselves (ECONNREFUSED, ECONNRESET); their message names the address.
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code.startsWith('E')) return code;
  if (typeof cause?.message === 'string') return cause.message;
  return error instanceof Error ? error.message : String(error);
}

/** The URL without credentials or query (which could carry a key on some compatible servers). */
export function safeOrigin(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '(invalid URL)';
  }
}
