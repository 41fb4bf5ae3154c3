import type { Timers } from '#providers/clock.js';

export type WaitOutcome = 'elapsed' | 'timeout' | 'cancelled';

/** Wait `ms` on the injected timers, cut short by the deadline or the caller's signal. */
export function waitWithDeadline(
  ms: number,
  timeoutMs: number,
  signal: AbortSignal | undefined,
  timers: Timers,
): Promise<WaitOutcome> {
  if (signal?.aborted === true) return Promise.resolve('cancelled');
  if (ms <= 0) return Promise.resolve('elapsed');
  return new Promise((resolve) => {
    const finish = (outcome: WaitOutcome): void => {
      timers.clearTimeout(delay);
      timers.clearTimeout(deadline);
      signal?.removeEventListener('abort', onAbort);
      resolve(outcome);
    };
    const onAbort = (): void => finish('cancelled');
    // When the latency reaches the deadline exactly, the deadline wins (the caller stopped waiting).
    const deadline = timers.setTimeout(() => finish('timeout'), timeoutMs);
    const delay = ms >= timeoutMs ? undefined : timers.setTimeout(() => finish('elapsed'), ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
