/**
 * Routing: operator-named upstream deployments, aliases mapping a client's model name to ordered target groups,
 * and the failure classes that move a call to its next target (the gateway config's `routing`, docs/routing.md).
 */

/** The failure classes a call may fall back on; `breaker_open` moves past a group whose every breaker is open. */
export const FALLBACK_CLASSES = [
  'overloaded',
  'server_error',
  'timeout',
  'rate_limited',
  'network',
  'breaker_open',
] as const;
export type FallbackClass = (typeof FALLBACK_CLASSES)[number];

export type Strategy = 'weighted' | 'least_in_flight';

export interface DeploymentSpec {
  id: string;
  /** The installed provider package whose wire format the deployment speaks (`anthropic`, `openai`). */
  provider: string;
  base_url: string;
  /** The NAME of the environment variable holding the key; the key itself is never in the config. */
  credential_env: string;
  /** The model the upstream is asked for. */
  model: string;
  weight: number;
  rpm: number | null;
  tpm: number | null;
  region: string | null;
}

export interface AliasSpec {
  /** Ordered groups of deployment ids: balanced inside a group, fallen back across groups. */
  targets: string[][];
  strategy: Strategy;
}

export interface RoutingConfig {
  deployments: DeploymentSpec[];
  aliases: Record<string, AliasSpec>;
  fallback_on: FallbackClass[];
  /** A deployment's rest after a 429 that names no retry-after. */
  cooldown_ms: number;
}

/** The class of a provider failure kind, for `fallback_on`; null: never a reason to move (a 400, an auth failure). */
export function fallbackClassOf(kind: string): FallbackClass | null {
  return (FALLBACK_CLASSES as readonly string[]).includes(kind) && kind !== 'breaker_open'
    ? (kind as FallbackClass)
    : null;
}
