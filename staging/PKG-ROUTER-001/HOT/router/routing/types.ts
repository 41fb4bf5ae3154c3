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
  'context_too_long',
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

/** How the providers word a prompt over the model's window (Anthropic, OpenAI-compatible servers). */
const CONTEXT_TOO_LONG = /prompt is too long|context_length_exceeded|maximum context length|context window/i;

/**
 * The class of a failure before the reply began, for `fallback_on`; null: never a reason to move (any other 400, an
 * auth failure, anything after a 2xx). A prompt over the window is a 400 a target with a larger window can answer.
 */
export function fallbackClassOf(failure: {
  kind: string;
  status: number | null;
  message: string;
  after_success: boolean;
}): FallbackClass | null {
  if (failure.after_success) return null;
  if (failure.kind === 'invalid_request')
    return (failure.status === 400 || failure.status === 413) && CONTEXT_TOO_LONG.test(failure.message)
      ? 'context_too_long'
      : null;
  const kind = failure.kind;
  return (FALLBACK_CLASSES as readonly string[]).includes(kind) &&
    kind !== 'breaker_open' &&
    kind !== 'context_too_long'
    ? (kind as FallbackClass)
    : null;
}
