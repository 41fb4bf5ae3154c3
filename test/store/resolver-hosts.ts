// Routing resolvers as separate gateway hosts would hold them, for the tests of what the hosts share through
// PostgreSQL (cooldowns, RPM/TPM counts): one injected clock, the same breakers' settings on every host.
import { fromDevRoot } from '../../scripts/lib/dev-root.js';
import type { DeploymentSpec, RoutingConfig } from '../../staging/PKG-ROUTER-001/HOT/router/routing/types.js';

const { BreakerRegistry } =
  await fromDevRoot<typeof import('../../staging/PKG-ROUTER-001/HOT/router/breaker.js')>('HOT/router/breaker.js');
const { Resolver } = await fromDevRoot<typeof import('../../staging/PKG-ROUTER-001/HOT/router/routing/resolver.js')>(
  'HOT/router/routing/resolver.js',
);

/** An Anthropic deployment with no limits but `limits`. */
export const deployment = (id: string, limits: Partial<DeploymentSpec> = {}): DeploymentSpec => ({
  id,
  provider: 'anthropic',
  base_url: `http://127.0.0.1/${id}`,
  credential_env: `KEY_${id.toUpperCase()}`,
  model: `model-${id}`,
  weight: 1,
  rpm: null,
  tpm: null,
  region: null,
  ...limits,
});

/** Alias `m`: deployment `a` first, then `b` when given; a 429 falls back. */
export function aliasConfig(deployments: DeploymentSpec[]): RoutingConfig {
  return {
    deployments,
    aliases: { m: { targets: deployments.map((d) => [d.id]), strategy: 'weighted' } },
    fallback_on: ['rate_limited'],
    cooldown_ms: 5000,
  };
}

/** One host's resolver over `config`, every deployment on the Anthropic provider. */
export function resolverHost(config: RoutingConfig, clock: () => number) {
  const breakers = new BreakerRegistry({ failure_threshold: 3, reset_timeout_ms: 30_000, half_open_probes: 1 }, clock);
  return new Resolver({
    config,
    providers: new Map(config.deployments.map((d) => [d.id, 'anthropic'])),
    providerId: (p: string) => p,
    breakers,
    clock,
    random: Math.random,
  });
}
export type ResolverHost = ReturnType<typeof resolverHost>;
