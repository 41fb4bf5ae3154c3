/** The one retry loop's policy: exponential backoff with full jitter, capped, honouring retry-after. */
export interface RetryConfig {
  max_attempts: number;
  base_delay_ms: number;
  max_delay_ms: number;
  /** A retry-after longer than this is not waited for: the call fails instead. */
  max_retry_after_ms: number;
}

/** Delay before attempt `attempt + 1` (attempt is 1-based), or null when the call must not be retried. */
export function retryDelay(
  config: RetryConfig,
  attempt: number,
  retryAfterMs: number | null,
  random: () => number,
): number | null {
  if (attempt >= config.max_attempts) return null;
  if (retryAfterMs !== null) return retryAfterMs <= config.max_retry_after_ms ? retryAfterMs : null;
  const ceiling = Math.min(config.max_delay_ms, config.base_delay_ms * 2 ** (attempt - 1));
  return Math.floor(random() * ceiling);
}
