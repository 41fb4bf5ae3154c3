import { show } from '#kernel/errors.js';
import type { Clock, Timers } from '../clock.js';
import { boundText } from '../bound.js';
import { ProviderError } from '../errors.js';
import { DEFAULT_MAX_RESPONSE_BYTES, transportError, type HttpReply } from '../http.js';
import { failureFromReply, type FailureFacts } from '../reply.js';
import type { WireCallOptions, WireResponse } from './spec.js';
import type { WireFetch, WireHttpReply } from './transport.js';

export interface OpenWireArgs {
  providerId: string;
  fetch: WireFetch;
  clock: Clock;
  timers: Timers;
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body: unknown;
  options: WireCallOptions;
  secrets: readonly string[];
  /** The provider's reading of an error body. */
  errorFacts: (text: string, headerRequestId: string | null) => FailureFacts;
  requestIdHeader: string;
  maxResponseBytes?: number;
}

/** Error bodies are short; a longer one is cut here (it only feeds a bounded message). */
const MAX_ERROR_BODY_BYTES = 64 * 1024;

/**
 * One upstream call whose 2xx body is handed back unread. `timeoutMs` bounds the wait for the status line,
 * `idleTimeoutMs` each wait for the next chunk after it. A non-2xx reply becomes the provider's ProviderError
 * (retryable or not, `retry-after` parsed) before anything reaches the caller, so a retry loop can act on it.
 */
export async function openWire(args: OpenWireArgs): Promise<WireResponse> {
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
  let timer: unknown = args.timers.setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, options.timeoutMs);
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
  let response: WireHttpReply;
  try {
    response = await args.fetch(args.url, {
      method: args.method,
      headers: args.headers,
      signal: controller.signal,
      redirect: 'error',
      ...(args.method === 'POST' ? { body: JSON.stringify(args.body) } : {}),
    });
  } catch (error) {
    done();
    if (pastDeadline) throw deadlineError(providerId, options.deadlineMs as number, null);
    throw transportError(args, error, timedOut, null);
  }
  // The upstream's header, recorded with the exchange: bounded and without our key, like every field of its reply.
  const sentId = response.headers.get(args.requestIdHeader);
  const requestId = sentId === null ? null : boundText(sentId, args.secrets);
  if (response.status < 200 || response.status > 299) {
    let text = '';
    try {
      text = await readSome(response, MAX_ERROR_BODY_BYTES);
    } catch {
      text = '';
    } finally {
      done();
    }
    const reply: HttpReply = {
      status: response.status,
      headers: response.headers,
      text,
      latencyMs: Math.max(0, args.clock.now() - started),
    };
    throw failureFromReply(providerId, reply, args.errorFacts(text, requestId), args.clock, args.secrets);
  }
  const status = response.status;
  const idleMs = options.idleTimeoutMs ?? options.timeoutMs;
  const maxBytes = args.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const rearm = (): void => {
    args.timers.clearTimeout(timer);
    timer = args.timers.setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, idleMs);
  };
  async function* body(): AsyncGenerator<Uint8Array> {
    let size = 0;
    try {
      rearm();
      if (response.body === null) return;
      for await (const chunk of response.body) {
        size += chunk.byteLength;
        if (size > maxBytes) {
          throw new ProviderError({
            kind: 'malformed_response',
            providerId,
            status,
            afterSuccess: true,
            message: `provider ${show(providerId)} answered HTTP ${status} with a body over ${maxBytes} bytes`,
          });
        }
        rearm();
        yield chunk;
      }
    } catch (error) {
      if (error instanceof ProviderError) throw error;
      if (pastDeadline) throw deadlineError(providerId, options.deadlineMs as number, status);
      throw transportError({ ...args, options: { ...options, timeoutMs: idleMs } }, error, timedOut, status);
    } finally {
      done();
    }
  }
  return {
    status,
    requestId,
    contentType: response.headers.get('content-type') ?? '',
    body: body(),
    cancel: () => controller.abort(),
  };
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

async function readSome(response: WireHttpReply, maxBytes: number): Promise<string> {
  if (response.body === null) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body) {
    chunks.push(chunk);
    size += chunk.byteLength;
    if (size >= maxBytes) break;
  }
  return Buffer.concat(chunks).subarray(0, maxBytes).toString('utf8');
}
