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

/**
 * Told of a breaker's transitions that matter beyond this process: it opened (CLOSED → OPEN, HALF_OPEN → OPEN, or
 * re-armed with a later opened_at by a failure while OPEN) or closed after being open or half-open. Not told of
 * OPEN → HALF_OPEN (which process probes is the ProbeGate's to say), nor of restore() (a state adopted from elsewhere must not be
 * announced again, or hosts would echo each other). Called synchronously on the hot path: it must be quick.
 */
export type BreakerListener = (snapshot: BreakerSnapshot) => void;

/**
 * Asked, once the reset timeout of the opening at `openedAtMs` has passed, whether this process may probe now; false
 * keeps the breaker OPEN (the call is refused) and it is asked again at the next admission. Hosts sharing provider
 * health use it so that one of them probes, not each. Called synchronously on the hot path: it must be quick.
 */
export type ProbeGate = (key: string, openedAtMs: number) => boolean;

/**
 * How many breakers a registry holds before it forgets the ones at rest. Model names are the caller's (a key holder
 * can send a new one with every count_tokens call), so without a bound each name would cost memory for the process's
 * life and a line in the persisted state, whose read limit a flood would push past, losing every open breaker with it.
 */
export const MAX_BREAKERS = 1024;

/**
 * What admit() hands a call it lets through, given back with the call's outcome: whether the call is a probe of the
 * current half-open trial. Only a probe's outcome decides a half-open breaker: a call admitted before the breaker
 * opened can end while it is half-open, and its failure must not re-open it nor its end free the probe's slot.
 */
export interface BreakerPass {
  readonly trial: number | null;
}

const CLOSED_PASS: BreakerPass = Object.freeze({ trial: null });

export class CircuitBreaker {
  private state: BreakerState = 'CLOSED';
  private failures = 0;
  private openedAtMs: number | null = null;
  private probes = 0;
  /** Counts OPEN → HALF_OPEN moves: a probe's pass names the trial it was admitted to. */
  private trial = 0;

  constructor(
    readonly key: string,
    private readonly config: BreakerConfig,
    private readonly clock: () => number,
    private readonly onTransition: BreakerListener | null = null,
    private readonly mayProbe: ProbeGate = () => true,
    private readonly home: (breaker: CircuitBreaker) => CircuitBreaker = (breaker) => breaker,
  ) {}

  /** Nothing to remember: a new breaker for this key would behave the same. */
  atRest(): boolean {
    return this.state === 'CLOSED' && this.failures === 0 && this.probes === 0;
  }

  /** May a call go through now? Moves OPEN → HALF_OPEN when the reset timeout has passed and the gate agrees. */
  admit(): boolean {
    return this.pass() !== false;
  }

  /**
   * Whether pass() would refuse now without asking the probe gate, with no side effect: a balancer skips such a
   * breaker without taking a probe slot it would not use.
   */
  refusing(): boolean {
    if (this.state === 'OPEN') return this.clock() - (this.openedAtMs ?? 0) < this.config.reset_timeout_ms;
    return this.state === 'HALF_OPEN' && this.probes >= this.config.half_open_probes;
  }

  /** When an open breaker may next be probed (epoch ms), else null. */
  reopensAt(): number | null {
    return this.state === 'OPEN' ? (this.openedAtMs ?? 0) + this.config.reset_timeout_ms : null;
  }

  /** admit(), handing the call its pass (false: refused), to give back with the call's outcome. */
  pass(): BreakerPass | false {
    if (this.state === 'OPEN') {
      const openedAtMs = this.openedAtMs ?? 0;
      if (this.clock() - openedAtMs < this.config.reset_timeout_ms) return false;
      if (!this.gate(openedAtMs)) return false;
      this.state = 'HALF_OPEN';
      this.probes = 0;
      this.trial += 1;
    }
    if (this.state === 'HALF_OPEN') {
      if (this.probes >= this.config.half_open_probes) return false;
      this.probes += 1;
      return { trial: this.trial };
    }
    return CLOSED_PASS;
  }

  /** An outcome a half-open breaker must not hear: the call holding `pass` is not one of its probes. */
  private notAProbe(pass: BreakerPass | undefined): boolean {
    return this.state === 'HALF_OPEN' && pass !== undefined && pass.trial !== this.trial;
  }

  /** `pass`: what admit() gave the call (omitted: the outcome counts whatever the call was). */
  recordSuccess(pass?: BreakerPass): void {
    const live = this.home(this);
    if (live !== this) {
      live.recordSuccess(pass);
      return;
    }
    if (this.notAProbe(pass)) return;
    // A call admitted before the breaker opened (on this host, or on another one whose opening was adopted) can
    // answer after it: that says nothing about the provider now. Only a probe (HALF_OPEN) closes an open breaker.
    if (this.state === 'OPEN') return;
    const wasOpen = this.state !== 'CLOSED';
    this.state = 'CLOSED';
    this.failures = 0;
    this.openedAtMs = null;
    this.probes = 0;
    if (wasOpen) this.announce();
  }

  recordFailure(pass?: BreakerPass): void {
    // A call holding a breaker the registry forgot while it was in flight reports to the one that now has its key.
    const live = this.home(this);
    if (live !== this) {
      live.recordFailure(pass);
      return;
    }
    if (this.notAProbe(pass)) return;
    this.failures += 1;
    if (this.state === 'HALF_OPEN' || this.failures >= this.config.failure_threshold) {
      const before = this.openedAtMs;
      this.state = 'OPEN';
      this.openedAtMs = this.clock();
      this.probes = 0;
      if (this.openedAtMs !== before) this.announce();
    }
  }

  /** A call that was admitted but never reached the provider (e.g. a ledger failure) gives its probe back. */
  releaseProbe(pass?: BreakerPass): void {
    if (this.notAProbe(pass)) return;
    if (this.state === 'HALF_OPEN' && this.probes > 0) this.probes -= 1;
  }

  /** Resume from a snapshot persisted by an earlier process. */
  restore(snapshot: BreakerSnapshot): void {
    this.state = snapshot.state;
    this.failures = snapshot.consecutive_failures;
    this.openedAtMs = snapshot.opened_at === null ? null : Date.parse(snapshot.opened_at);
    this.probes = 0;
  }

  private gate(openedAtMs: number): boolean {
    try {
      return this.mayProbe(this.key, openedAtMs);
    } catch {
      // A gate's fault must not keep a provider shut: probe as a breaker on its own would.
      return true;
    }
  }

  private announce(): void {
    try {
      this.onTransition?.(this.snapshot());
    } catch {
      // An observer's fault must never fail the call being routed.
    }
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
  private readonly listeners = new Set<BreakerListener>();
  private readonly emit: BreakerListener = (snapshot) => {
    for (const listener of this.listeners) listener(snapshot);
  };
  private probeGate: ProbeGate | null = null;
  private readonly mayProbe: ProbeGate = (key, openedAtMs) => this.probeGate?.(key, openedAtMs) ?? true;
  private readonly home = (breaker: CircuitBreaker): CircuitBreaker => {
    const live = this.breakers.get(breaker.key);
    if (live !== undefined) return live;
    this.admitKey(breaker.key, breaker);
    return breaker;
  };

  constructor(
    readonly config: BreakerConfig,
    private readonly clock: () => number,
  ) {}

  /** Who decides whether a breaker whose reset timeout passed may probe (null: each breaker probes on its own). */
  setProbeGate(gate: ProbeGate | null): void {
    this.probeGate = gate;
  }

  for(providerId: string, modelId: string): CircuitBreaker {
    return this.byKey(`${providerId}/${modelId}`);
  }

  /** The breaker for a `provider/model` key as snapshots name it. */
  byKey(key: string): CircuitBreaker {
    let breaker = this.breakers.get(key);
    if (!breaker) {
      breaker = new CircuitBreaker(key, this.config, this.clock, this.emit, this.mayProbe, this.home);
      this.admitKey(key, breaker);
    }
    return breaker;
  }

  /**
   * Make room before adding a key: first the breakers at rest go, then, if failures on that many names still fill
   * it, the closed ones (a partial failure count); an open or half-open breaker is never forgotten.
   */
  private admitKey(key: string, breaker: CircuitBreaker): void {
    if (this.breakers.size >= MAX_BREAKERS) this.forget((b) => b.atRest());
    if (this.breakers.size >= MAX_BREAKERS) this.forget((b) => b.snapshot().state === 'CLOSED');
    this.breakers.set(key, breaker);
  }

  private forget(which: (breaker: CircuitBreaker) => boolean): void {
    for (const [key, breaker] of this.breakers) if (which(breaker)) this.breakers.delete(key);
  }

  /** Be told of every breaker's transitions (BreakerListener); returns the function that stops it. */
  onTransition(listener: BreakerListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  restore(snapshots: readonly BreakerSnapshot[]): void {
    const now = this.clock();
    for (const snapshot of snapshots) {
      const [providerId, ...model] = snapshot.key.split('/');
      // An opening later than now was stamped by a clock since stepped back: waiting for it would keep the provider
      // shut for as long as the step, so its reset timeout runs from now.
      const openedAtMs = snapshot.opened_at === null ? null : Date.parse(snapshot.opened_at);
      const stepped = openedAtMs !== null && openedAtMs > now;
      this.for(providerId ?? '', model.join('/')).restore(
        stepped ? { ...snapshot, opened_at: new Date(now).toISOString() } : snapshot,
      );
    }
  }

  snapshot(): BreakerSnapshot[] {
    return [...this.breakers.values()].map((b) => b.snapshot()).sort((a, b) => a.key.localeCompare(b.key));
  }
}
