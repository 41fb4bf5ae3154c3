import { show } from '#kernel/errors.js';
import type { Clock, FetchLike, Timers } from './clock.js';
import { ProviderError } from './errors.js';
import { redact } from './redact.js';
import type { SendOptions } from './spec.js';
import type { ReplyHeaders } from './wire/transport.js';

export interface HttpReply {
  status: number;
  headers: ReplyHeaders;
  text: string;
  latencyMs: number;
}

export interface PostJsonArgs {
  providerId: string;
  fetch: FetchLike;
  clock: Clock;
  timers: Timers;
  url: string;
  headers: Record<string, string>;
  body: unknown;
  options: SendOptions;
  /** Strings that must never appear in an error message (API keys). */
  secrets: readonly string[];
  /** Largest response body read; a bigger one is refused as malformed. */
  maxResponseBytes?: number;
}

/** Far above any real completion; bounds memory when a hostile or broken server streams forever. */
export const DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024;

/**
 * One POST with a deadline covering the whole exchange (headers and body). Transport failures become
 * ProviderErrors: the deadline → `timeout`, the caller's signal → `cancelled`, anything else → `network`.
 * Redirects are refused so a key header is never replayed to another host.
 */
export async function postJson(args: PostJsonArgs): Promise<HttpReply> {
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
  const timer = args.timers.setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, options.timeoutMs);
  const onCallerAbort = (): void => controller.abort();
  options.signal?.addEventListener('abort', onCallerAbort, { once: true });
  const started = args.clock.now();
  // Set once a 2xx status line has arrived: from then on the provider may have billed the call.
  let successStatus: number | null = null;
  try {
    const response = await args.fetch(args.url, {
      method: 'POST',
      headers: args.headers,
      body: JSON.stringify(args.body),
      signal: controller.signal,
      redirect: 'error',
    });
    if (response.status >= 200 && response.status <= 299) successStatus = response.status;
    const text = await readCapped(
      response,
      args.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
      providerId,
      successStatus !== null,
    );
    return {
      status: response.status,
      headers: response.headers,
      text,
      latencyMs: Math.max(0, args.clock.now() - started),
    };
  } catch (error) {
    if (error instanceof ProviderError) throw error;
    throw transportError(args, error, timedOut, successStatus);
  } finally {
    args.timers.clearTimeout(timer);
    options.signal?.removeEventListener('abort', onCallerAbort);
  }
}

async function readCapped(
  response: Response,
  maxBytes: number,
  providerId: string,
  afterSuccess: boolean,
): Promise<string> {
  if (response.body === null) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body) {
    size += chunk.byteLength;
    // Leaving the for-await early cancels the stream, which closes the connection.
    if (size > maxBytes) {
      throw new ProviderError({
        kind: 'malformed_response',
        providerId,
        status: response.status,
        afterSuccess,
        message: `provider ${show(providerId)} answered HTTP ${response.status} with a body over ${maxBytes} bytes`,
      });
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export function transportError(
  args: Pick<PostJsonArgs, 'providerId' | 'options' | 'url' | 'secrets'>,
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
  // The raw fetch error is not kept as the cause: its text could quote a header value (the key).
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
