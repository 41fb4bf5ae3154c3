import { type Catalogue, tokenPriced } from '#providers/catalogue.js';

/**
 * OpenAI's models: context windows and Standard prices in USD per million tokens. OpenAI bills no cache write, so the
 * write buckets (always 0 in its usage) are priced as input, except where the source states a write price; a model
 * with no cached-input discount prices its cache reads as input. Prompts over 272k tokens cost more on GPT-5.4, 5.5,
 * 5.5 pro and GPT-6 Astra (5.5: 10 / 45 / 1; 5.4: 5 / 22.5 / 0.5; 5.5 pro: 60 / 270; Astra: 20 / 75 / 2 / write 25),
 * which a flat table cannot say. A dated id carries the price of the alias whose release date it names.
 */
export const OPENAI_SOURCES = {
  MD: 'anomalyco/models.dev f3fc692299671838c7c65fd8126bf84d81a2e817 (2026-07-02), providers/openai/models/<id>.toml',
  GPT_5_6:
    'anomalyco/models.dev 89b873ed9e9c2420f7d2c972c9d051ad223e8096 providers/openai/models/gpt-5.6-{sol,terra,luna}.toml',
  GPT_6_ASTRA:
    'anomalyco/models.dev e2f67ad689b593eca60f55be618a3f438468cc43 providers/openai/models/gpt-6-astra.toml; limits 6cec76d0d5a530cceef297f6fda10ed0e5f8551a models/openai/gpt-6-astra.toml',
} as const;

const gpt = tokenPriced;

const MD: keyof typeof OPENAI_SOURCES = 'MD';

export const OPENAI_CATALOGUE: Catalogue = {
  sources: OPENAI_SOURCES,
  models: {
    'gpt-6-astra': gpt(10, 50, 1, 1_050_000, 128_000, 'GPT_6_ASTRA', 12.5),
    'gpt-5.6-sol': gpt(5, 30, 0.5, 1_050_000, 128_000, 'GPT_5_6'),
    'gpt-5.6-terra': gpt(2.5, 15, 0.25, 1_050_000, 128_000, 'GPT_5_6'),
    'gpt-5.6-luna': gpt(1, 6, 0.1, 1_050_000, 128_000, 'GPT_5_6'),
    'gpt-5.5': gpt(5, 30, 0.5, 1_050_000, 128_000, MD),
    'gpt-5.5-2026-04-23': gpt(5, 30, 0.5, 1_050_000, 128_000, MD),
    'gpt-5.5-pro': gpt(30, 180, null, 1_050_000, 128_000, MD),
    'gpt-5.5-pro-2026-04-23': gpt(30, 180, null, 1_050_000, 128_000, MD),
    'gpt-5.4': gpt(2.5, 15, 0.25, 1_050_000, 128_000, MD),
    'gpt-5.4-mini': gpt(0.75, 4.5, 0.075, 400_000, 128_000, MD),
    'gpt-5.4-mini-2026-03-17': gpt(0.75, 4.5, 0.075, 400_000, 128_000, MD),
    'gpt-5.4-nano': gpt(0.2, 1.25, 0.02, 400_000, 128_000, MD),
    'gpt-5.4-nano-2026-03-17': gpt(0.2, 1.25, 0.02, 400_000, 128_000, MD),
    'gpt-5.3-chat-latest': gpt(1.75, 14, 0.175, 128_000, 16_384, MD),
    'gpt-5.2': gpt(1.75, 14, 0.175, 400_000, 128_000, MD),
    'gpt-5.2-2025-12-11': gpt(1.75, 14, 0.175, 400_000, 128_000, MD),
    'gpt-5.2-chat-latest': gpt(1.75, 14, 0.175, 128_000, 16_384, MD),
    'gpt-5.2-pro': gpt(21, 168, null, 400_000, 128_000, MD),
    'gpt-5.2-pro-2025-12-11': gpt(21, 168, null, 400_000, 128_000, MD),
    'gpt-5.1': gpt(1.25, 10, 0.125, 400_000, 128_000, MD),
    'gpt-5.1-2025-11-13': gpt(1.25, 10, 0.125, 400_000, 128_000, MD),
    'gpt-5.1-chat-latest': gpt(1.25, 10, 0.125, 128_000, 16_384, MD),
    'gpt-5.1-codex': gpt(1.25, 10, 0.125, 400_000, 128_000, MD),
    'gpt-5.1-codex-max': gpt(1.25, 10, 0.125, 400_000, 128_000, MD),
    'gpt-5': gpt(1.25, 10, 0.125, 400_000, 128_000, MD),
    'gpt-5-2025-08-07': gpt(1.25, 10, 0.125, 400_000, 128_000, MD),
    'gpt-5-chat-latest': gpt(1.25, 10, 0.125, 400_000, 128_000, MD),
    'gpt-5-codex': gpt(1.25, 10, 0.125, 400_000, 128_000, MD),
    'gpt-5-pro': gpt(15, 120, null, 400_000, 272_000, MD),
    'gpt-5-pro-2025-10-06': gpt(15, 120, null, 400_000, 272_000, MD),
    'gpt-5-mini': gpt(0.25, 2, 0.025, 400_000, 128_000, MD),
    'gpt-5-mini-2025-08-07': gpt(0.25, 2, 0.025, 400_000, 128_000, MD),
    'gpt-5-nano': gpt(0.05, 0.4, 0.005, 400_000, 128_000, MD),
    'gpt-5-nano-2025-08-07': gpt(0.05, 0.4, 0.005, 400_000, 128_000, MD),
    'gpt-4.1': gpt(2, 8, 0.5, 1_047_576, 32_768, MD),
    'gpt-4.1-2025-04-14': gpt(2, 8, 0.5, 1_047_576, 32_768, MD),
    'gpt-4.1-mini': gpt(0.4, 1.6, 0.1, 1_047_576, 32_768, MD),
    'gpt-4.1-mini-2025-04-14': gpt(0.4, 1.6, 0.1, 1_047_576, 32_768, MD),
    'gpt-4.1-nano': gpt(0.1, 0.4, 0.025, 1_047_576, 32_768, MD),
    'gpt-4.1-nano-2025-04-14': gpt(0.1, 0.4, 0.025, 1_047_576, 32_768, MD),
    'o4-mini': gpt(1.1, 4.4, 0.275, 200_000, 100_000, MD),
    'o4-mini-2025-04-16': gpt(1.1, 4.4, 0.275, 200_000, 100_000, MD),
    o3: gpt(2, 8, 0.5, 200_000, 100_000, MD),
    'o3-2025-04-16': gpt(2, 8, 0.5, 200_000, 100_000, MD),
    'o3-mini': gpt(1.1, 4.4, 0.55, 200_000, 100_000, MD),
    'o3-mini-2025-01-31': gpt(1.1, 4.4, 0.55, 200_000, 100_000, MD),
    'o3-pro': gpt(20, 80, null, 200_000, 100_000, MD),
    'o3-pro-2025-06-10': gpt(20, 80, null, 200_000, 100_000, MD),
    o1: gpt(15, 60, 7.5, 200_000, 100_000, MD),
    'o1-2024-12-17': gpt(15, 60, 7.5, 200_000, 100_000, MD),
    'o1-pro': gpt(150, 600, null, 200_000, 100_000, MD),
    'o1-pro-2025-03-19': gpt(150, 600, null, 200_000, 100_000, MD),
    'o3-deep-research': gpt(10, 40, 2.5, 200_000, 100_000, MD),
    'o3-deep-research-2025-06-26': gpt(10, 40, 2.5, 200_000, 100_000, MD),
    'o4-mini-deep-research': gpt(2, 8, 0.5, 200_000, 100_000, MD),
    'o4-mini-deep-research-2025-06-26': gpt(2, 8, 0.5, 200_000, 100_000, MD),
    'gpt-4o': gpt(2.5, 10, 1.25, 128_000, 16_384, MD),
    'gpt-4o-2024-11-20': gpt(2.5, 10, 1.25, 128_000, 16_384, MD),
    'gpt-4o-2024-08-06': gpt(2.5, 10, 1.25, 128_000, 16_384, MD),
    'gpt-4o-mini': gpt(0.15, 0.6, 0.075, 128_000, 16_384, MD),
    'gpt-4o-mini-2024-07-18': gpt(0.15, 0.6, 0.075, 128_000, 16_384, MD),
    'text-embedding-3-small': gpt(0.02, 0, null, 8191, null, MD),
    'text-embedding-3-large': gpt(0.13, 0, null, 8191, null, MD),
    'text-embedding-ada-002': gpt(0.1, 0, null, 8192, null, MD),
  },
};
