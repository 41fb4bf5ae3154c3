import { CpError, show } from '#kernel/errors.js';
import { truncateText } from '#kernel/text.js';
import type { Clock, FetchLike, Timers } from './clock.js';
import { asObject } from './json.js';

/** Construction options every HTTP provider takes (all injectable for tests). */
export interface HttpProviderOptions {
  id?: string;
  /** `{base_url?, api_key?}`; falls back to the provider's *_BASE_URL / *_API_KEY environment variables. */
  config?: unknown;
  env?: Readonly<Record<string, string | undefined>>;
  fetch?: FetchLike;
  clock?: Clock;
  timers?: Timers;
}

/** The persisted provider config (schema: HOT/schemas/provider-config.schema.json). */
export interface ProviderConfig {
  base_url?: string;
  api_key?: string;
}

export interface EndpointSpec {
  providerId: string;
  baseUrlVar: string;
  apiKeyVar: string;
  /** Further variables read, in order, when `apiKeyVar` is unset (Gemini: GOOGLE_API_KEY, then GEMINI_API_KEY). */
  apiKeyFallbackVars?: readonly string[];
  defaultBaseUrl: string;
  keyRequired: boolean;
}

export interface Endpoint {
  /** Base URL without a trailing slash. */
  baseUrl: string;
  apiKey: string | null;
}

const CONFIG_KEYS = new Set(['base_url', 'api_key']);

/**
 * Base URL and key from the config, else the environment, else the default base URL. Errors never
 * include the key's value, only where it was looked for.
 */
export function resolveEndpoint(
  spec: EndpointSpec,
  config: unknown,
  env: Readonly<Record<string, string | undefined>>,
): Endpoint {
  const cfg = parseProviderConfig(spec.providerId, config);
  const baseUrl = nonEmpty(cfg.base_url) ?? nonEmpty(env[spec.baseUrlVar]) ?? spec.defaultBaseUrl;
  const keyVars = [spec.apiKeyVar, ...(spec.apiKeyFallbackVars ?? [])];
  let apiKey = nonEmpty(cfg.api_key) ?? null;
  for (const name of keyVars) apiKey ??= nonEmpty(env[name]) ?? null;
  if (apiKey === null && spec.keyRequired) {
    throw new CpError(
      'ERR_PROVIDER_CONFIG',
      `provider ${show(spec.providerId)} has no API key: neither config api_key nor ${keyVars.map((v) => `$${v}`).join(' nor ')} is set`,
      {
        hint: `export ${spec.apiKeyVar}=… or set api_key in the provider config`,
        details: { provider_id: spec.providerId, env_var: spec.apiKeyVar },
      },
    );
  }
  if (apiKey !== null && !/^[\x21-\x7e]+$/.test(apiKey)) {
    // Never echo the key: an invalid one would otherwise surface verbatim in fetch's header error.
    throw new CpError(
      'ERR_PROVIDER_CONFIG',
      `provider ${show(spec.providerId)} API key contains spaces, control or non-ASCII characters`,
      {
        hint: `check api_key in the provider config or $${spec.apiKeyVar} for stray quotes or line breaks`,
        details: { provider_id: spec.providerId, env_var: spec.apiKeyVar },
      },
    );
  }
  return { baseUrl: checkBaseUrl(spec, baseUrl), apiKey };
}

function parseProviderConfig(providerId: string, config: unknown): ProviderConfig {
  if (config === undefined || config === null) return {};
  const obj = asObject(config);
  const unknown = obj === null ? [] : Object.keys(obj).filter((k) => !CONFIG_KEYS.has(k));
  const badType =
    obj === null ? null : ['base_url', 'api_key'].find((k) => obj[k] !== undefined && typeof obj[k] !== 'string');
  if (obj === null || unknown.length > 0 || badType !== undefined) {
    const what =
      obj === null
        ? `expected an object, got ${typeof config}`
        : unknown.length > 0
          ? `unknown field(s) ${show(unknown)}`
          : `${badType} must be a string`;
    throw new CpError('ERR_PROVIDER_CONFIG', `invalid config for provider ${show(providerId)}: ${what}`, {
      hint: 'a provider config has only base_url and api_key (strings)',
      details: { provider_id: providerId },
    });
  }
  return obj as ProviderConfig;
}

function checkBaseUrl(spec: EndpointSpec, raw: string): string {
  let url: URL | null = null;
  try {
    url = new URL(raw);
  } catch {
    url = null;
  }
  if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.search !== '' || url.hash !== '') {
    throw new CpError(
      'ERR_PROVIDER_CONFIG',
      `provider ${show(spec.providerId)} base URL ${show(displayUrl(url, raw))} is not an http(s) URL without query or fragment`,
      {
        hint: `set base_url in the provider config or $${spec.baseUrlVar}, e.g. ${spec.defaultBaseUrl}`,
        details: { provider_id: spec.providerId, env_var: spec.baseUrlVar },
      },
    );
  }
  if (url.username !== '' || url.password !== '') {
    // Credentials in the URL would ride along in every error that names the endpoint; keys go in api_key.
    throw new CpError(
      'ERR_PROVIDER_BASE_URL_CREDENTIALS',
      `provider ${show(spec.providerId)} base URL ${show(displayUrl(url, raw))} holds credentials (user:password@)`,
      {
        hint: `remove the user info from base_url / $${spec.baseUrlVar}; put the key in api_key or $${spec.apiKeyVar}`,
        details: { provider_id: spec.providerId, env_var: spec.baseUrlVar },
      },
    );
  }
  return raw.replace(/\/+$/, '');
}

/** The URL as it may be shown: no user info, and the query/fragment elided (they can carry credentials). */
function displayUrl(url: URL | null, raw: string): string {
  if (url === null) return truncateText(raw, 60);
  if (url.username === '' && url.password === '' && url.search === '' && url.hash === '') return raw;
  const tail = url.search !== '' || url.hash !== '' ? '?…' : '';
  return `${url.protocol}//${url.host}${url.pathname}${tail}`;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}
