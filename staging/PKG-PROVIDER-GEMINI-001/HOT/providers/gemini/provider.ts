import type { HttpProviderOptions } from '#providers/config.js';
import { defineProvider, HttpProvider, type ProviderEntry } from '#providers/entry.js';
import { checkGenerateBody, generateBody, splitModel } from './body.js';
import { errorFacts, neutralStopReason, parseGenerate } from './reply.js';
import { GEMINI_WIRE_PATHS, geminiReader, geminiUrl } from './wire.js';

export const GEMINI_DEFAULT_BASE_URL = 'https://generativelanguage.googleapis.com';

/**
 * The Gemini API (Generative Language API), declared: the model is named in each route's path, the key goes in
 * `x-goog-api-key`, and a neutral request goes to generateContent. The key is read as the official SDK reads it
 * (GOOGLE_API_KEY, else GEMINI_API_KEY), the base URL as Gemini CLI does (GOOGLE_GEMINI_BASE_URL).
 */
export const GEMINI: ProviderEntry = {
  id: 'gemini',
  endpoint: {
    baseUrlVar: 'GOOGLE_GEMINI_BASE_URL',
    apiKeyVar: 'GOOGLE_API_KEY',
    apiKeyFallbackVars: ['GEMINI_API_KEY'],
    defaultBaseUrl: GEMINI_DEFAULT_BASE_URL,
    keyRequired: true,
  },
  // Gemini and Gemma models are served by the Gemini API (a request for one on another surface is translated).
  models: ['gemini-*', 'gemma-*'],
  routes: GEMINI_WIRE_PATHS,
  url: geminiUrl,
  // Our key; nothing of the client's headers is passed on.
  headers(apiKey, _request, route) {
    const headers: Record<string, string> = { 'x-goog-api-key': apiKey ?? '' };
    if (route.method === 'POST') headers['content-type'] = 'application/json';
    return headers;
  },
  // None is sent (the reply's body names it: `responseId`, read by the reader).
  requestIdHeader: null,
  errorFacts,
  reader: geminiReader,
  neutral: {
    surface: 'gemini.generate',
    check: checkGenerateBody,
    render: generateBody,
    split: splitModel,
    parse: parseGenerate,
    stopReason: neutralStopReason,
  },
};

export type GeminiProviderOptions = HttpProviderOptions;

/** The Gemini API over the one transport: one call per send or wire call, no retries. */
export class GeminiProvider extends HttpProvider {
  constructor(options: GeminiProviderOptions = {}) {
    super(GEMINI, options);
  }
}

/** This package's contribution, found at open as `HOT/providers/<id>/provider.js`. */
export default defineProvider(GEMINI);
