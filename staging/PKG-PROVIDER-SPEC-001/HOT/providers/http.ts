import { show } from '../kernel/errors.js';
import type { Clock, FetchLike, Timers } from './clock.js';
import { ProviderError } from './errors.js';
import { redact } from './redact.js';
import type { SendOptions } from './spec.js';

export interface HttpReply {
  status: number;
  headers: Headers;
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
}

/**
 * One POST with a deadline covering the whole exchange (headers and body). Transport failures become
 * ProviderErrors: the deadline → `timeout`, the caller's signal → `cancelled`, anything else → `network`.
 * Redirects are refused so a key header is never replayed to another host.
 */
export async function postJson(args: PostJsonArgs): Promise<HttpReply> {
  const { providerId, options } = args;
  if (options.signal?.aborted === true) {
    throw new ProviderError({ kind: 'cancelled', providerId, message: `call to provider ${show(providerId)} cancelled before it was sent` });
  }
  const controller = new AbortController();
  let timedOut = false;
  const timer = args.timers.setTimeout(() => { timedOut = true; controller.abort(); }, options.timeoutMs);
  const onCallerAbort = (): void => controller.abort();
  options.signal?.addEventListener('abort', onCallerAbort, { once: true });
  const started = args.clock.now();
  try {
    const response = await args.fetch(args.url, {
      method: 'POST', headers: args.headers, body: JSON.stringify(args.body), signal: controller.signal, redirect: 'error',
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, text, latencyMs: Math.max(0, args.clock.now() - started) };
  } catch (error) {
    throw transportError(args, error, timedOut);
  } finally {
    args.timers.clearTimeout(timer);
    options.signal?.removeEventListener('abort', onCallerAbort);
  }
}

function transportError(args: PostJsonArgs, error: unknown, timedOut: boolean): ProviderError {
  const { providerId } = args;
  if (timedOut) {
    return new ProviderError({ kind: 'timeout', providerId, message: `provider ${show(providerId)} did not answer within ${args.options.timeoutMs} ms` });
  }
  if (args.options.signal?.aborted === true) {
    return new ProviderError({ kind: 'cancelled', providerId, message: `call to provider ${show(providerId)} cancelled by the caller` });
  }
  const reason = redact(describeTransportFailure(error), args.secrets);
  return new ProviderError({
    kind: 'network', providerId, cause: error,
    message: `provider ${show(providerId)} unreachable at ${show(redact(safeOrigin(args.url), args.secrets))}: ${reason}`,
  });
}

function describeTransportFailure(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  if (typeof cause?.code === 'string') return cause.code;
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
