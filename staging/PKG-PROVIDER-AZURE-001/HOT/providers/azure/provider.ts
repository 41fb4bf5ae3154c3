import { CpError, show } from '#kernel/errors.js';
import type { HttpProviderOptions } from '#providers/config.js';
import {
  configuredEntry,
  defineConfiguredProvider,
  type ConfiguredEntryInput,
  HttpProvider,
  type ProviderEntry,
  type WireRoute,
} from '#providers/entry.js';
import { asObject } from '#providers/json.js';
import { OPENAI } from '#providers/openai/provider.js';
import type { WireRequest, WireSurface } from '#providers/wire/spec.js';

/** The GA data-plane inference version Azure documents; operators pin another in `options.api_version`. */
export const AZURE_API_VERSION = '2024-10-21';

const ROUTES: Partial<Record<WireSurface, WireRoute>> = {
  'openai.chat': { method: 'POST', path: '/chat/completions' },
  'openai.embeddings': { method: 'POST', path: '/embeddings' },
};

export interface AzureOptions {
  api_version: string;
  /** Client model name → deployment name; a model not listed is taken as the deployment's name. */
  deployments: Readonly<Record<string, string>>;
  /** `api-key`: the resource key in the `api-key` header; `entra`: a Microsoft Entra access token as the bearer. */
  auth: 'api-key' | 'entra';
}

const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const VERSION = /^\d{4}-\d{2}-\d{2}(-preview)?$/;

function fail(providerId: string, what: string): never {
  throw new CpError('ERR_PROVIDER_CONFIG', `invalid options for provider ${show(providerId)}: ${what}`, {
    hint: 'options: {"api_version": "2024-10-21", "deployments": {"<model>": "<deployment>"}, "auth": "api-key" | "entra"}',
    details: { provider_id: providerId },
  });
}

/** The config's `options`, checked and bounded (a deployment name lands in the URL path). */
export function azureOptions(providerId: string, options: unknown): AzureOptions {
  const obj = options === undefined ? {} : (asObject(options) ?? fail(providerId, 'options must be an object'));
  const unknown = Object.keys(obj).filter((k) => !['api_version', 'deployments', 'auth'].includes(k));
  if (unknown.length > 0) fail(providerId, `unknown field(s) ${show(unknown)}`);
  const version = obj.api_version ?? AZURE_API_VERSION;
  if (typeof version !== 'string' || !VERSION.test(version))
    fail(providerId, `api_version must look like 2024-10-21 or 2025-01-01-preview, got ${show(version)}`);
  const auth = obj.auth ?? 'api-key';
  if (auth !== 'api-key' && auth !== 'entra') fail(providerId, `auth must be "api-key" or "entra", got ${show(auth)}`);
  const deployments: Record<string, string> = {};
  const listed = obj.deployments === undefined ? {} : asObject(obj.deployments);
  if (listed === null) fail(providerId, 'deployments must be an object of deployment names by model');
  for (const [model, name] of Object.entries(listed)) {
    if (typeof name !== 'string' || !SEGMENT.test(name))
      fail(providerId, `deployments.${model} must be a deployment name (letters, digits, . _ -), got ${show(name)}`);
    deployments[model] = name;
  }
  return { api_version: version, deployments, auth };
}

/** The deployment a request goes to: its model's, or the model name itself, which must be a safe path segment. */
function deploymentOf(options: AzureOptions, request: WireRequest): string {
  const model = typeof request.body?.model === 'string' ? request.body.model : '';
  const name = Object.hasOwn(options.deployments, model) ? (options.deployments[model] as string) : model;
  // A name that is not a plain segment is sent encoded: Azure answers 404 DeploymentNotFound, never another path.
  return SEGMENT.test(name) ? name : encodeURIComponent(name);
}

/**
 * Azure OpenAI, declared: OpenAI's Chat Completions body, readers, usage and errors, at a deployment URL
 * `{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=…`, the key in `api-key` or an Entra
 * token as the bearer. The endpoint is `https://<resource>.openai.azure.com`.
 */
export function azureEntry(id: string, options: AzureOptions): ProviderEntry {
  const entra = options.auth === 'entra';
  return {
    ...OPENAI,
    id,
    endpoint: {
      baseUrlVar: 'AZURE_OPENAI_ENDPOINT',
      apiKeyVar: entra ? 'AZURE_OPENAI_AD_TOKEN' : 'AZURE_OPENAI_API_KEY',
      defaultBaseUrl: '',
      keyRequired: true,
    },
    routes: ROUTES,
    listModels: () => Object.keys(options.deployments),
    url: (baseUrl, path, request) =>
      `${baseUrl}/openai/deployments/${deploymentOf(options, request)}${path}?api-version=${options.api_version}`,
    headers(apiKey, _request, route) {
      const headers: Record<string, string> = {};
      if (route.method === 'POST') headers['content-type'] = 'application/json';
      if (apiKey !== null) headers[entra ? 'authorization' : 'api-key'] = entra ? `Bearer ${apiKey}` : apiKey;
      return headers;
    },
    // Azure's API management stamps every reply, errors included; x-request-id is the model service's own.
    requestIdHeader: 'apim-request-id',
  };
}

/** Azure OpenAI's entry from its config's `options`. */
const fromConfig = ({ id, options }: ConfiguredEntryInput): ProviderEntry => azureEntry(id, azureOptions(id, options));

/** Azure OpenAI configured by `{base_url?, api_key?, options?: {api_version, deployments, auth}}`. */
export class AzureOpenAiProvider extends HttpProvider {
  constructor(options: HttpProviderOptions = {}) {
    super(...configuredEntry(options, 'azure', fromConfig));
  }
}

/** This package's contribution: opt-in, the operator names it in `gateway.upstreams.openai`. */
export default defineConfiguredProvider({
  serves: Object.keys(ROUTES) as WireSurface[],
  optIn: true,
  entry: fromConfig,
});
