import type { HttpProviderOptions } from '#providers/config.js';
import {
  configuredEntry,
  defineConfiguredProvider,
  HttpProvider,
  type ConfiguredEntryInput,
  type ProviderEntry,
} from '#providers/entry.js';
import { OPENAI } from '#providers/openai/provider.js';
import { parseCompletion } from '#providers/openai/reply.js';
import { openAiReader } from '#providers/openai/wire.js';
import { compatibleUsage } from '#providers/surfaces/openai.js';
import type { WireRoute } from '#providers/entry.js';
import type { WireSurface } from '#providers/wire/spec.js';
import { presetFromOptions } from './preset.js';
import type { Preset } from './presets.js';

/** What compatible servers answer: Chat Completions and the model list (the Responses API is not widely served). */
const COMPATIBLE_ROUTES: Partial<Record<WireSurface, WireRoute>> = {
  'openai.chat': { method: 'POST', path: '/chat/completions' },
  'openai.models': { method: 'GET', path: '/models' },
  'openai.embeddings': { method: 'POST', path: '/embeddings' },
};

/**
 * The one OpenAI-compatible entry, shaped by a preset: OpenAI's readers, errors and neutral mapping, the preset's
 * base URL, auth scheme, key variable and request-id header. No code per vendor.
 */
export function compatibleEntry(id: string, name: string, preset: Preset): ProviderEntry {
  const variable = name.toUpperCase().replace(/-/g, '_');
  const auth = preset.auth;
  return {
    ...OPENAI,
    id,
    endpoint: {
      baseUrlVar: `${variable}_BASE_URL`,
      apiKeyVar: preset.api_key_env ?? `${variable}_API_KEY`,
      defaultBaseUrl: preset.base_url,
      keyRequired: preset.key_required,
    },
    routes: COMPATIBLE_ROUTES,
    url: (baseUrl, path) => `${baseUrl}${path}`,
    headers(apiKey, _request, route) {
      const headers: Record<string, string> = {};
      if (route.method === 'POST') headers['content-type'] = 'application/json';
      if (apiKey !== null && auth === 'bearer') headers.authorization = `Bearer ${apiKey}`;
      else if (apiKey !== null && typeof auth === 'object') headers[auth.header] = apiKey;
      return headers;
    },
    requestIdHeader: preset.request_id_header,
    // A reply naming no cached part is read as zero cache reads, not unknown (surfaces/openai.ts compatibleUsage).
    reader: (surface) => openAiReader(surface, compatibleUsage),
    neutral: { ...OPENAI.neutral, parse: (text) => parseCompletion(text, compatibleUsage) },
  };
}

/** A compatible server's entry from its config's `options` (its preset). */
function fromConfig({ id, options }: ConfiguredEntryInput): ProviderEntry {
  const { name, preset } = presetFromOptions(id, options);
  return compatibleEntry(id, name, preset);
}

/** An OpenAI-compatible server configured by `{base_url?, api_key?, options: {preset, presets?}}`. */
export class CompatibleProvider extends HttpProvider {
  constructor(options: HttpProviderOptions = {}) {
    super(...configuredEntry(options, 'compatible', fromConfig));
  }
}

/** This package's contribution: opt-in, the operator names it in `gateway.upstreams.openai`. */
export default defineConfiguredProvider({
  serves: Object.keys(COMPATIBLE_ROUTES) as WireSurface[],
  optIn: true,
  entry: fromConfig,
});
