/**
 * The Gemini models this package knows, with their context windows and the Gemini API's Standard (paid tier) prices
 * in USD per million tokens for prompts up to 200k tokens (ai.google.dev/gemini-api/docs/pricing, as models.dev
 * records it). The budget's price table (PKG-BUDGETER-001 config/budget.json) carries the same prices: a test holds
 * the two together. Gemini bills no cache writes per token (explicit caches by storage time), so the write buckets,
 * always 0 in its usage, are priced as input. Longer prompts cost more on the Pro models (2.5 Pro: 2.50 / 15.00 /
 * 0.25; 3 and 3.1 Pro: 4.00 / 18.00 / 0.40), which a flat table cannot say: see docs/providers/gemini.md.
 * The `-latest` aliases and customtools are models.dev's figures at anomalyco/models.dev
 * f3fc692299671838c7c65fd8126bf84d81a2e817 (2026-07-02), providers/google/models/<id>.toml. Gemini 3.5 Flash-Lite
 * and 3.6 Flash are priced by npm @pydantic/genai-prices 0.1.8 (2026-09-23), provider google, with the limits of
 * their model pages (ai.google.dev/gemini-api/docs/models/gemini-3.5-flash-lite, Vertex AI's 3-6-flash).
 */
export interface GeminiModel {
  context_window: number;
  max_output_tokens: number;
  input_per_mtok: number;
  output_per_mtok: number;
  cache_read_per_mtok: number;
}

const M = 1_048_576;

export const GEMINI_MODELS: Readonly<Record<string, GeminiModel>> = {
  'gemini-2.5-pro': {
    context_window: M,
    max_output_tokens: 65_536,
    input_per_mtok: 1.25,
    output_per_mtok: 10,
    cache_read_per_mtok: 0.125,
  },
  'gemini-2.5-flash': {
    context_window: M,
    max_output_tokens: 65_536,
    input_per_mtok: 0.3,
    output_per_mtok: 2.5,
    cache_read_per_mtok: 0.03,
  },
  'gemini-2.5-flash-lite': {
    context_window: M,
    max_output_tokens: 65_536,
    input_per_mtok: 0.1,
    output_per_mtok: 0.4,
    cache_read_per_mtok: 0.01,
  },
  'gemini-2.0-flash': {
    context_window: M,
    max_output_tokens: 8_192,
    input_per_mtok: 0.1,
    output_per_mtok: 0.4,
    cache_read_per_mtok: 0.025,
  },
  'gemini-3-flash-preview': {
    context_window: M,
    max_output_tokens: 65_536,
    input_per_mtok: 0.5,
    output_per_mtok: 3,
    cache_read_per_mtok: 0.05,
  },
  'gemini-3-pro-preview': {
    context_window: M,
    max_output_tokens: 65_536,
    input_per_mtok: 2,
    output_per_mtok: 12,
    cache_read_per_mtok: 0.2,
  },
  'gemini-3.1-pro-preview': {
    context_window: M,
    max_output_tokens: 65_536,
    input_per_mtok: 2,
    output_per_mtok: 12,
    cache_read_per_mtok: 0.2,
  },
  // The alias of the current Pro release (gemini-3.1-pro-preview since 2026-03-06).
  'gemini-pro-latest': {
    context_window: M,
    max_output_tokens: 65_536,
    input_per_mtok: 2,
    output_per_mtok: 12,
    cache_read_per_mtok: 0.2,
  },
  // gemini-3.1-pro-preview tuned to prefer the caller's custom tools, at its price.
  'gemini-3.1-pro-preview-customtools': {
    context_window: M,
    max_output_tokens: 65_536,
    input_per_mtok: 2,
    output_per_mtok: 12,
    cache_read_per_mtok: 0.2,
  },
  'gemini-flash-latest': {
    context_window: M,
    max_output_tokens: 65_536,
    input_per_mtok: 0.3,
    output_per_mtok: 2.5,
    cache_read_per_mtok: 0.075,
  },
  'gemini-flash-lite-latest': {
    context_window: M,
    max_output_tokens: 65_536,
    input_per_mtok: 0.1,
    output_per_mtok: 0.4,
    cache_read_per_mtok: 0.025,
  },
  'gemini-3.1-flash-lite': {
    context_window: M,
    max_output_tokens: 65_536,
    input_per_mtok: 0.25,
    output_per_mtok: 1.5,
    cache_read_per_mtok: 0.025,
  },
  'gemini-3.5-flash': {
    context_window: M,
    max_output_tokens: 65_536,
    input_per_mtok: 1.5,
    output_per_mtok: 9,
    cache_read_per_mtok: 0.15,
  },
  'gemini-3.7-flash': {
    context_window: M,
    max_output_tokens: 65_536,
    input_per_mtok: 1.5,
    output_per_mtok: 7.5,
    cache_read_per_mtok: 0.15,
  },
  // Introductory Standard pricing through 2026-12-31 (1.50 / 7.50 / 0.15 from 2027).
  'gemini-3.8-flash': {
    context_window: M,
    max_output_tokens: 65_536,
    input_per_mtok: 0.75,
    output_per_mtok: 3.75,
    cache_read_per_mtok: 0.075,
  },
  'gemini-3.5-flash-lite': {
    context_window: M,
    max_output_tokens: 65_536,
    input_per_mtok: 0.3,
    output_per_mtok: 2.5,
    cache_read_per_mtok: 0.03,
  },
  // Introductory Standard pricing through 2026-12-31 (1.50 / 7.50 / 0.15 from 2027; ai-sdk-cost-calculator 7.1.14
  // already states those).
  'gemini-3.6-flash': {
    context_window: M,
    max_output_tokens: 65_536,
    input_per_mtok: 0.75,
    output_per_mtok: 3.75,
    cache_read_per_mtok: 0.075,
  },
};

/** A model's entry in the budget's price table. */
export function budgetPrice(model: GeminiModel): Record<string, number> {
  return {
    input_per_mtok: model.input_per_mtok,
    output_per_mtok: model.output_per_mtok,
    cache_read_per_mtok: model.cache_read_per_mtok,
    cache_write_5m_per_mtok: model.input_per_mtok,
    cache_write_1h_per_mtok: model.input_per_mtok,
  };
}
