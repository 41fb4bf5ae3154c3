/** Injected time: `now()` is epoch milliseconds; timers are injectable so latency and deadlines are testable. */
export interface Clock {
  now(): number;
}

export interface Timers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemClock: Clock = { now: () => Date.now() };

export const systemTimers: Timers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** The injectable `fetch` (same signature as the global). */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;
