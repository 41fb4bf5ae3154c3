import type { AppendInput } from '#kernel/ledger/index.js';

/**
 * Refusals of requests that carry no authentic key: the codes anyone can provoke without a secret. Each is a
 * durable ledger write, so an open port flooded with junk would fill the disk and the chain; past a rate they are
 * counted instead of recorded one by one. Refusals of an authentic key (expired, wrong scope, over budget, revoked)
 * are always recorded: their sender is known and accountable.
 */
export const UNAUTHENTICATED_CODES: ReadonlySet<string> = new Set([
  'AUTH_MISSING',
  'AUTH_MALFORMED',
  'AUTH_UNKNOWN_KEY',
  'AUTH_BAD_SIGNATURE',
]);

export interface RefusalSamplerOptions {
  /** Unauthenticated refusals recorded per second (and the burst allowed at once). */
  perSecond: number;
  clock?: () => number;
}

/** A token bucket over unauthenticated refusals; what it turns away is counted per code into one summary record. */
export class RefusalSampler {
  readonly perSecond: number;
  private readonly clock: () => number;
  private tokens: number;
  private refilledAt: number;
  private readonly suppressed = new Map<string, number>();
  private firstSuppressedAt: number | null = null;
  private lastSuppressedAt: number | null = null;

  constructor(options: RefusalSamplerOptions) {
    this.perSecond = options.perSecond;
    this.clock = options.clock ?? Date.now;
    this.tokens = options.perSecond;
    this.refilledAt = this.clock();
  }

  /** True: record this refusal. False: it was counted (and will be summarised) instead. */
  admit(code: string): boolean {
    const now = this.clock();
    this.tokens = Math.min(this.perSecond, this.tokens + ((now - this.refilledAt) / 1000) * this.perSecond);
    this.refilledAt = now;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return true;
    }
    this.suppressed.set(code, (this.suppressed.get(code) ?? 0) + 1);
    this.firstSuppressedAt ??= now;
    this.lastSuppressedAt = now;
    return false;
  }

  /** Refusals counted since the last summary. */
  get pending(): number {
    let n = 0;
    for (const count of this.suppressed.values()) n += count;
    return n;
  }

  /** The REFUSALS_SUPPRESSED record for what was counted since the last one (null: nothing), and reset. */
  takeSummary(): AppendInput | null {
    const total = this.pending;
    if (total === 0) return null;
    const counts = Object.fromEntries([...this.suppressed.entries()].sort(([a], [b]) => a.localeCompare(b)));
    const record: AppendInput = {
      event_type: 'REFUSALS_SUPPRESSED',
      submission_id: 'gateway',
      decision: 'SUPPRESSED',
      reason: `${total} refusals of requests without an authentic key were counted, not recorded one by one (over ${this.perSecond}/s)`,
      metadata: {
        counts,
        total,
        first_at: new Date(this.firstSuppressedAt ?? this.clock()).toISOString(),
        last_at: new Date(this.lastSuppressedAt ?? this.clock()).toISOString(),
        per_second: this.perSecond,
      },
    };
    this.suppressed.clear();
    this.firstSuppressedAt = null;
    this.lastSuppressedAt = null;
    return record;
  }
}
