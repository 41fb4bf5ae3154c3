import type pg from 'pg';
import type { SharedLimits } from '../routing/limits.js';
import type { DeploymentSpec } from '../routing/types.js';
import { describeError, ensureRouterTables } from './tables.js';

/** What the shared counts feed: a routing resolver's (router/routing/resolver.ts). */
export interface LimitsTarget {
  shareLimits(limits: SharedLimits | null): void;
}

// One row per deployment holds this minute's counts and the last minute's: the minute before `now` is weighed by
// the share of it still inside the sliding minute ending now (the sliding-window counter). A row is rolled forward
// in the statement that touches it, and a host whose clock is behind counts into the row's newer minute.
const cur = (col: string): string => `(CASE WHEN c.minute >= $2 THEN c.${col} ELSE 0 END)`;
const prev = (col: string): string =>
  `(CASE WHEN c.minute >= $2 THEN c.prev_${col} WHEN c.minute = $2 - 1 THEN c.${col} ELSE 0 END)`;
const used = (col: string): string => `(${prev(col)} * $3::float8 + ${cur(col)})`;
const ROLL = `prev_requests = ${prev('requests')}, prev_tokens = ${prev('tokens')}, minute = GREATEST(c.minute, $2)`;

// Counted only while the row leaves room: ON CONFLICT DO UPDATE holds the row's lock and judges its newest version,
// so hosts counting at once are serialised on it and never both take the last request of a limit.
const CLAIM_SQL = `INSERT INTO cplane_rate_counts AS c (key, minute, requests, tokens, prev_requests, prev_tokens)
VALUES ($1, $2, 1, 0, 0, 0)
ON CONFLICT (key) DO UPDATE SET requests = ${cur('requests')} + 1, tokens = ${cur('tokens')}, ${ROLL}
WHERE ($4::bigint IS NULL OR ${used('requests')} + 1 <= $4) AND ($5::bigint IS NULL OR ${used('tokens')} < $5)
RETURNING requests`;
const ADD_TOKENS_SQL = `INSERT INTO cplane_rate_counts AS c (key, minute, requests, tokens, prev_requests, prev_tokens)
SELECT k, $2, 0, t, 0, 0 FROM unnest($1::text[], $3::bigint[]) AS x(k, t)
ON CONFLICT (key) DO UPDATE SET requests = ${cur('requests')}, tokens = ${cur('tokens')} + EXCLUDED.tokens, ${ROLL}`;

/**
 * The routing deployments' RPM/TPM counted once across the gateway hosts sharing one PostgreSQL database (table
 * cplane_rate_counts). Cost: one statement per call that picks a deployment with a limit (none for a deployment
 * without one, none while it is known used up); tokens, known only once a call ends, are added in one statement
 * per flush for all deployments, off the calls' path (TPM therefore lags by a flush). One row per deployment:
 * bounded by the config, never by traffic.
 */
export class SharedRateCounts implements SharedLimits {
  private readonly pending = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | null = null;
  lastError: string | null = null;

  private constructor(
    private readonly pool: pg.Pool,
    private readonly clock: () => number,
  ) {}

  static async start(
    pool: pg.Pool,
    target: LimitsTarget,
    options: { flushMs?: number; clock?: () => number } = {},
  ): Promise<SharedRateCounts> {
    await ensureRouterTables(pool);
    const counts = new SharedRateCounts(pool, options.clock ?? Date.now);
    counts.timer = setInterval(() => void counts.flush(), options.flushMs ?? 250);
    counts.timer.unref();
    target.shareLimits(counts);
    return counts;
  }

  async claim(deployment: DeploymentSpec, nowMs: number): Promise<boolean> {
    try {
      const { minute, weight } = windowAt(nowMs);
      const { rows } = await this.pool.query(CLAIM_SQL, [
        deployment.id,
        minute,
        weight,
        deployment.rpm,
        deployment.tpm,
      ]);
      this.lastError = null;
      return rows.length > 0;
    } catch (error) {
      this.lastError = describeError(error);
      return true;
    }
  }

  addTokens(deploymentId: string, tokens: number): void {
    this.pending.set(deploymentId, (this.pending.get(deploymentId) ?? 0) + Math.round(tokens));
  }

  /** One flush at a time: the tokens pending for every deployment in one statement (kept for the next on failure). */
  flush(): Promise<void> {
    if (this.pending.size === 0) return this.flushing ?? Promise.resolve();
    this.flushing ??= this.write().finally(() => {
      this.flushing = null;
    });
    return this.flushing;
  }

  private async write(): Promise<void> {
    const batch = [...this.pending];
    this.pending.clear();
    try {
      const { minute } = windowAt(this.clock());
      await this.pool.query(ADD_TOKENS_SQL, [batch.map(([k]) => k), minute, batch.map(([, t]) => t)]);
      this.lastError = null;
    } catch (error) {
      for (const [k, t] of batch) this.pending.set(k, (this.pending.get(k) ?? 0) + t);
      this.lastError = describeError(error);
    }
  }

  /** The pending tokens written, then no more. */
  async stop(target: LimitsTarget): Promise<void> {
    clearInterval(this.timer);
    target.shareLimits(null);
    await this.flushing;
    await this.flush();
  }
}

/** The minute `nowMs` is in, and the share of the minute before it still inside the sliding minute ending now. */
function windowAt(nowMs: number): { minute: number; weight: number } {
  const minute = Math.floor(nowMs / 60_000);
  return { minute, weight: 1 - (nowMs - minute * 60_000) / 60_000 };
}
