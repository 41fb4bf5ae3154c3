import { CpError, show } from '#kernel/errors.js';
import type { HttpProviderOptions } from '#providers/config.js';
import { defineConfiguredProvider, HttpProvider, type ProviderEntry } from '#providers/entry.js';
import { asObject } from '#providers/json.js';
import type { WireSurface } from '#providers/wire/spec.js';
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

/**
 * The models OpenAI serves only on `POST /v1/responses` (their model pages: o1-pro, o3-pro, the GPT-5 pro models,
 * the codex models, deep research, computer use): a generation for one goes there, translated if need be. Not part
 * of OPENAI itself: the compatible and Azure entries built on it serve names of their own.
 */
export const OPENAI_RESPONSES_ONLY: readonly string[] = [
  'o1-pro*',
  'o3-pro*',
  'gpt-5*-pro*',
  '*codex*',
  '*deep-research*',
  'computer-use-preview*',
];

const MAX_PATTERNS = 256;

function badOptions(providerId: string, what: string): never {
  throw new CpError('ERR_PROVIDER_CONFIG', `invalid options for provider ${show(providerId)}: ${what}`, {
    hint: 'options: {"responses_only_models": ["o3-pro*", "<model or pattern>", …]} (replaces the shipped list)',
    details: { provider_id: providerId },
  });
}

/** The Responses-only model patterns: the operator's `options.responses_only_models` in place of the shipped list. */
export function responsesOnlyModels(providerId: string, options: unknown): readonly string[] {
  if (options === undefined || options === null) return OPENAI_RESPONSES_ONLY;
  const obj = asObject(options) ?? badOptions(providerId, 'options must be an object');
  const unknown = Object.keys(obj).filter((k) => k !== 'responses_only_models');
  if (unknown.length > 0) badOptions(providerId, `unknown field(s) ${show(unknown)}`);
  const listed = obj.responses_only_models;
  if (listed === undefined) return OPENAI_RESPONSES_ONLY;
  if (!Array.isArray(listed) || listed.length > MAX_PATTERNS)
    badOptions(providerId, `responses_only_models must be an array of at most ${MAX_PATTERNS} model patterns`);
  for (const pattern of listed)
    if (typeof pattern !== 'string' || !/^[\x21-\x7e]{1,128}$/.test(pattern))
      badOptions(providerId, `responses_only_models holds ${show(pattern)}, not a model name or pattern`);
  return listed as string[];
}

export type OpenAiProviderOptions = HttpProviderOptions;

/** Chat Completions (and the other OpenAI surfaces) over the one transport against any compatible server. */
export class OpenAiProvider extends HttpProvider {
  constructor(options: OpenAiProviderOptions = {}) {
    super({ ...OPENAI, responsesOnly: OPENAI_RESPONSES_ONLY }, options);
  }
}

/** This package's contribution, found at open as `HOT/providers/<id>/provider.js`; its config may carry `options`. */
export default defineConfiguredProvider({
  serves: Object.keys(OPENAI.routes) as WireSurface[],
  entry: ({ id, options }) => ({ ...OPENAI, responsesOnly: responsesOnlyModels(id, options) }),
});
