import type { Clock } from './clock.js';
import type { ReplyHeaders } from './transport.js';

/**
 * Milliseconds the provider asked us to wait, from `retry-after-ms` (OpenAI-style) or `retry-after`
 * (delta-seconds or an HTTP-date, measured against the injected clock). Null when absent or unparsable;
 * a date in the past is 0.
 */
export function parseRetryAfter(headers: ReplyHeaders, clock: Clock): number | null {
  const ms = parseNonNegative(headers.get('retry-after-ms'));
  if (ms !== null) return Math.ceil(ms);
  const value = headers.get('retry-after')?.trim();
  if (value === undefined || value === '') return null;
  const seconds = parseNonNegative(value);
  if (seconds !== null) return Math.ceil(seconds * 1000);
  if (/^[+-]?[\d.]+$/.test(value)) return null;
  const at = Date.parse(value);
  if (Number.isNaN(at)) return null;
  return Math.max(0, at - clock.now());
}

function parseNonNegative(value: string | null | undefined): number | null {
  if (value === null || value === undefined || !/^\d+(\.\d+)?$/.test(value.trim())) return null;
  const n = Number(value.trim());
  return Number.isFinite(n) ? n : null;
}
