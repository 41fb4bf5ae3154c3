import type { WireRoute } from '#providers/entry.js';
import type { WireSurface } from '#providers/wire/spec.js';

export { geminiReader } from '#providers/surfaces/gemini.js';

/** The Gemini surfaces this provider forwards, and their paths under the API's base URL (the model in the path). */
export const GEMINI_WIRE_PATHS: Partial<Record<WireSurface, WireRoute>> = {
  'gemini.generate': { method: 'POST', path: '/v1beta/models/{model}:generateContent' },
  // Server-sent events; without `alt=sse` the API streams one JSON array instead.
  'gemini.stream': { method: 'POST', path: '/v1beta/models/{model}:streamGenerateContent', query: { alt: 'sse' } },
  'gemini.count_tokens': { method: 'POST', path: '/v1beta/models/{model}:countTokens' },
  'gemini.models': { method: 'GET', path: '/v1beta/models' },
};

/** `{base}{path}`, whether or not the configured base already ends in the API version (`…/v1beta`). */
export function geminiUrl(baseUrl: string, path: string): string {
  return /\/v1beta$/.test(baseUrl) ? `${baseUrl}${path.slice('/v1beta'.length)}` : `${baseUrl}${path}`;
}
