import { preloadEncoder } from '#budgeter/tokens/openai-encoder.js';
import type { WireProvider } from '#providers/wire/spec.js';
import type { Family } from './surfaces.js';

const OPENAI_SURFACES = new Set(['openai.chat', 'openai.responses']);

/**
 * Whether the gateway has an OpenAI-family upstream: the openai family's provider with an endpoint or key configured
 * (a keyless default endpoint serves nothing), or a routing deployment speaking Chat Completions or Responses.
 */
export function hasOpenAiUpstream(
  families: ReadonlyMap<Family, WireProvider>,
  deployments: Iterable<WireProvider>,
): boolean {
  const family = families.get('openai') as (WireProvider & { configured?: boolean }) | undefined;
  if (family !== undefined && family.configured !== false) return true;
  for (const provider of deployments) if (provider.surfaces.some((s) => OPENAI_SURFACES.has(s))) return true;
  return false;
}

/**
 * The o200k tokenizer (every current OpenAI chat model's) starts loading as the gateway opens when an OpenAI-family
 * upstream is configured, so the first call does not wait about a second for it; opening never waits for it, and
 * a gateway without such an upstream never loads it. `preload` is injectable for tests.
 */
export function warmTokenizer(
  families: ReadonlyMap<Family, WireProvider>,
  deployments: Iterable<WireProvider>,
  preload: (encoding: 'o200k_base') => void = preloadEncoder,
): boolean {
  if (!hasOpenAiUpstream(families, deployments)) return false;
  preload('o200k_base');
  return true;
}
