// The shipped presets: data, not code. Base URLs, auth and key variables as each vendor's OpenAI-compatibility
// docs give them (console.groq.com/docs/openai, api-docs.deepseek.com, docs.mistral.ai, docs.x.ai,
// docs.together.ai, openrouter.ai/docs, docs.vllm.ai, docs.ollama.com/openai); prices in USD per million tokens
// from the vendors' price pages (November 2026). Local servers (Ollama, vLLM) list no models and cost nothing.

/** A model's price, shaped like the budget's `pricing` entries. */
export interface PresetPrice {
  input_per_mtok: number;
  output_per_mtok: number;
  cache_read_per_mtok: number;
}

/** How the key goes on the wire: `Authorization: Bearer <key>`, a header of its own, or not at all. */
export type PresetAuth = 'bearer' | 'none' | { header: string };

export interface Preset {
  /** The base the OpenAI paths (`/chat/completions`, `/models`) go under: it includes the vendor's `/v1`. */
  base_url: string;
  auth: PresetAuth;
  /** The environment variable holding the key; null for a server that takes none. */
  api_key_env: string | null;
  key_required: boolean;
  /** The reply header carrying the vendor's request id. */
  request_id_header: string;
  models: readonly string[];
  prices: Readonly<Record<string, PresetPrice>>;
}

const price = (input: number, output: number, cacheRead = input): PresetPrice => ({
  input_per_mtok: input,
  output_per_mtok: output,
  cache_read_per_mtok: cacheRead,
});

function hosted(base_url: string, api_key_env: string, prices: Record<string, PresetPrice>): Preset {
  return {
    base_url,
    auth: 'bearer',
    api_key_env,
    key_required: true,
    request_id_header: 'x-request-id',
    models: Object.keys(prices),
    prices,
  };
}

function local(base_url: string, api_key_env: string | null): Preset {
  return {
    base_url,
    auth: api_key_env === null ? 'none' : 'bearer',
    api_key_env,
    key_required: false,
    request_id_header: 'x-request-id',
    models: [],
    prices: {},
  };
}

export const PRESETS: Readonly<Record<string, Preset>> = {
  ollama: local('http://localhost:11434/v1', null),
  vllm: local('http://localhost:8000/v1', 'VLLM_API_KEY'),
  openrouter: hosted('https://openrouter.ai/api/v1', 'OPENROUTER_API_KEY', {
    'anthropic/claude-sonnet-4.5': price(3, 15, 0.3),
    'anthropic/claude-haiku-4.5': price(1, 5, 0.1),
    'openai/gpt-4.1-mini': price(0.4, 1.6, 0.1),
    'openai/gpt-5': price(1.25, 10, 0.125),
    'google/gemini-2.5-flash': price(0.3, 2.5, 0.075),
    'google/gemini-2.5-pro': price(1.25, 10, 0.31),
  }),
  groq: hosted('https://api.groq.com/openai/v1', 'GROQ_API_KEY', {
    'llama-3.3-70b-versatile': price(0.59, 0.79),
    'llama-3.1-8b-instant': price(0.05, 0.08),
    'openai/gpt-oss-120b': price(0.15, 0.75),
    'openai/gpt-oss-20b': price(0.1, 0.5),
    'moonshotai/kimi-k2-instruct-0905': price(1, 3),
  }),
  together: hosted('https://api.together.xyz/v1', 'TOGETHER_API_KEY', {
    'meta-llama/Llama-3.3-70B-Instruct-Turbo': price(0.88, 0.88),
    'deepseek-ai/DeepSeek-V3': price(1.25, 1.25),
    'Qwen/Qwen2.5-72B-Instruct-Turbo': price(1.2, 1.2),
    'openai/gpt-oss-120b': price(0.15, 0.6),
  }),
  deepseek: hosted('https://api.deepseek.com/v1', 'DEEPSEEK_API_KEY', {
    'deepseek-chat': price(0.28, 0.42, 0.028),
    'deepseek-reasoner': price(0.28, 0.42, 0.028),
  }),
  mistral: hosted('https://api.mistral.ai/v1', 'MISTRAL_API_KEY', {
    'mistral-large-latest': price(2, 6),
    'mistral-medium-latest': price(0.4, 2),
    'mistral-small-latest': price(0.1, 0.3),
    'codestral-latest': price(0.3, 0.9),
  }),
  xai: hosted('https://api.x.ai/v1', 'XAI_API_KEY', {
    'grok-4': price(3, 15, 0.75),
    'grok-4-fast-non-reasoning': price(0.2, 0.5, 0.05),
    'grok-code-fast-1': price(0.2, 1.5, 0.02),
    'grok-3-mini': price(0.3, 0.5, 0.075),
  }),
};
