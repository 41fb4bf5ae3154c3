import type { BreakerPass, BreakerRegistry, CircuitBreaker } from '../breaker.js';
import type { SendFailure } from '../send.js';
import { type Candidate, candidates, dearest } from './cover.js';
import { limited, SHARED_FULL_MS, type SharedLimits } from './limits.js';
import { pick } from './pick.js';
import {
  type AliasSpec,
  type DeploymentSpec,
  type FallbackClass,
  fallbackClassOf,
  type RoutingConfig,
} from './types.js';
import { MinuteWindow } from './window.js';

/** Why a deployment cannot take a call now. */
type Blocked = 'breaker_open' | 'rate_limited';

/** One upstream deployment and what this host knows of it: calls in flight, the last minute's use, its cooldown. */
export class Deployment<P> {
  inFlight = 0;
  /** Epoch ms before which the deployment takes nothing (its upstream said rate-limited). */
  cooldownUntil = 0;
  /** Epoch ms before which the deployment is skipped: its RPM/TPM shared across hosts was found used up. */
  sharedFullUntil = 0;
  readonly requests = new MinuteWindow();
  readonly tokens = new MinuteWindow();
  readonly weight: number;
  readonly breakerKey: string;

  constructor(
    readonly spec: DeploymentSpec,
    readonly provider: P,
  ) {
    this.weight = spec.weight;
    // Its own breaker, apart from the family's (a key's upstream failing says nothing of another key's).
    this.breakerKey = `deployment:${spec.id}/${spec.model}`;
  }

  blocked(now: number, breaker: CircuitBreaker): Blocked | null {
    if (breaker.refusing()) return 'breaker_open';
    if (now < this.cooldownUntil || now < this.sharedFullUntil) return 'rate_limited';
    const { rpm, tpm } = this.spec;
    if (rpm !== null && this.requests.sum(now) >= rpm) return 'rate_limited';
    if (tpm !== null && this.tokens.sum(now) >= tpm) return 'rate_limited';
    return null;
  }

  /** When the deployment may take a call again, for a refusal's retry-after (ms from now). */
  freeInMs(now: number, breaker: CircuitBreaker): number {
    const reopens = breaker.reopensAt();
    if (reopens !== null && reopens > now) return reopens - now;
    if (now < this.cooldownUntil) return this.cooldownUntil - now;
    // A spent minute window frees its oldest second within a second.
    return 1000;
  }
}

/** What an attempt went to: the deployment, its provider (a wire provider in the gateway) and the upstream model. */
export interface Target<P> {
  readonly deployment: string;
  readonly provider: P;
  readonly providerId: string;
  readonly model: string;
}

/** The fields a routed attempt adds to its AttemptRecord. */
export interface RoutedTo {
  deployment: string;
  model: string;
  provider: string;
}

export interface ResolverOptions<P> {
  config: RoutingConfig;
  /** Each deployment's provider, constructed by the host (keys read from the environment there). */
  providers: ReadonlyMap<string, P>;
  /** The provider id a record names for a provider. */
  providerId: (provider: P) => string;
  breakers: BreakerRegistry;
  clock: () => number;
  random: () => number;
  /** A model's price weight (input + output per Mtok), to reserve for the dearest target; null: unpriced. */
  price?: (model: string) => number | null;
}

/** The refusal of a call none of whose targets can take it now. */
export interface Unroutable {
  code: string;
  message: string;
  retryAfterMs: number | null;
}

/**
 * The deployments and aliases of the routing config, and their state on this host. `plan()` is the one entry:
 * O(1) to find an alias, then a pick over its groups (the operator's list, never the call history).
 */
/** A deployment rests at most this long whatever its upstream's retry-after says (or another host's clock). */
export const MAX_COOLDOWN_MS = 3_600_000;

/** Told of a cooldown this host started: the deployment's id and the epoch ms it ends at. */
export type CooldownListener = (deployment: string, untilMs: number) => void;

export class Resolver<P> {
  private cooldownListener: CooldownListener | null = null;
  /** The RPM/TPM counts shared with other hosts (router/pg/shared-limits.ts); null: this host's own. */
  limits: SharedLimits | null = null;
  private readonly aliases = new Map<
    string,
    { spec: AliasSpec; groups: Deployment<P>[][]; reserveModel: string; candidates: Candidate<P>[] }
  >();
  readonly deployments = new Map<string, Deployment<P>>();
  readonly fallbackOn: ReadonlySet<FallbackClass>;

  constructor(readonly options: ResolverOptions<P>) {
    const { config } = options;
    for (const spec of config.deployments) {
      const provider = options.providers.get(spec.id);
      if (provider === undefined) throw new Error(`routing: no provider was constructed for deployment ${spec.id}`);
      this.deployments.set(spec.id, new Deployment(spec, provider));
    }
    for (const [alias, spec] of Object.entries(config.aliases)) {
      const groups = spec.targets.map((ids) => ids.map((id) => this.deployments.get(id) as Deployment<P>));
      const reserveModel = dearest(groups.flat(), options.price);
      this.aliases.set(alias, {
        spec,
        groups,
        reserveModel,
        candidates: candidates(groups.flat(), options.providerId),
      });
    }
    this.fallbackOn = new Set(config.fallback_on);
  }

  /** Whether a client's model name is an alias (else the call goes the family's way, as without routing). */
  has(alias: string): boolean {
    return this.aliases.has(alias);
  }

  /** A new call's plan through an alias's targets; `mayServe` is the key's model scope on an upstream model. */
  plan(alias: string, mayServe: (model: string) => boolean): RoutePlan<P> | null {
    const found = this.aliases.get(alias);
    if (found === undefined) return null;
    return new RoutePlan(this, alias, found, mayServe);
  }

  breakerOf(deployment: Deployment<P>): CircuitBreaker {
    return this.options.breakers.byKey(deployment.breakerKey);
  }

  /** A rate-limited answer rests the deployment for its retry-after (or the config's cooldown), on every host sharing it. */
  coolDown(deployment: Deployment<P>, failure: SendFailure): void {
    if (failure.kind !== 'rate_limited') return;
    const rest = Math.min(failure.retry_after_ms ?? this.options.config.cooldown_ms, MAX_COOLDOWN_MS);
    const until = this.options.clock() + rest;
    if (until <= deployment.cooldownUntil) return;
    deployment.cooldownUntil = until;
    try {
      this.cooldownListener?.(deployment.spec.id, until);
    } catch {
      // Sharing is best effort: this host rests the deployment whatever its listener does.
    }
  }

  /** Who hears of this host's cooldowns (the shared store: router/pg/shared-cooldowns.ts); null: no one. */
  onCooldown(listener: CooldownListener | null): void {
    this.cooldownListener = listener;
  }

  /** Count the deployments' RPM/TPM with the other hosts sharing `limits`; null: each host its own. */
  shareLimits(limits: SharedLimits | null): void {
    this.limits = limits;
  }

  /** A cooldown another host started: adopted if later than this host's, never announced again. */
  adoptCooldown(deploymentId: string, untilMs: number): void {
    const deployment = this.deployments.get(deploymentId);
    if (deployment === undefined) return;
    const until = Math.min(untilMs, this.options.clock() + MAX_COOLDOWN_MS);
    if (until > deployment.cooldownUntil) deployment.cooldownUntil = until;
  }
}

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
    return this.served.filter((c) => this.mayServe(c.model));
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
    return { deployment: d.spec.id, model: d.spec.model, provider: this.resolver.options.providerId(d.provider) };
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
        if (!this.mayServe(d.spec.model)) continue;
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
