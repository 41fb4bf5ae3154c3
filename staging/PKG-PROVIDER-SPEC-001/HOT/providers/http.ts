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
  options: WireCallOptions;
  /** Strings that must never appear in an error message (API keys). */
  secrets: readonly string[];
  maxResponseBytes?: number;
}

export interface OpenWireArgs extends ExchangeArgs {
  /** The provider's reading of an error body. */
  errorFacts: (text: string, headerRequestId: string | null) => FailureFacts;
  requestIdHeader: string;
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
 * The one transport every provider call goes through. `timeoutMs` bounds the wait for the status line; after it,
 * `idleTimeoutMs` bounds each wait for the next chunk, or, for a caller reading the reply whole (`whole`), the
 * first timer keeps running over the body so the deadline covers the whole exchange. `deadlineMs` caps it all.
 * Transport failures become ProviderErrors: a timer → `timeout`, the caller's signal → `cancelled`, anything else →
 * `network`, each `after_success` once a 2xx status arrived (the upstream may have billed the call).
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
  const controller = new AbortController();
  let timedOut = false;
  const onTimeout = (): void => {
    timedOut = true;
    controller.abort();
  };
  let timer: unknown = args.timers.setTimeout(onTimeout, options.timeoutMs);
  let pastDeadline = false;
  const deadline =
    options.deadlineMs === undefined
      ? undefined
      : args.timers.setTimeout(() => {
          pastDeadline = true;
          controller.abort();
        }, options.deadlineMs);
  const onCallerAbort = (): void => controller.abort();
  options.signal?.addEventListener('abort', onCallerAbort, { once: true });
  const done = (): void => {
    args.timers.clearTimeout(timer);
    if (deadline !== undefined) args.timers.clearTimeout(deadline);
    options.signal?.removeEventListener('abort', onCallerAbort);
  };
  const started = args.clock.now();
  let reply: WireHttpReply;
  try {
    reply = await args.fetch(args.url, {
      method: args.method,
      headers: args.headers,
      signal: controller.signal,
      redirect: 'error',
      ...(args.method === 'POST' ? { body: JSON.stringify(args.body) } : {}),
      ...(options.whole === true ? { decode: true } : {}),
    });
  } catch (error) {
    done();
    if (pastDeadline) throw deadlineError(providerId, options.deadlineMs as number, null);
    throw transportError(args, error, timedOut, null);
  }
  const status = reply.status;
  if (options.whole === true && status >= 300 && status <= 399) {
    // What fetch's `redirect: 'error'` does: a whole-reply caller never sees a redirect as an answer.
    controller.abort();
    done();
    throw transportError(args, new Error(`redirect (HTTP ${status}) refused`), false, null);
  }
  const succeeded = status >= 200 && status <= 299;
  const idleMs = options.idleTimeoutMs ?? options.timeoutMs;
  const maxBytes = args.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const rearm = (): void => {
    if (options.whole === true) return;
    args.timers.clearTimeout(timer);
    timer = args.timers.setTimeout(onTimeout, idleMs);
  };
  const errorOptions = options.whole === true ? options : { ...options, timeoutMs: idleMs };
  async function* body(): AsyncGenerator<Uint8Array> {
    let size = 0;
    try {
      rearm();
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
        rearm();
        yield chunk;
      }
    } catch (error) {
      if (error instanceof ProviderError) throw error;
      if (pastDeadline) throw deadlineError(providerId, options.deadlineMs as number, status);
      throw transportError({ ...args, options: errorOptions }, error, timedOut, succeeded ? status : null);
    } finally {
      done();
    }
  }
  return { reply, status, started, body: body(), done, cancel: () => controller.abort() };
}

/**
 * One upstream call whose 2xx body is handed back unread. A non-2xx reply becomes the provider's ProviderError
 * (retryable or not, `retry-after` parsed) before anything reaches the caller, so a retry loop can act on it.
 */
export async function openWire(args: OpenWireArgs): Promise<WireResponse> {
  const opened = await exchange(args);
  const { reply, status } = opened;
  // The upstream's header, recorded with the exchange: bounded and without our key, like every field of its reply.
  const sentId = reply.headers.get(args.requestIdHeader);
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
    throw failureFromReply(args.providerId, failed, args.errorFacts(text, requestId), args.clock, args.secrets);
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
