import {
  configuredEntry,
  defineConfiguredProvider,
  HttpProvider,
  type ProviderEntry,
  type WireRoute,
} from '#providers/entry.js';
import type { FailureFacts } from '#providers/reply.js';
import type { WireSurface } from '#providers/wire/spec.js';
import { vertexErrorFacts } from '#providers/vertex/errors.js';
import {
  publisherPath,
  readKeyFile,
  vertexAccess,
  vertexEndpoint,
  vertexModel,
  type VertexProviderOptions,
  type VertexSetup,
} from '#providers/vertex/provider.js';
import { GEMINI } from '../gemini/provider.js';
import { errorFacts as geminiErrorFacts } from '../gemini/reply.js';

/** The Gemini surfaces Vertex serves: the same bodies as the Gemini API, under the project's publisher path. */
const ROUTES: Partial<Record<WireSurface, WireRoute>> = {
  'gemini.generate': { method: 'POST', path: '/{model}:generateContent' },
  'gemini.stream': { method: 'POST', path: '/{model}:streamGenerateContent', query: { alt: 'sse' } },
  'gemini.count_tokens': { method: 'POST', path: '/{model}:countTokens' },
};

/** Vertex's billing refusals are the spend limit; every other error is Google's envelope, read as the Gemini API's. */
function errorFacts(text: string, requestId: string | null): FailureFacts {
  const vertex = vertexErrorFacts(text, requestId);
  return vertex.kind === 'spend_limit' ? vertex : geminiErrorFacts(text, requestId);
}

/**
 * Gemini on Vertex AI: the Gemini entry (its body, readers, usage and neutral mapping) at
 * `/v1/projects/{p}/locations/{r}/publishers/google/models/{model}:generateContent` (`:streamGenerateContent?alt=sse`,
 * `:countTokens`), the bearer the Vertex service account's OAuth2 access token instead of an API key.
 */
export function vertexGeminiEntry(id: string, setup: VertexSetup): ProviderEntry {
  const { options, host, auth } = vertexAccess(id, setup);
  const prefix = `/v1${publisherPath(options, 'google')}`;
  return {
    ...GEMINI,
    id,
    endpoint: vertexEndpoint(host),
    routes: ROUTES,
    listModels: () => Object.keys(options.models),
    url: (baseUrl, path, request) => {
      const action = path.slice(path.lastIndexOf(':'));
      return `${baseUrl}${prefix}${vertexModel(options, request.params?.model ?? '')}${action}`;
    },
    headers: () => ({ 'content-type': 'application/json' }),
    auth,
    errorFacts,
  };
}

/** Gemini on Vertex configured as Vertex is: `{base_url?, options: {project, region, service_account_file, models}}`. */
export class VertexGeminiProvider extends HttpProvider {
  constructor(options: VertexProviderOptions = {}) {
    super(
      ...configuredEntry(options, 'vertex_gemini', (input) =>
        vertexGeminiEntry(input.id, { ...input, readFile: options.readFile ?? readKeyFile }),
      ),
    );
  }
}

/** This package's contribution: opt-in, the operator names it in `gateway.upstreams.gemini`. */
export default defineConfiguredProvider({
  serves: Object.keys(ROUTES) as WireSurface[],
  optIn: true,
  entry: (input) => vertexGeminiEntry(input.id, { ...input, readFile: readKeyFile }),
});
