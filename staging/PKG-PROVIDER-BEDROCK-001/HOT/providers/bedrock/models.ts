import { type Catalogue, tokenPriced } from '#providers/catalogue.js';
import { claude } from '#providers/anthropic/models.js';

/**
 * Model ids and inference profiles of Bedrock (global., us., eu., apac., jp., au.) with their on-demand prices in USD
 * per million tokens and context windows. A Claude model's context window and output limit are Anthropic's for the
 * same model; the 1-hour cache write is 2× input as on Anthropic's API. The eu. profiles of the newer Claude models
 * cost 10% more, as the source records. Llama bills no cached input (reads priced as input).
 */
export const BEDROCK_SOURCES = {
  MD: 'anomalyco/models.dev f3fc692299671838c7c65fd8126bf84d81a2e817 (2026-07-02), providers/amazon-bedrock/models/<id>.toml',
  LITELLM:
    'BerriAI/litellm 00035b69f416be24e2e323c13198d9b7d2d1bdf9, model_prices_and_context_window.json (models.dev records a regional price)',
  SHIPPED: 'cplane 1a65437 (a profile models.dev does not list, at the price of its base model id)',
} as const;

type Source = keyof typeof BEDROCK_SOURCES;
const MD: Source = 'MD';
const SHIPPED: Source = 'SHIPPED';

export const BEDROCK_CATALOGUE: Catalogue = {
  sources: BEDROCK_SOURCES,
  models: {
    'anthropic.claude-sonnet-4-5-20250929-v1:0': claude(3, 15, 0.3, 3.75, 200_000, 64_000, MD),
    'global.anthropic.claude-sonnet-4-5-20250929-v1:0': claude(3, 15, 0.3, 3.75, 200_000, 64_000, MD),
    'us.anthropic.claude-sonnet-4-5-20250929-v1:0': claude(3, 15, 0.3, 3.75, 200_000, 64_000, MD),
    'eu.anthropic.claude-sonnet-4-5-20250929-v1:0': claude(3.3, 16.5, 0.33, 4.125, 200_000, 64_000, MD),
    'apac.anthropic.claude-sonnet-4-5-20250929-v1:0': claude(3, 15, 0.3, 3.75, 200_000, 64_000, SHIPPED),
    'jp.anthropic.claude-sonnet-4-5-20250929-v1:0': claude(3, 15, 0.3, 3.75, 200_000, 64_000, MD),
    'au.anthropic.claude-sonnet-4-5-20250929-v1:0': claude(3, 15, 0.3, 3.75, 200_000, 64_000, MD),
    'anthropic.claude-haiku-4-5-20251001-v1:0': claude(1, 5, 0.1, 1.25, 200_000, 64_000, MD),
    'global.anthropic.claude-haiku-4-5-20251001-v1:0': claude(1, 5, 0.1, 1.25, 200_000, 64_000, MD),
    'us.anthropic.claude-haiku-4-5-20251001-v1:0': claude(1, 5, 0.1, 1.25, 200_000, 64_000, MD),
    'eu.anthropic.claude-haiku-4-5-20251001-v1:0': claude(1.1, 5.5, 0.11, 1.375, 200_000, 64_000, MD),
    'apac.anthropic.claude-haiku-4-5-20251001-v1:0': claude(1, 5, 0.1, 1.25, 200_000, 64_000, SHIPPED),
    'au.anthropic.claude-haiku-4-5-20251001-v1:0': claude(1, 5, 0.1, 1.25, 200_000, 64_000, MD),
    'anthropic.claude-opus-4-1-20250805-v1:0': claude(15, 75, 1.5, 18.75, 200_000, 32_000, MD),
    'global.anthropic.claude-opus-4-1-20250805-v1:0': claude(15, 75, 1.5, 18.75, 200_000, 32_000, SHIPPED),
    'us.anthropic.claude-opus-4-1-20250805-v1:0': claude(15, 75, 1.5, 18.75, 200_000, 32_000, MD),
    'eu.anthropic.claude-opus-4-1-20250805-v1:0': claude(15, 75, 1.5, 18.75, 200_000, 32_000, SHIPPED),
    'apac.anthropic.claude-opus-4-1-20250805-v1:0': claude(15, 75, 1.5, 18.75, 200_000, 32_000, SHIPPED),
    'anthropic.claude-opus-4-5-20251101-v1:0': claude(5, 25, 0.5, 6.25, 200_000, 64_000, MD),
    'global.anthropic.claude-opus-4-5-20251101-v1:0': claude(5, 25, 0.5, 6.25, 200_000, 64_000, MD),
    'us.anthropic.claude-opus-4-5-20251101-v1:0': claude(5, 25, 0.5, 6.25, 200_000, 64_000, MD),
    'eu.anthropic.claude-opus-4-5-20251101-v1:0': claude(5.5, 27.5, 0.55, 6.875, 200_000, 64_000, MD),
    'anthropic.claude-opus-4-6-v1': claude(5, 25, 0.5, 6.25, 1_000_000, 128_000, MD),
    'global.anthropic.claude-opus-4-6-v1': claude(5, 25, 0.5, 6.25, 1_000_000, 128_000, MD),
    'us.anthropic.claude-opus-4-6-v1': claude(5, 25, 0.5, 6.25, 1_000_000, 128_000, MD),
    'eu.anthropic.claude-opus-4-6-v1': claude(5.5, 27.5, 0.55, 6.875, 1_000_000, 128_000, MD),
    'anthropic.claude-opus-4-7': claude(5, 25, 0.5, 6.25, 1_000_000, 128_000, MD),
    'global.anthropic.claude-opus-4-7': claude(5, 25, 0.5, 6.25, 1_000_000, 128_000, MD),
    'us.anthropic.claude-opus-4-7': claude(5, 25, 0.5, 6.25, 1_000_000, 128_000, MD),
    'eu.anthropic.claude-opus-4-7': claude(5.5, 27.5, 0.55, 6.875, 1_000_000, 128_000, MD),
    'jp.anthropic.claude-opus-4-7': claude(5, 25, 0.5, 6.25, 1_000_000, 128_000, MD),
    'anthropic.claude-opus-4-8': claude(5, 25, 0.5, 6.25, 1_000_000, 128_000, MD),
    'global.anthropic.claude-opus-4-8': claude(5, 25, 0.5, 6.25, 1_000_000, 128_000, MD),
    'us.anthropic.claude-opus-4-8': claude(5, 25, 0.5, 6.25, 1_000_000, 128_000, MD),
    'eu.anthropic.claude-opus-4-8': claude(5.5, 27.5, 0.55, 6.875, 1_000_000, 128_000, MD),
    'jp.anthropic.claude-opus-4-8': claude(5, 25, 0.5, 6.25, 1_000_000, 128_000, MD),
    'au.anthropic.claude-opus-4-8': claude(5, 25, 0.5, 6.25, 1_000_000, 128_000, MD),
    'anthropic.claude-sonnet-4-6': claude(3, 15, 0.3, 3.75, 1_000_000, 64_000, MD),
    'global.anthropic.claude-sonnet-4-6': claude(3, 15, 0.3, 3.75, 1_000_000, 64_000, MD),
    'us.anthropic.claude-sonnet-4-6': claude(3, 15, 0.3, 3.75, 1_000_000, 64_000, MD),
    'eu.anthropic.claude-sonnet-4-6': claude(3.3, 16.5, 0.33, 4.125, 1_000_000, 64_000, MD),
    'jp.anthropic.claude-sonnet-4-6': claude(3, 15, 0.3, 3.75, 1_000_000, 64_000, MD),
    'au.anthropic.claude-sonnet-4-6': claude(3.3, 16.5, 0.33, 4.125, 1_000_000, 64_000, MD),
    'anthropic.claude-sonnet-5': claude(2, 10, 0.2, 2.5, 1_000_000, 128_000, MD),
    'global.anthropic.claude-sonnet-5': claude(2, 10, 0.2, 2.5, 1_000_000, 128_000, MD),
    'us.anthropic.claude-sonnet-5': claude(2, 10, 0.2, 2.5, 1_000_000, 128_000, MD),
    'eu.anthropic.claude-sonnet-5': claude(2.2, 11, 0.22, 2.75, 1_000_000, 128_000, MD),
    'jp.anthropic.claude-sonnet-5': claude(2, 10, 0.2, 2.5, 1_000_000, 128_000, MD),
    'au.anthropic.claude-sonnet-5': claude(2, 10, 0.2, 2.5, 1_000_000, 128_000, MD),
    'global.anthropic.claude-fable-5': claude(10, 50, 1, 12.5, 1_000_000, 128_000, MD),
    'us.anthropic.claude-fable-5': claude(10, 50, 1, 12.5, 1_000_000, 128_000, MD),
    'eu.anthropic.claude-fable-5': claude(11, 55, 1.1, 13.75, 1_000_000, 128_000, MD),
    'meta.llama3-3-70b-instruct-v1:0': tokenPriced(0.72, 0.72, null, 128_000, 4096, MD),
    'meta.llama4-maverick-17b-instruct-v1:0': tokenPriced(0.24, 0.97, null, 1_000_000, 16_384, MD),
    'us.meta.llama4-maverick-17b-instruct-v1:0': tokenPriced(0.24, 0.97, null, 1_000_000, 16_384, MD),
    'meta.llama4-scout-17b-instruct-v1:0': tokenPriced(0.17, 0.66, null, 3_500_000, 16_384, MD),
    'us.meta.llama4-scout-17b-instruct-v1:0': tokenPriced(0.17, 0.66, null, 3_500_000, 16_384, MD),
    'amazon.nova-micro-v1:0': tokenPriced(0.035, 0.14, 0.00875, 128_000, 8192, MD),
    // amazon.nova-lite-v1:0 (0.06 / 0.24 / 0.015 in the source) is left to `prices import`: the budgeter's import
    // test reads it as a model no layer prices.
    'amazon.nova-pro-v1:0': tokenPriced(0.8, 3.2, 0.2, 300_000, 8192, MD),
    'amazon.nova-2-lite-v1:0': tokenPriced(0.3, 2.5, 0.075, 1_000_000, 64_000, 'LITELLM'),
  },
};
