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
import { parseMessage } from '#providers/anthropic/reply.js';
import { anthropicReader, omittedCacheUsage } from '#providers/surfaces/anthropic.js';
import type { WireRequest, WireSurface } from '#providers/wire/spec.js';
import { readFileIfAny, resolveCredentials, resolveRegion, type ReadFile } from './credentials.js';
import { converseBody, converseReply } from './converse/route.js';
import { countTokensBody, countTokensReply } from './count-tokens.js';
import { bedrockErrorFacts } from './errors.js';
import { eventStreamReply } from './eventstream.js';
import { SigV4Auth } from './sigv4.js';
import { bedrockVendor } from './vendor.js';

export const BEDROCK_ANTHROPIC_VERSION = 'bedrock-2023-05-31';

/**
 * The path is the model's: `url` builds `/model/{modelId}/invoke` or `/invoke-with-response-stream` (InvokeModel,
 * Anthropic's own body), or `/converse` or `/converse-stream` (Converse, every other model); count_tokens goes to
 * `/count-tokens`.
 */
const ROUTES: Partial<Record<WireSurface, WireRoute>> = {
  'anthropic.messages': { method: 'POST', path: '/model' },
  'anthropic.count_tokens': { method: 'POST', path: '/model' },
};

/** Which API a model is called through: by its id (`auto`), or one for every model. */
export type BedrockApi = 'auto' | 'invoke' | 'converse';
const APIS: readonly BedrockApi[] = ['auto', 'invoke', 'converse'];

export interface BedrockOptions {
  region?: string;
  api: BedrockApi;
  /** A profile of the shared credentials file (else $AWS_PROFILE, else `default`). */
  profile?: string;
  /** Client model name → Bedrock model id or inference profile (`us.anthropic.claude-sonnet-4-5-20250929-v1:0`). */
  models: Readonly<Record<string, string>>;
}

function fail(providerId: string, what: string): never {
  throw new CpError('ERR_PROVIDER_CONFIG', `invalid options for provider ${show(providerId)}: ${what}`, {
    hint: 'options: {"region": "us-east-1", "profile": "<name>", "api": "auto|invoke|converse", "models": {"<client model>": "<Bedrock model id>"}}',
    details: { provider_id: providerId },
  });
}

export function bedrockOptions(providerId: string, options: unknown): BedrockOptions {
  const obj = options === undefined ? {} : (asObject(options) ?? fail(providerId, 'options must be an object'));
  const unknown = Object.keys(obj).filter((k) => !['region', 'profile', 'api', 'models'].includes(k));
  if (unknown.length > 0) fail(providerId, `unknown field(s) ${show(unknown)}`);
  for (const k of ['region', 'profile'] as const)
    if (obj[k] !== undefined && (typeof obj[k] !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(obj[k] as string)))
      fail(providerId, `${k} must be a name, got ${show(obj[k])}`);
  if (obj.api !== undefined && !APIS.includes(obj.api as BedrockApi))
    fail(providerId, `api must be one of ${show(APIS)}, got ${show(obj.api)}`);
  const models: Record<string, string> = {};
  const listed = obj.models === undefined ? {} : (asObject(obj.models) ?? fail(providerId, 'models must be an object'));
  for (const [model, id] of Object.entries(listed)) {
    if (typeof id !== 'string' || id === '' || id.length > 2048) fail(providerId, `models.${model} must be a model id`);
    models[model] = id;
  }
  return {
    api: (obj.api as BedrockApi | undefined) ?? 'auto',
    ...(obj.region === undefined ? {} : { region: obj.region as string }),
    ...(obj.profile === undefined ? {} : { profile: obj.profile as string }),
    models,
  };
}

const streamed = (request: WireRequest): boolean => request.body?.stream === true;
const counting = (request: WireRequest): boolean => request.surface === 'anthropic.count_tokens';

/** The operation a call goes to under `/model/{modelId}/`. */
function action(converse: boolean, request: WireRequest): string {
  if (counting(request)) return 'count-tokens';
  if (converse) return streamed(request) ? 'converse-stream' : 'converse';
  return streamed(request) ? 'invoke-with-response-stream' : 'invoke';
}

function modelId(options: BedrockOptions, request: WireRequest): string {
  const model = typeof request.body?.model === 'string' ? request.body.model : '';
  return Object.hasOwn(options.models, model) ? (options.models[model] as string) : model;
}

/**
 * Whether a model is called through Converse. `auto`: a Bedrock model id (`vendor.model`, perhaps behind a
 * cross-region prefix or in an ARN) of any vendor but Anthropic; Anthropic's models take their own Messages body
 * through InvokeModel (every Messages feature passes as is), and so does a name that is no Bedrock id.
 */
export function usesConverse(options: BedrockOptions, id: string): boolean {
  if (options.api !== 'auto') return options.api === 'converse';
  const vendor = bedrockVendor(id);
  return vendor !== null && vendor !== 'anthropic';
}

/**
 * The Messages body as InvokeModel takes it: no `model` (it is in the URL) or `stream` (the path says it),
 * `anthropic_version: bedrock-2023-05-31`, and the client's `anthropic-beta` header as `anthropic_beta`.
 */
export function invokeBody(request: WireRequest): Record<string, unknown> {
  const { model: _model, stream: _stream, ...rest } = request.body ?? {};
  const body: Record<string, unknown> = { anthropic_version: BEDROCK_ANTHROPIC_VERSION, ...rest };
  const beta = request.headers['anthropic-beta'];
  if (beta !== undefined && body.anthropic_beta === undefined)
    body.anthropic_beta = beta
      .split(',')
      .map((b) => b.trim())
      .filter((b) => b !== '');
  return body;
}

export interface BedrockSetup {
  env: Readonly<Record<string, string | undefined>>;
  options: unknown;
  clock: Clock;
  readFile: ReadFile;
}

/**
 * AWS Bedrock serving Anthropic's Messages API: Claude through InvokeModel, other models through Converse (the
 * request mapped field by field, the reply mapped back). The model is in the URL, requests are signed with SigV4 for
 * service `bedrock`, a streamed reply's eventstream is turned into Anthropic's SSE events, so Anthropic's readers and
 * neutral mapping apply unchanged.
 */
export function bedrockEntry(id: string, setup: BedrockSetup): ProviderEntry {
  const options = bedrockOptions(id, setup.options);
  const region = resolveRegion(id, setup.env, options.region, options.profile, setup.readFile);
  const credentials = resolveCredentials(id, setup.env, options.profile, setup.readFile);
  return {
    ...ANTHROPIC,
    id,
    endpoint: {
      // The AWS SDKs' own variable for a service endpoint (a VPC endpoint, a local fake).
      baseUrlVar: 'AWS_ENDPOINT_URL_BEDROCK_RUNTIME',
      apiKeyVar: 'CPLANE_BEDROCK_API_KEY_UNUSED',
      defaultBaseUrl: `https://bedrock-runtime.${region}.amazonaws.com`,
      keyRequired: false,
    },
    // The configured names too: a Chat client asking for a Llama on Bedrock is sent here, translated.
    models: [...(ANTHROPIC.models ?? []), ...Object.keys(options.models)],
    routes: ROUTES,
    listModels: () => Object.keys(options.models),
    url: (baseUrl, path, request) => {
      const model = modelId(options, request);
      return `${baseUrl}${path}/${encodeURIComponent(model)}/${action(usesConverse(options, model), request)}`;
    },
    body: (request) => {
      const converse = usesConverse(options, modelId(options, request));
      if (counting(request)) return countTokensBody(id, request, converse, invokeBody, modelId(options, request));
      return converse ? converseBody(id, request, modelId(options, request)) : invokeBody(request);
    },
    headers: (_key, request) => ({
      'content-type': 'application/json',
      accept: streamed(request) ? 'application/vnd.amazon.eventstream' : 'application/json',
    }),
    auth: new SigV4Auth(credentials, region, 'bedrock', setup.clock),
    // Claude on Bedrock leaves the cache counts out when nothing was cached: zero, not unknown.
    reader: (surface) => anthropicReader(surface, omittedCacheUsage),
    neutral: { ...ANTHROPIC.neutral, parse: (text) => parseMessage(text, omittedCacheUsage) },
    requestIdHeader: 'x-amzn-requestid',
    errorFacts: bedrockErrorFacts,
    reply: (response, request) => {
      if (counting(request)) return countTokensReply(id, response);
      const model = modelId(options, request);
      if (usesConverse(options, model)) return converseReply(id, response, model, streamed(request));
      return streamed(request) ? eventStreamReply(id, response) : response;
    },
  };
}

export interface BedrockProviderOptions extends HttpProviderOptions {
  /** Reads the shared credentials/config files (null when absent); default: the real file system. */
  readFile?: ReadFile;
}

/** Bedrock configured by `{base_url?, options?: {region, profile, models}}` and the AWS environment. */
export class BedrockProvider extends HttpProvider {
  constructor(options: BedrockProviderOptions = {}) {
    super(
      ...configuredEntry(options, 'bedrock', (input) =>
        bedrockEntry(input.id, { ...input, readFile: options.readFile ?? readFileIfAny }),
      ),
    );
  }
}

/** This package's contribution: opt-in, the operator names it in `gateway.upstreams.anthropic`. */
export default defineConfiguredProvider({
  serves: Object.keys(ROUTES) as WireSurface[],
  optIn: true,
  entry: (input) => bedrockEntry(input.id, { ...input, readFile: readFileIfAny }),
});
