/**
 * Circuit breaker for one provider+model. CLOSED counts consecutive failures; at the threshold it OPENs.
 * After `reset_timeout_ms` the next admission moves it to HALF_OPEN and lets `half_open_probes` calls
 * through; a probe success CLOSEs it, a probe failure re-OPENs it.
 */
export type BreakerState = 'CLOSED' | 'OPEN' | 'HALF_OPEN';

export interface BreakerConfig {
  failure_threshold: number;
  reset_timeout_ms: number;
  half_open_probes: number;
}

export interface BreakerSnapshot {
  key: string;
  state: BreakerState;
  consecutive_failures: number;
  opened_at: string | null;
  probes_in_flight: number;
}

export class CircuitBreaker {
  private state: BreakerState = 'CLOSED';
  private failures = 0;
  private openedAtMs: number | null = null;
  private probes = 0;

  constructor(
    readonly key: string,
    private readonly config: BreakerConfig,
    private readonly clock: () => number,
  ) {}

  /** May a call go through now? Moves OPEN → HALF_OPEN when the reset timeout has passed. */
  admit(): boolean {
    if (this.state === 'OPEN') {
      if (this.clock() - (this.openedAtMs ?? 0) < this.config.reset_timeout_ms) return false;
      this.state = 'HALF_OPEN';
      this.probes = 0;
    }
    if (this.state === 'HALF_OPEN') {
      if (this.probes >= this.config.half_open_probes) return false;
      this.probes += 1;
    }
    return true;
  }

  recordSuccess(): void {
    this.state = 'CLOSED';
    this.failures = 0;
    this.openedAtMs = null;
    this.probes = 0;
  }

  recordFailure(): void {
    this.failures += 1;
    if (this.state === 'HALF_OPEN' || this.failures >= this.config.failure_threshold) {
      this.state = 'OPEN';
      this.openedAtMs = this.clock();
      this.probes = 0;
    }
  }

  /** A call that was admitted but never reached the provider (e.g. a ledger failure) gives its probe back. */
  releaseProbe(): void {
    if (this.state === 'HALF_OPEN' && this.probes > 0) this.probes -= 1;
  }

  /** Resume from a snapshot persisted by an earlier process. */
  restore(snapshot: BreakerSnapshot): void {
    this.state = snapshot.state;
    this.failures = snapshot.consecutive_failures;
    this.openedAtMs = snapshot.opened_at === null ? null : Date.parse(snapshot.opened_at);
    this.probes = 0;
  }

  snapshot(): BreakerSnapshot {
    return {
      key: this.key,
      state: this.state,
      consecutive_failures: this.failures,
      opened_at: this.openedAtMs === null ? null : new Date(this.openedAtMs).toISOString(),
      probes_in_flight: this.probes,
    };
  }
}

export class BreakerRegistry {
  private readonly breakers = new Map<string, CircuitBreaker>();

  constructor(
    private readonly config: BreakerConfig,
    private readonly clock: () => number,
  ) {}

  for(providerId: string, modelId: string): CircuitBreaker {
    const key = `${providerId}/${modelId}`;
    let breaker = this.breakers.get(key);
    if (!breaker) {
      breaker = new CircuitBreaker(key, this.config, this.clock);
      this.breakers.set(key, breaker);
    }
    return breaker;
  }

  restore(snapshots: readonly BreakerSnapshot[]): void {
    for (const snapshot of snapshots) {
      const [providerId, ...model] = snapshot.key.split('/');
      this.for(providerId ?? '', model.join('/')).restore(snapshot);
    }
  }

  snapshot(): BreakerSnapshot[] {
    return [...this.breakers.values()].map((b) => b.snapshot()).sort((a, b) => a.key.localeCompare(b.key));
  }
}
