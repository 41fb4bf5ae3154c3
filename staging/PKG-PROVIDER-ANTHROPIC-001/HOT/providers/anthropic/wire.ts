import type { WireRoute } from '#providers/entry.js';
import type { WireSurface } from '#providers/wire/spec.js';

export { anthropicReader } from '#providers/surfaces/anthropic.js';

/** The Anthropic surfaces this provider forwards, and their upstream paths. */
export const ANTHROPIC_WIRE_PATHS: Partial<Record<WireSurface, WireRoute>> = {
  'anthropic.messages': { method: 'POST', path: '/v1/messages' },
  'anthropic.count_tokens': { method: 'POST', path: '/v1/messages/count_tokens' },
  'anthropic.models': { method: 'GET', path: '/v1/models' },
};
