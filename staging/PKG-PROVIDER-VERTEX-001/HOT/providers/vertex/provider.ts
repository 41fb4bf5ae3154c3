import { CpError, show } from '#kernel/errors.js';
import type { Clock } from '#providers/clock.js';
import type { HttpProviderOptions } from '#providers/config.js';
import {
  configuredEntry,
  defineConfiguredProvider,
  HttpProvider,
  type ProviderEntry,
  type WireRoute,
} from '#providers/entry.js';
import { asObject } from '#providers/json.js';
import { ANTHROPIC } from '#providers/anthropic/provider.js';
import type { WireFetch } from '#providers/transport.js';
import type { WireRequest, WireSurface } from '#providers/wire/spec.js';
import { READ_LIMITS, readTextBounded } from '#kernel/bounded-read.js';
import { vertexErrorFacts } from './errors.js';
import { parseServiceAccount, ServiceAccountAuth } from './oauth.js';

export const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';

const ROUTES: Partial<Record<WireSurface, WireRoute>> = {
  'anthropic.messages': { method: 'POST', path: '/v1' },
  // One endpoint for every model (`…/publishers/anthropic/models/count-tokens:rawPredict`), the model in the body.
  'anthropic.count_tokens': { method: 'POST', path: '/v1' },
};

export interface VertexOptions {
  project: string;
  region: string;
  /** Client model name → Vertex model (`claude-sonnet-4-5@20250929`); a model not listed is sent as named. */
  models: Readonly<Record<string, string>>;
  serviceAccountFile: string;
  /** Where the JWT is exchanged; default: the key file's `token_uri` (tests point it at a local server). */
  tokenUri: string | null;
}

const NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;
const MODEL = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/;

function fail(providerId: string, what: string): never {
  throw new CpError('ERR_PROVIDER_CONFIG', `invalid options for provider ${show(providerId)}: ${what}`, {
    hint: 'options: {"project": "<id>", "region": "us-east5" | "global", "service_account_file": "<key.json>", "models": {"<client model>": "claude-sonnet-4-5@20250929"}}',
    details: { provider_id: providerId },
  });
}

type Env = Readonly<Record<string, string | undefined>>;
const nonEmpty = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined);

export function vertexOptions(
  providerId: string,
  options: unknown,
  env: Env,
  projectOfKey: () => string | null,
): VertexOptions {
  const obj = options === undefined ? {} : (asObject(options) ?? fail(providerId, 'options must be an object'));
  const allowed = ['project', 'region', 'models', 'service_account_file', 'token_uri'];
  const unknown = Object.keys(obj).filter((k) => !allowed.includes(k));
  if (unknown.length > 0) fail(providerId, `unknown field(s) ${show(unknown)}`);
  const region = nonEmpty(obj.region) ?? nonEmpty(env.CLOUD_ML_REGION) ?? nonEmpty(env.GOOGLE_CLOUD_LOCATION);
  if (region === undefined || !NAME.test(region))
    fail(providerId, `region must be a Vertex region (us-east5, europe-west1, global), got ${show(region ?? null)}`);
  const file = nonEmpty(obj.service_account_file) ?? nonEmpty(env.GOOGLE_APPLICATION_CREDENTIALS);
  if (file === undefined)
    fail(providerId, 'no service account: set service_account_file or $GOOGLE_APPLICATION_CREDENTIALS');
  const tokenUri = nonEmpty(obj.token_uri) ?? null;
  if (tokenUri !== null && !/^https?:\/\/[^\s@]+$/.test(tokenUri)) fail(providerId, 'token_uri must be an http(s) URL');
  const models: Record<string, string> = {};
  const listed = obj.models === undefined ? {} : (asObject(obj.models) ?? fail(providerId, 'models must be an object'));
  for (const [model, id] of Object.entries(listed)) {
    if (typeof id !== 'string' || !MODEL.test(id)) fail(providerId, `models.${model} must be a Vertex model name`);
    models[model] = id;
  }
  const base = { region, models, serviceAccountFile: file, tokenUri };
  const project =
    nonEmpty(obj.project) ?? nonEmpty(env.ANTHROPIC_VERTEX_PROJECT_ID) ?? nonEmpty(env.GOOGLE_CLOUD_PROJECT);
  const resolved = project ?? projectOfKey() ?? undefined;
  if (resolved === undefined || !/^[a-z][a-z0-9-]{4,61}[a-z0-9]$/.test(resolved))
    fail(providerId, `project must be a Google Cloud project id, got ${show(resolved ?? null)}`);
  return { ...base, project: resolved };
}

const streamed = (request: WireRequest): boolean => request.body?.stream === true;

function modelOf(options: VertexOptions, request: WireRequest): string {
  return vertexModel(options, typeof request.body?.model === 'string' ? request.body.model : '');
}

const counting = (request: WireRequest): boolean => request.surface === 'anthropic.count_tokens';

/** The count_tokens body: the client's, its model named as Vertex names it, with `anthropic_version`. */
function countTokensBody(options: VertexOptions, request: WireRequest): Record<string, unknown> {
  const { model, ...rest } = request.body ?? {};
  const name = typeof model === 'string' && Object.hasOwn(options.models, model) ? options.models[model] : model;
  return { anthropic_version: VERTEX_ANTHROPIC_VERSION, ...rest, model: name };
}

/** The Messages body as rawPredict takes it: no `model` (it is in the URL), `anthropic_version: vertex-2023-10-16`. */
export function rawPredictBody(request: WireRequest): Record<string, unknown> {
  const { model: _model, ...rest } = request.body ?? {};
  return { anthropic_version: VERTEX_ANTHROPIC_VERSION, ...rest };
}

export interface VertexSetup {
  env: Env;
  options: unknown;
  clock: Clock;
  fetch: WireFetch;
  readFile: (path: string) => string;
}

/** What every Vertex entry shares: its options, its host, and the service account's token source. */
export interface VertexAccess {
  options: VertexOptions;
  host: string;
  auth: ServiceAccountAuth;
}

/** The options, host and token source of a Vertex provider (the key file read once). */
export function vertexAccess(id: string, setup: VertexSetup): VertexAccess {
  let keyText: string | null = null;
  const keyFile = (file: string): string => {
    keyText ??= setup.readFile(file);
    return keyText;
  };
  const options = vertexOptions(id, setup.options, setup.env, () => {
    const file =
      nonEmpty(asObject(setup.options)?.service_account_file) ?? nonEmpty(setup.env.GOOGLE_APPLICATION_CREDENTIALS);
    return file === undefined ? null : parseServiceAccount(id, show(file), keyFile(file)).project_id;
  });
  const account = parseServiceAccount(id, show(options.serviceAccountFile), keyFile(options.serviceAccountFile));
  const host =
    options.region === 'global' ? 'aiplatform.googleapis.com' : `${options.region}-aiplatform.googleapis.com`;
  const auth = new ServiceAccountAuth(id, account, options.tokenUri ?? account.token_uri, setup.fetch, setup.clock);
  return { options, host, auth };
}

/** Where a Vertex entry lives: `https://{region}-aiplatform.googleapis.com` unless configured (`VERTEX_BASE_URL`). */
export const vertexEndpoint = (host: string): ProviderEntry['endpoint'] => ({
  baseUrlVar: 'VERTEX_BASE_URL',
  apiKeyVar: 'CPLANE_VERTEX_API_KEY_UNUSED',
  defaultBaseUrl: `https://${host}`,
  keyRequired: false,
});

/** A publisher's model path under the project and region: `/projects/{p}/locations/{r}/publishers/{publisher}/models/`. */
export const publisherPath = (options: VertexOptions, publisher: string): string =>
  `/projects/${options.project}/locations/${options.region}/publishers/${publisher}/models/`;

/** A model as the URL names it: the configured Vertex name for a client's model, else the name itself. */
export function vertexModel(options: VertexOptions, model: string): string {
  const name = Object.hasOwn(options.models, model) ? (options.models[model] as string) : model;
  return MODEL.test(name) ? name : encodeURIComponent(name);
}

/**
 * Anthropic's Messages API on Vertex AI: `…/projects/{p}/locations/{region}/publishers/anthropic/models/{model}:rawPredict`
 * (`:streamRawPredict` for a stream, whose reply is Anthropic's own SSE), the bearer an OAuth2 access token of a
 * service account. Anthropic's readers and neutral mapping apply unchanged.
 */
export function vertexEntry(id: string, setup: VertexSetup): ProviderEntry {
  const { options, host, auth } = vertexAccess(id, setup);
  const prefix = publisherPath(options, 'anthropic');
  return {
    ...ANTHROPIC,
    id,
    endpoint: vertexEndpoint(host),
    routes: ROUTES,
    listModels: () => Object.keys(options.models),
    url: (baseUrl, path, request) =>
      counting(request)
        ? `${baseUrl}${path}${prefix}count-tokens:rawPredict`
        : `${baseUrl}${path}${prefix}${modelOf(options, request)}:${streamed(request) ? 'streamRawPredict' : 'rawPredict'}`,
    body: (request) => (counting(request) ? countTokensBody(options, request) : rawPredictBody(request)),
    headers(_key, request) {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (request.headers['anthropic-beta'] !== undefined)
        headers['anthropic-beta'] = request.headers['anthropic-beta'];
      return headers;
    },
    auth,
    requestIdHeader: 'request-id',
    errorFacts: vertexErrorFacts,
  };
}

/** The service-account key file's text, bounded. */
export function readKeyFile(path: string): string {
  return readTextBounded(path, { maxBytes: READ_LIMITS.key * 16, what: 'the service account key file' });
}

export interface VertexProviderOptions extends HttpProviderOptions {
  /** Reads the service-account key file; default: the real file system (bounded). */
  readFile?: (path: string) => string;
}

/** Vertex configured by `{base_url?, options: {project, region, service_account_file, models, token_uri}}`. */
export class VertexProvider extends HttpProvider {
  constructor(options: VertexProviderOptions = {}) {
    super(
      ...configuredEntry(options, 'vertex', (input) =>
        vertexEntry(input.id, { ...input, readFile: options.readFile ?? readKeyFile }),
      ),
    );
  }
}

/** This package's contribution: opt-in, the operator names it in `gateway.upstreams.anthropic`. */
export default defineConfiguredProvider({
  serves: Object.keys(ROUTES) as WireSurface[],
  optIn: true,
  entry: (input) => vertexEntry(input.id, { ...input, readFile: readKeyFile }),
});
