import type { BreakerRegistry, CircuitBreaker } from '../breaker.js';
import type { SendFailure } from '../send.js';
import { type Candidate, candidates, dearest } from './cover.js';
import type { SharedLimits } from './limits.js';
import { RoutePlan } from './plan.js';
import type { AliasSpec, DeploymentSpec, FallbackClass, RoutingConfig } from './types.js';
import { MinuteWindow } from './window.js';

/** Why a deployment cannot take a call now. */
export type Blocked = 'breaker_open' | 'rate_limited';

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
  /** The surface the attempt was sent on, when the host says (a gateway translating for some deployments). */
  upstream_surface?: string;
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

export { RoutePlan };
