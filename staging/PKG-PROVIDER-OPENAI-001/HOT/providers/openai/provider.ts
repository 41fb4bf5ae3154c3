import type { HttpProviderOptions } from '#providers/config.js';
import { defineProvider, HttpProvider, type ProviderEntry } from '#providers/entry.js';
import { chatBody, checkChatBody } from './body.js';
import { errorFacts, normaliseStopReason, parseCompletion } from './reply.js';
import { OPENAI_WIRE_PATHS, openAiReader, v1Url } from './wire.js';

export const OPENAI_DEFAULT_BASE_URL = 'https://api.openai.com';

/** The OpenAI API (or any compatible server), declared: a neutral request goes to Chat Completions. */
export const OPENAI: ProviderEntry = {
  id: 'openai',
  endpoint: {
    baseUrlVar: 'OPENAI_BASE_URL',
    apiKeyVar: 'OPENAI_API_KEY',
    defaultBaseUrl: OPENAI_DEFAULT_BASE_URL,
    keyRequired: false,
  },
  models: ['gpt-*', 'o[0-9]*', 'chatgpt-*'],
  routes: OPENAI_WIRE_PATHS,
  url: v1Url,
  // Our key (if any) as the bearer; nothing of the client's headers is passed on.
  headers(apiKey, _request, route) {
    const headers: Record<string, string> = {};
    if (route.method === 'POST') headers['content-type'] = 'application/json';
    if (apiKey !== null) headers.authorization = `Bearer ${apiKey}`;
    return headers;
  },
  requestIdHeader: 'x-request-id',
  errorFacts,
  reader: openAiReader,
  neutral: {
    surface: 'openai.chat',
    check: checkChatBody,
    render: chatBody,
    parse: parseCompletion,
    stopReason: normaliseStopReason,
  },
};

export type OpenAiProviderOptions = HttpProviderOptions;

/** Chat Completions (and the other OpenAI surfaces) over the one transport against any compatible server. */
export class OpenAiProvider extends HttpProvider {
  constructor(options: OpenAiProviderOptions = {}) {
    super(OPENAI, options);
  }
}

/** This package's contribution, found at open as `HOT/providers/<id>/provider.js`. */
export default defineProvider(OPENAI);
