import { isProviderError } from '#providers/errors.js';
import type { ProviderResult } from '#providers/spec.js';
import type { RouterConfig } from './config.js';
import { targetedAttempt, type AttemptRecord, type AttemptTarget } from './records.js';
import { retryDelay } from './retry.js';

/** A failed round-trip, normalised: provider errors keep their kind; anything else is an internal fault. */
export interface SendFailure {
  kind: string;
  error_code: string;
  status: number | null;
  retryable: boolean;
  retry_after_ms: number | null;
  message: string;
  /** The failure came after a 2xx status: the provider may have billed the call. */
  after_success: boolean;
}

export type SendResult<R = ProviderResult> =
  | { ok: true; result: R; attempts: AttemptRecord[] }
  | { ok: false; failure: SendFailure; attempts: AttemptRecord[] };

/** What the one retry loop needs besides the one-attempt call it repeats. */
export interface SendOptions<R = unknown> {
  config: RouterConfig;
  clock: () => number;
  random: () => number;
  /** Resolves after `ms`, or sooner once `signal` aborts (its timer then cleared). */
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  onFailure: (failure: SendFailure) => void;
  /** Consulted before each retry (the breaker may have opened, or be probing, meanwhile). */
  mayRetry?: () => boolean;
  /**
   * The caller giving up (the gateway's client gone, a drain past its deadline): the wait before a retry ends
   * at once, and the next attempt, made with this signal aborted, ends the loop as cancelled.
   */
  signal?: AbortSignal;
  /** A routed call: where the attempt just made went, for its record. */
  target?: (outcome: { ok: true; result: R } | { ok: false; error: unknown }) => AttemptTarget;
  /**
   * A routed call: after a failure (and onFailure), whether it moved to another deployment, to be tried at once
   * (the wait and the attempt bound are for repeating one upstream; a move is bounded by the targets).
   */
  reroute?: (failure: SendFailure) => boolean | Promise<boolean>;
}

/**
 * Whether a failed call may still have been billed, so its reservation must stay charged (as unknown usage), not be
 * given back: cut off after a 2xx, or an attempt that ran out of our deadline while the provider held the whole
 * request (a non-streaming reply is generated in full before its status line; the provider bills it all the same).
 * A timeout the provider answered itself (408) carries its status and was not worked on.
 */
export function mayHaveBilled(failure: SendFailure, attempts: readonly AttemptRecord[]): boolean {
  return failure.after_success || attempts.some((a) => a.outcome === 'timeout' && a.status === null);
}

export function classify(error: unknown): SendFailure {
  if (isProviderError(error)) {
    return {
      kind: error.kind,
      error_code: error.error_code,
      status: error.status,
      retryable: error.retryable,
      retry_after_ms: error.retry_after_ms,
      message: error.message,
      after_success: (error as { after_success?: unknown }).after_success === true,
    };
  }
  // Not a provider failure (a bug in a provider): never retried, recorded as such.
  const message = error instanceof Error ? error.message : String(error);
  return {
    kind: 'internal',
    error_code: 'PROVIDER_INTERNAL',
    status: null,
    retryable: false,
    retry_after_ms: null,
    message,
    after_success: false,
  };
}

/**
 * The loop itself, around any one-attempt call (the gateway's wire call resolves when the reply's headers
 * arrived, so a retry never follows a byte sent to its client).
 */
export async function retryLoop<R>(call: () => Promise<R>, options: SendOptions<R>): Promise<SendResult<R>> {
  const attempts: AttemptRecord[] = [];
  // Attempts on one upstream, for the retry bound: a move to another deployment starts its count again.
  let tries = 0;
  for (let attempt = 1; ; attempt += 1) {
    tries += 1;
    const started = options.clock();
    try {
      const result = await call();
      // Keys in canonical (sorted) order throughout the router's records: the ledger then stringifies them natively.
      const record: AttemptRecord = {
        attempt,
        kind: null,
        latency_ms: options.clock() - started,
        outcome: 'success',
        retry_after_ms: null,
        status: null,
      };
      attempts.push(options.target ? targetedAttempt(record, options.target({ ok: true, result })) : record);
      return { ok: true, result, attempts };
    } catch (error) {
      const failure = classify(error);
      const record: AttemptRecord = {
        attempt,
        kind: failure.kind,
        latency_ms: options.clock() - started,
        outcome: failure.kind === 'timeout' ? 'timeout' : 'error',
        retry_after_ms: failure.retry_after_ms,
        status: failure.status,
      };
      attempts.push(options.target ? targetedAttempt(record, options.target({ ok: false, error })) : record);
      options.onFailure(failure);
      // The route decides which failures move the call (a prompt over one model's window is not retryable, yet
      // another target may take it).
      if (await options.reroute?.(failure)) {
        tries = 0;
        continue;
      }
      const delay = failure.retryable
        ? retryDelay(options.config.retry, tries, failure.retry_after_ms, options.random)
        : null;
      if (delay === null || (options.mayRetry && !options.mayRetry())) return { ok: false, failure, attempts };
      await backoff(options.sleep, delay, options.signal);
      // Asked again after the wait: the breaker may have opened during it (a retry-after can be a minute long).
      if (options.mayRetry && !options.mayRetry()) return { ok: false, failure, attempts };
    }
  }
}

/** A retry-after can be a minute or more: a caller that gives up meanwhile is not held for the rest of it. */
function backoff(
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>,
  ms: number,
  signal: AbortSignal | undefined,
): Promise<void> {
  if (signal === undefined) return sleep(ms);
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      signal.removeEventListener('abort', done);
      resolve();
    };
    signal.addEventListener('abort', done, { once: true });
    // Raced too: an injected sleep may not take the signal.
    sleep(ms, signal).then(done, done);
  });
}
