import type { RouterConfig } from './config.js';
import type { ProviderAnswer, ProviderCall, ProviderFailure, ProviderPort } from './ports.js';
import type { AttemptRecord } from './records.js';
import { retryDelay } from './retry.js';

export type SendResult =
  | { ok: true; answer: ProviderAnswer; attempts: AttemptRecord[] }
  | { ok: false; failure: ProviderFailure; attempts: AttemptRecord[] };

export interface SendOptions {
  provider: ProviderPort;
  call: ProviderCall;
  config: RouterConfig;
  clock: () => number;
  random: () => number;
  sleep: (ms: number) => Promise<void>;
  onFailure: (failure: ProviderFailure) => void;
  /** Consulted before each retry (the breaker may have opened meanwhile). */
  mayRetry?: () => boolean;
}

/** The one retry loop: providers make one attempt per send; every attempt is recorded. */
export async function sendWithRetries(options: SendOptions): Promise<SendResult> {
  const attempts: AttemptRecord[] = [];
  for (let attempt = 1; ; attempt += 1) {
    const started = options.clock();
    try {
      const answer = await options.provider.send(options.call, { timeoutMs: options.config.timeout_ms });
      attempts.push({ attempt, outcome: 'success', status: null, kind: null, latency_ms: options.clock() - started, retry_after_ms: null });
      return { ok: true, answer, attempts };
    } catch (error) {
      const failure = options.provider.classify(error);
      attempts.push({
        attempt, outcome: failure.kind === 'timeout' ? 'timeout' : 'error', status: failure.status, kind: failure.kind,
        latency_ms: options.clock() - started, retry_after_ms: failure.retry_after_ms,
      });
      options.onFailure(failure);
      const delay = failure.retryable ? retryDelay(options.config.retry, attempt, failure.retry_after_ms, options.random) : null;
      if (delay === null || (options.mayRetry && !options.mayRetry())) return { ok: false, failure, attempts };
      await options.sleep(delay);
    }
  }
}
