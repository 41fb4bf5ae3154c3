import { CpError, show } from '#kernel/errors.js';
import { asObject, type JsonObject } from '#providers/json.js';
import { PRESETS, type Preset, type PresetAuth, type PresetPrice } from './presets.js';

const NAME = /^[a-z][a-z0-9_-]{0,63}$/;
const HEADER = /^[A-Za-z][A-Za-z0-9-]{0,63}$/;
const ENV = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const MAX_MODELS = 1024;

function fail(providerId: string, what: string): never {
  throw new CpError('ERR_PROVIDER_CONFIG', `invalid options for provider ${show(providerId)}: ${what}`, {
    hint: 'options: {"preset": "<name>"} naming a shipped preset (ollama, vllm, openrouter, groq, together, deepseek, mistral, xai) or one of options.presets',
    details: { provider_id: providerId },
  });
}

/**
 * The preset the config's `options` names: `{preset: "groq"}`, or an operator's own under `options.presets`
 * (which may also replace a shipped one). Every field is checked and bounded here, at the edge.
 */
export function presetFromOptions(providerId: string, options: unknown): { name: string; preset: Preset } {
  const obj = asObject(options);
  if (obj === null) fail(providerId, 'options must be an object naming a preset');
  const unknown = Object.keys(obj).filter((k) => k !== 'preset' && k !== 'presets');
  if (unknown.length > 0) fail(providerId, `unknown field(s) ${show(unknown)}`);
  const name = obj.preset;
  if (typeof name !== 'string' || !NAME.test(name)) fail(providerId, `preset must be a preset name, got ${show(name)}`);
  const own = obj.presets === undefined ? {} : asObject(obj.presets);
  if (own === null) fail(providerId, 'presets must be an object of preset records by name');
  // Own keys only: a name like "constructor" must not find the prototype's.
  if (Object.hasOwn(own, name)) return { name, preset: parsePreset(providerId, name, own[name]) };
  const shipped = Object.hasOwn(PRESETS, name) ? PRESETS[name] : undefined;
  if (shipped === undefined) fail(providerId, `no preset ${show(name)} (shipped: ${Object.keys(PRESETS).join(', ')})`);
  return { name, preset: shipped };
}

function parsePreset(providerId: string, name: string, value: unknown): Preset {
  const at = (field: string) => `presets.${name}.${field}`;
  const obj = asObject(value) ?? fail(providerId, `presets.${name} must be an object`);
  const allowed = ['base_url', 'auth', 'api_key_env', 'key_required', 'request_id_header', 'models', 'prices'];
  const unknown = Object.keys(obj).filter((k) => !allowed.includes(k));
  if (unknown.length > 0) fail(providerId, `unknown field(s) ${show(unknown)} in presets.${name}`);
  if (typeof obj.base_url !== 'string' || obj.base_url.length > 2048)
    fail(providerId, `${at('base_url')} must be a URL`);
  const apiKeyEnv = obj.api_key_env ?? null;
  if (apiKeyEnv !== null && (typeof apiKeyEnv !== 'string' || !ENV.test(apiKeyEnv)))
    fail(providerId, `${at('api_key_env')} must be an environment variable name or null`);
  const requestIdHeader = obj.request_id_header ?? 'x-request-id';
  if (typeof requestIdHeader !== 'string' || !HEADER.test(requestIdHeader))
    fail(providerId, `${at('request_id_header')} must be a header name`);
  if (obj.key_required !== undefined && typeof obj.key_required !== 'boolean')
    fail(providerId, `${at('key_required')} must be a boolean`);
  const prices = parsePrices(providerId, at('prices'), obj.prices ?? {});
  const models = obj.models ?? Object.keys(prices);
  if (!Array.isArray(models) || models.length > MAX_MODELS || !models.every((m) => typeof m === 'string' && m !== ''))
    fail(providerId, `${at('models')} must be a list of model ids`);
  return {
    base_url: obj.base_url,
    auth: parseAuth(providerId, at('auth'), obj.auth ?? 'bearer'),
    api_key_env: apiKeyEnv,
    key_required: obj.key_required === true,
    request_id_header: requestIdHeader.toLowerCase(),
    models: models as string[],
    prices,
  };
}

function parseAuth(providerId: string, where: string, value: unknown): PresetAuth {
  if (value === 'bearer' || value === 'none') return value;
  const header = asObject(value)?.header;
  if (typeof header === 'string' && HEADER.test(header) && header.toLowerCase() !== 'content-type')
    return { header: header.toLowerCase() };
  return fail(providerId, `${where} must be "bearer", "none" or {"header": "<name>"}`);
}

function parsePrices(providerId: string, where: string, value: unknown): Record<string, PresetPrice> {
  const obj: JsonObject = asObject(value) ?? fail(providerId, `${where} must be an object by model id`);
  const entries = Object.entries(obj);
  if (entries.length > MAX_MODELS) fail(providerId, `${where} lists more than ${MAX_MODELS} models`);
  const out: Record<string, PresetPrice> = {};
  for (const [model, raw] of entries) {
    const p = asObject(raw);
    const n = (k: string) => p?.[k];
    const ok = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v >= 0;
    if (!ok(n('input_per_mtok')) || !ok(n('output_per_mtok')))
      fail(providerId, `${where}.${model} needs input_per_mtok and output_per_mtok (non-negative numbers)`);
    const input = n('input_per_mtok') as number;
    const cacheRead = n('cache_read_per_mtok') ?? input;
    if (!ok(cacheRead)) fail(providerId, `${where}.${model}.cache_read_per_mtok must be a non-negative number`);
    out[model] = {
      input_per_mtok: input,
      output_per_mtok: n('output_per_mtok') as number,
      cache_read_per_mtok: cacheRead as number,
    };
  }
  return out;
}
