// One call's way through a model alias's deployments (the Resolver in resolver.ts holds the deployments' state).
import type { BreakerPass, CircuitBreaker } from '../breaker.js';
import type { SendFailure } from '../send.js';
import { type Candidate, candidates } from './cover.js';
import { limited, SHARED_FULL_MS, type SharedLimits } from './limits.js';
import { pick } from './pick.js';
import type { Blocked, Deployment, Resolver, RoutedTo, Target, Unroutable } from './resolver.js';
import { type AliasSpec, fallbackClassOf } from './types.js';

/**
 * One call's way through an alias: the deployment it is on now (with that deployment's breaker pass), the ones it
 * has tried, and the group it is in. A deployment is tried at most once per call by a fallback; the retry loop may
 * still repeat the current one.
 */
export class RoutePlan<P> {
  current: Deployment<P> | null = null;
  pass: BreakerPass | false = false;
  private group = 0;
  private readonly tried = new Set<Deployment<P>>();
  /** Deployments this call may not go to at all (the host cannot carry its request there), never picked. */
  private excluded: Set<Deployment<P>> | null = null;
  /** The surface an attempt on a deployment is sent on, for its record; null: not recorded. */
  surfaceOf: ((deployment: string) => string | null) | null = null;
  /** The key's scope on each upstream model, asked once per call (a key check is not free). */
  private readonly permitted = new Map<string, boolean>();

  private readonly spec: AliasSpec;
  private readonly groups: readonly Deployment<P>[][];
  /** The model the call's budget is reserved under: the dearest of its targets. */
  readonly reserveModel: string;
  private readonly served: readonly Candidate<P>[];

  constructor(
    private readonly resolver: Resolver<P>,
    readonly alias: string,
    found: { spec: AliasSpec; groups: Deployment<P>[][]; reserveModel: string; candidates: Candidate<P>[] },
    private readonly scope: (model: string) => boolean,
  ) {
    this.spec = found.spec;
    this.groups = found.groups;
    this.reserveModel = found.reserveModel;
    this.served = found.candidates;
  }

  /** Every provider + model this call may be served by, fallbacks included: those within the key's model scopes. */
  candidates(): Candidate<P>[] {
    const excluded = this.excluded;
    const served =
      excluded === null
        ? this.served
        : candidates(
            this.groups.flat().filter((d) => !excluded.has(d)),
            this.resolver.options.providerId,
          );
    return served.filter((c) => this.mayServe(c.model));
  }

  /** Takes deployments out of this call before it starts (ids of the alias's deployments; others are ignored). */
  exclude(ids: Iterable<string>): void {
    for (const id of ids) {
      const d = this.resolver.deployments.get(id);
      if (d === undefined) continue;
      this.excluded ??= new Set();
      this.excluded.add(d);
      this.tried.add(d);
    }
  }

  private mayServe(model: string): boolean {
    let allowed = this.permitted.get(model);
    if (allowed === undefined) {
      allowed = this.scope(model);
      this.permitted.set(model, allowed);
    }
    return allowed;
  }

  get target(): Target<P> {
    const d = this.current as Deployment<P>;
    return {
      deployment: d.spec.id,
      provider: d.provider,
      providerId: this.resolver.options.providerId(d.provider),
      model: d.spec.model,
    };
  }

  get servedModel(): string | null {
    return this.current?.spec.model ?? null;
  }

  get breaker(): CircuitBreaker {
    return this.resolver.breakerOf(this.current as Deployment<P>);
  }

  /**
   * The first deployment, or why none can take the call. Synchronous unless a deployment with an RPM/TPM limit is
   * picked while the limits are shared across hosts (one round trip to count it there).
   */
  start(): Unroutable | null | Promise<Unroutable | null> {
    const selected = this.select(0);
    if (typeof selected === 'boolean') return selected ? null : this.unroutable();
    return selected.then((ok) => (ok ? null : this.unroutable()));
  }

  /**
   * After a failed attempt: rest a rate-limited deployment, then move to another deployment of the group or the
   * next group, if the failure's class is one the config falls back on. False: stay (the retry loop decides).
   */
  next(failure: SendFailure): boolean | Promise<boolean> {
    const current = this.current as Deployment<P>;
    this.resolver.coolDown(current, failure);
    const cls = fallbackClassOf(failure);
    if (cls === null || !this.resolver.fallbackOn.has(cls)) return false;
    const pass = this.pass;
    const moved = (ok: boolean): boolean => {
      if (!ok) {
        this.current = current;
        this.pass = pass;
        return false;
      }
      current.inFlight -= 1;
      return true;
    };
    const selected = this.select(this.group);
    return typeof selected === 'boolean' ? moved(selected) : selected.then(moved);
  }

  /** An attempt was made on the current deployment: what its record names. */
  attempted(): RoutedTo {
    const d = this.current as Deployment<P>;
    const to: RoutedTo = {
      deployment: d.spec.id,
      model: d.spec.model,
      provider: this.resolver.options.providerId(d.provider),
    };
    const surface = this.surfaceOf?.(d.spec.id) ?? null;
    if (surface !== null) to.upstream_surface = surface;
    return to;
  }

  /** The call ended: its deployment's slot is freed and the tokens it used counted against its TPM. */
  finish(tokens: number | null): void {
    const d = this.current;
    if (d === null) return;
    d.inFlight -= 1;
    if (tokens !== null && tokens > 0) {
      d.tokens.add(this.resolver.options.clock(), tokens);
      if (d.spec.tpm !== null) this.resolver.limits?.addTokens(d.spec.id, tokens);
    }
    this.current = null;
  }

  /**
   * The first free, permitted, untried deployment from group `from` on; moves past a group only as fallback_on
   * allows. `carried`: why deployments of group `from` were passed over before a shared count was asked.
   */
  private select(from: number, carried?: ReadonlySet<Blocked>): boolean | Promise<boolean> {
    const { clock, random } = this.resolver.options;
    for (let g = from; g < this.groups.length; g += 1) {
      const group = this.groups[g] as Deployment<P>[];
      const now = clock();
      const blocked = new Set<Blocked>(g === from ? carried : undefined);
      const eligible = (d: Deployment<P>): boolean => {
        if (this.tried.has(d) || !this.mayServe(d.spec.model)) return false;
        const why = d.blocked(now, this.resolver.breakerOf(d));
        if (why !== null) blocked.add(why);
        return why === null;
      };
      for (;;) {
        const index = pick(group, eligible, this.spec.strategy, random);
        if (index < 0) break;
        const chosen = group[index] as Deployment<P>;
        this.tried.add(chosen);
        const limits = this.resolver.limits;
        if (limits !== null && limited(chosen.spec)) return this.claim(limits, chosen, g, now, blocked);
        if (this.take(chosen, g, now)) return true;
        blocked.add('breaker_open');
      }
      for (const why of blocked) if (!this.resolver.fallbackOn.has(why)) return false;
    }
    return false;
  }

  /** The call goes to `chosen` if its breaker lets it (the probe gate of shared breakers may still say no). */
  private take(chosen: Deployment<P>, g: number, now: number): boolean {
    const pass = this.resolver.breakerOf(chosen).pass();
    if (pass === false) return false;
    chosen.inFlight += 1;
    chosen.requests.add(now, 1);
    this.current = chosen;
    this.pass = pass;
    this.group = g;
    return true;
  }

  /**
   * `chosen` counted against its RPM/TPM shared across hosts before it is taken; used up there, it is skipped for
   * SHARED_FULL_MS on this host and the pick goes on in its group. Counted before the breaker's pass, so a refused
   * count never holds a probe slot (a pass then refused leaves one request counted that was not sent).
   */
  private async claim(
    limits: SharedLimits,
    chosen: Deployment<P>,
    g: number,
    now: number,
    blocked: Set<Blocked>,
  ): Promise<boolean> {
    let granted = true;
    try {
      granted = await limits.claim(chosen.spec, now);
    } catch {
      // A store that fails leaves each host its own windows (as with no shared store).
    }
    if (granted) {
      if (this.take(chosen, g, this.resolver.options.clock())) return true;
      blocked.add('breaker_open');
    } else {
      chosen.sharedFullUntil = this.resolver.options.clock() + SHARED_FULL_MS;
      blocked.add('rate_limited');
    }
    return this.select(g, blocked);
  }

  /** Why no deployment can take the call: open breakers, or rest and limits (the soonest free one's wait). */
  private unroutable(): Unroutable {
    const now = this.resolver.options.clock();
    let breakers = 0;
    let limited = 0;
    let soonest = Number.POSITIVE_INFINITY;
    for (const group of this.groups)
      for (const d of group) {
        if (this.excluded?.has(d) === true || !this.mayServe(d.spec.model)) continue;
        const breaker = this.resolver.breakerOf(d);
        const why = d.blocked(now, breaker);
        if (why === 'breaker_open') breakers += 1;
        else if (why === 'rate_limited') limited += 1;
        soonest = Math.min(soonest, d.freeInMs(now, breaker));
      }
    const retryAfterMs = Number.isFinite(soonest) ? Math.max(1000, soonest) : null;
    if (breakers + limited === 0)
      return {
        code: 'AUTH_SCOPE',
        message: `no target of model alias ${JSON.stringify(this.alias)} is within this key's model scopes`,
        retryAfterMs: null,
      };
    if (breakers > 0 && limited === 0)
      return {
        code: 'CIRCUIT_OPEN',
        message: `every deployment of model alias ${JSON.stringify(this.alias)} has its circuit breaker open`,
        retryAfterMs,
      };
    return {
      code: 'RATE_LIMITED',
      message: `every deployment of model alias ${JSON.stringify(this.alias)} is cooling down after a rate limit, at its RPM/TPM limit, or has its breaker open`,
      retryAfterMs,
    };
  }
}
