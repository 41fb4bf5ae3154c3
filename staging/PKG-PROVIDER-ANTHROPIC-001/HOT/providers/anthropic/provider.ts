import type { HttpProviderOptions } from '#providers/config.js';
import { defineProvider, HttpProvider, type ProviderEntry } from '#providers/entry.js';
import { checkMessagesBody, messagesBody } from './body.js';
import { errorFacts, normaliseStopReason, parseMessage } from './reply.js';
import { ANTHROPIC_WIRE_PATHS, anthropicReader } from './wire.js';

export const ANTHROPIC_VERSION = '2023-06-01';
export const ANTHROPIC_DEFAULT_BASE_URL = 'https://api.anthropic.com';

/** The Anthropic API, declared: a neutral request goes to the Messages surface. */
export const ANTHROPIC: ProviderEntry = {
  id: 'anthropic',
  endpoint: {
    baseUrlVar: 'ANTHROPIC_BASE_URL',
    apiKeyVar: 'ANTHROPIC_API_KEY',
    defaultBaseUrl: ANTHROPIC_DEFAULT_BASE_URL,
    keyRequired: true,
  },
  models: ['claude-*'],
  routes: ANTHROPIC_WIRE_PATHS,
  url: (baseUrl, path) => `${baseUrl}${path}`,
  // The client's `anthropic-version`/`anthropic-beta` passed on, our key added.
  headers(apiKey, request, route) {
    const headers: Record<string, string> = {
      'anthropic-version': request.headers['anthropic-version'] ?? ANTHROPIC_VERSION,
      'x-api-key': apiKey ?? '',
    };
    if (request.headers['anthropic-beta'] !== undefined) headers['anthropic-beta'] = request.headers['anthropic-beta'];
    if (route.method === 'POST') headers['content-type'] = 'application/json';
    return headers;
  },
  requestIdHeader: 'request-id',
  errorFacts,
  reader: anthropicReader,
  neutral: {
    surface: 'anthropic.messages',
    check: checkMessagesBody,
    render: messagesBody,
    parse: parseMessage,
    stopReason: normaliseStopReason,
  },
};

export type AnthropicProviderOptions = HttpProviderOptions;

/** The Anthropic API over the one transport: one call per send or wire call, no retries. */
export class AnthropicProvider extends HttpProvider {
  constructor(options: AnthropicProviderOptions = {}) {
    super(ANTHROPIC, options);
  }
}

/** This package's contribution, found at open as `HOT/providers/<id>/provider.js`. */
export default defineProvider(ANTHROPIC);
