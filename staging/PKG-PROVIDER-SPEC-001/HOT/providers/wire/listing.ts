import type { WireResponse, WireSurface } from './spec.js';

/** The surfaces that list models, each in its API's own shape. */
export const LISTING_SURFACES: ReadonlySet<WireSurface> = new Set([
  'anthropic.models',
  'openai.models',
  'gemini.models',
]);

// The configuration names no release time: the listing says the epoch rather than invent one.
const UNKNOWN_TIME = '1970-01-01T00:00:00Z';

function listingBody(surface: WireSurface, providerId: string, ids: readonly string[]): Record<string, unknown> {
  switch (surface) {
    case 'anthropic.models':
      return {
        data: ids.map((id) => ({ type: 'model', id, display_name: id, created_at: UNKNOWN_TIME })),
        has_more: false,
        first_id: ids[0] ?? null,
        last_id: ids.at(-1) ?? null,
      };
    case 'openai.models':
      return { object: 'list', data: ids.map((id) => ({ id, object: 'model', created: 0, owned_by: providerId })) };
    case 'gemini.models':
      return {
        models: ids.map((id) => ({
          name: `models/${id}`,
          displayName: id,
          supportedGenerationMethods: ['generateContent', 'streamGenerateContent', 'countTokens'],
        })),
      };
    default:
      throw new Error(`${surface} lists no models`);
  }
}

/**
 * A models listing answered from a provider's configuration (the models it maps to Bedrock ids, Vertex models,
 * Azure deployments) for an upstream that has no listing of those names: one page, in the surface's shape.
 */
export function localListing(surface: WireSurface, providerId: string, ids: readonly string[]): WireResponse {
  const bytes = new TextEncoder().encode(JSON.stringify(listingBody(surface, providerId, ids)));
  return {
    status: 200,
    contentType: 'application/json',
    requestId: null,
    body: (async function* () {
      yield bytes;
    })(),
    cancel: () => {},
  };
}
