import { CpError, show } from '../errors.js';
import type { Clock, IdSource } from './entry.js';
import type { ConnectionOptions } from './open.js';

export interface LedgerOptions extends ConnectionOptions {
  /** The writer's clock: entry timestamps. */
  clock?: Clock;
  idSource?: IdSource;
  /** How far ahead of real time an entry's timestamp may be (default 5 minutes, 1 s to 24 h). */
  maxClockSkewMs?: number;
  /** Real time, against which the writer's clock and the head's timestamp are judged (default the system clock). */
  realClock?: Clock;
}

export const DEFAULT_MAX_CLOCK_SKEW_MS = 5 * 60_000;
const CLOCK_SKEW_BOUNDS_MS = [1000, 24 * 60 * 60_000] as const;

export function clockSkewOption(value: number | undefined): number {
  if (value === undefined) return DEFAULT_MAX_CLOCK_SKEW_MS;
  if (!Number.isSafeInteger(value) || value < CLOCK_SKEW_BOUNDS_MS[0] || value > CLOCK_SKEW_BOUNDS_MS[1]) {
    throw new CpError(
      'ERR_LEDGER_OPTION_INVALID',
      `maxClockSkewMs must be an integer from ${CLOCK_SKEW_BOUNDS_MS[0]} to ${CLOCK_SKEW_BOUNDS_MS[1]}, got ${show(value)}`,
      {
        hint: `leave it unset for the default of ${DEFAULT_MAX_CLOCK_SKEW_MS} ms`,
        details: { field: 'maxClockSkewMs' },
      },
    );
  }
  return value;
}

/** The writer's clock read past the skew limit: nothing is appended. */
export function clockAhead(ms: number, limitMs: number, maxSkewMs: number): CpError {
  return new CpError(
    'ERR_LEDGER_CLOCK_SKEW',
    `the writer's clock reads ${Number.isFinite(ms) ? new Date(ms).toISOString() : show(ms)}, more than ${maxSkewMs} ms ahead of real time ${new Date(limitMs - maxSkewMs).toISOString()}; nothing was appended`,
    {
      hint: 'fix the clock of the process that writes to the ledger (or its injected clock)',
      details: { clock_ms: Number.isFinite(ms) ? ms : null, max_skew_ms: maxSkewMs },
    },
  );
}
