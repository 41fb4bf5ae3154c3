import type { WireRoute } from '#providers/entry.js';
import type { WireSurface } from '#providers/wire/spec.js';

export { openAiReader } from '#providers/surfaces/openai.js';

/** The OpenAI surfaces this provider forwards, and their paths under the API's `/v1`. */
export const OPENAI_WIRE_PATHS: Partial<Record<WireSurface, WireRoute>> = {
  'openai.chat': { method: 'POST', path: '/chat/completions' },
  'openai.responses': { method: 'POST', path: '/responses' },
  'openai.models': { method: 'GET', path: '/models' },
  'openai.embeddings': { method: 'POST', path: '/embeddings' },
};

/** `{base}/v1{path}`, whether or not the configured base already ends in /v1. */
export function v1Url(baseUrl: string, path: string): string {
  return /\/v1$/.test(baseUrl) ? `${baseUrl}${path}` : `${baseUrl}/v1${path}`;
}
