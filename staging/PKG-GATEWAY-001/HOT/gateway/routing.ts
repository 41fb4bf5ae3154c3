import { CpError, isCpError, show } from '#kernel/errors.js';
import type { Provider } from '#providers/spec.js';
import { isWireProvider, type WireProvider, type WireSurface } from '#providers/wire/spec.js';
import type { BreakerRegistry } from '#router/breaker.js';
import { createInstalledProvider } from '#router/open.js';
import { Resolver, type RoutePlan } from '#router/routing/resolver.js';
import {
  type AliasSpec,
  type DeploymentSpec,
  FALLBACK_CLASSES,
  type FallbackClass,
  type RoutingConfig,
} from '#router/routing/types.js';
import { type AliasWays, aliasWays } from './routed-legs.js';
import { servingModel } from './targets.js';

/** Fallback classes when the config names none: every failure that says nothing about the request itself. */
const DEFAULT_FALLBACK_ON: readonly FallbackClass[] = FALLBACK_CLASSES;
export const DEFAULT_COOLDOWN_MS = 5000;

function invalid(message: string, details: Record<string, unknown>): CpError {
  return new CpError('ERR_ROUTING_CONFIG_INVALID', `gateway.routing: ${message}`, {
    hint: 'see docs/routing.md; `cplane config get gateway.routing` shows it, `cplane config set gateway.routing …` fixes it',
    details,
  });
}

/**
 * The gateway's `routing` section (schema-checked by `cplane config set`), checked for what a schema cannot say:
 * ids unique, every target a deployment, an alias naming a deployment at most once, and every credential named
 * set in the environment (its value is never read into an error). Null when there is no routing section.
 */
export function parseRouting(value: unknown, env: NodeJS.ProcessEnv): RoutingConfig | null {
  if (value === undefined || value === null) return null;
  const raw = value as {
    deployments: Array<Omit<DeploymentSpec, 'weight' | 'rpm' | 'tpm' | 'region'> & Partial<DeploymentSpec>>;
    aliases: Record<string, { targets: Array<string | string[]>; strategy?: AliasSpec['strategy'] }>;
    fallback_on?: FallbackClass[];
    cooldown_ms?: number;
  };
  const deployments: DeploymentSpec[] = [];
  const ids = new Set<string>();
  for (const d of raw.deployments) {
    if (ids.has(d.id)) throw invalid(`deployment id ${show(d.id)} is used twice`, { deployment: d.id });
    ids.add(d.id);
    const secret = env[d.credential_env];
    if (secret === undefined || secret === '')
      throw invalid(`deployment ${show(d.id)} names credential_env ${show(d.credential_env)}, which is not set`, {
        deployment: d.id,
        credential_env: d.credential_env,
      });
    deployments.push({
      id: d.id,
      provider: d.provider,
      base_url: d.base_url.replace(/\/+$/, ''),
      credential_env: d.credential_env,
      model: d.model,
      weight: d.weight ?? 1,
      rpm: d.rpm ?? null,
      tpm: d.tpm ?? null,
      region: d.region ?? null,
    });
  }
  const aliases: Record<string, AliasSpec> = Object.create(null) as Record<string, AliasSpec>;
  for (const [alias, spec] of Object.entries(raw.aliases)) {
    const targets = spec.targets.map((t) => (typeof t === 'string' ? [t] : t));
    const seen = new Set<string>();
    for (const id of targets.flat()) {
      if (!ids.has(id))
        throw invalid(`alias ${show(alias)} names deployment ${show(id)}, which is not among the deployments`, {
          alias,
          deployment: id,
          deployments: [...ids],
        });
      if (seen.has(id))
        throw invalid(`alias ${show(alias)} names deployment ${show(id)} twice`, { alias, deployment: id });
      seen.add(id);
    }
    aliases[alias] = { targets, strategy: spec.strategy ?? 'weighted' };
  }
  return {
    deployments,
    aliases,
    fallback_on: raw.fallback_on ?? [...DEFAULT_FALLBACK_ON],
    cooldown_ms: raw.cooldown_ms ?? DEFAULT_COOLDOWN_MS,
  };
}

/** The deployments' providers, constructed before the router opens (their keys join the values never recorded). */
export interface RoutingProviders {
  config: RoutingConfig;
  providers: Map<string, WireProvider & Provider>;
  secrets: string[];
}

/** Each deployment's provider: its installed package with the deployment's base URL and the key its env var holds. */
export async function routingProviders(
  root: string,
  env: NodeJS.ProcessEnv,
  config: RoutingConfig,
): Promise<RoutingProviders> {
  const providers = new Map<string, WireProvider & Provider>();
  const secrets: string[] = [];
  for (const d of config.deployments) {
    const apiKey = env[d.credential_env] as string;
    secrets.push(apiKey);
    let provider: Provider;
    try {
      provider = await createInstalledProvider(root, d.provider, env, { base_url: d.base_url, api_key: apiKey });
    } catch (error) {
      if (!isCpError(error)) throw error;
      throw invalid(`deployment ${show(d.id)}: ${error.code}: ${error.message}`, {
        deployment: d.id,
        cause: error.code,
      });
    }
    if (!isWireProvider(provider) || provider.surfaces.length === 0)
      throw invalid(`deployment ${show(d.id)}: provider ${show(d.provider)} cannot serve as a gateway upstream`, {
        deployment: d.id,
        provider: d.provider,
      });
    providers.set(d.id, provider);
  }
  return { config, providers, secrets };
}

/**
 * The gateway's routing: the resolver, and how each alias's deployments are reached from each client surface (in
 * its own format or translated, routed-legs.ts), worked out once per alias, surface and streaming — a bounded set:
 * the config's aliases times the gateway's surfaces.
 */
export class GatewayRouting {
  private readonly reached = new Map<string, AliasWays>();

  constructor(readonly resolver: Resolver<WireProvider>) {}

  /** Whether a client's model name is an alias (else its family's upstream serves it, as without routing). */
  has(alias: string): boolean {
    return this.resolver.has(alias);
  }

  /** How the alias's deployments are reached from a client surface; null when the model is no alias. */
  ways(alias: string, surface: WireSurface, stream: boolean): AliasWays | null {
    const key = `${alias}\u0000${surface}\u0000${stream ? 1 : 0}`;
    let found = this.reached.get(key);
    if (found === undefined) {
      const spec = this.resolver.options.config.aliases[alias];
      if (spec === undefined || !this.resolver.has(alias)) return null;
      const providers = this.resolver.options.providers;
      const models = new Map(this.resolver.options.config.deployments.map((d) => [d.id, d.model]));
      found = aliasWays(
        spec.targets
          .flat()
          .map((id) => [id, servingModel(providers.get(id) as WireProvider, models.get(id) ?? '')] as const),
        surface,
        stream,
      );
      this.reached.set(key, found);
    }
    return found;
  }

  /** A call's plan if its model is an alias (null when it is not); `mayServe` is the key's scope on a model. */
  plan(alias: string, mayServe: (model: string) => boolean): RoutePlan<WireProvider> | null {
    return this.resolver.plan(alias, mayServe);
  }
}

/** The routing of an opened router: the deployments' breakers are the router's, priced by the budget config. */
export function gatewayRouting(
  opened: RoutingProviders,
  breakers: BreakerRegistry,
  price: (model: string) => number | null,
): GatewayRouting {
  return new GatewayRouting(
    new Resolver<WireProvider>({
      config: opened.config,
      providers: opened.providers,
      providerId: (provider) => provider.id,
      breakers,
      clock: Date.now,
      random: Math.random,
      price,
    }),
  );
}
