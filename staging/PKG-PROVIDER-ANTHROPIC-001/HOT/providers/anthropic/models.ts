import type { Catalogue, ModelFacts } from '#providers/catalogue.js';

/**
 * The Claude models of Anthropic's API: context windows and Standard prices in USD per million tokens. Anthropic bills
 * a 5-minute cache write at 1.25× input and a 1-hour one at 2× input; the sources state the 5-minute price, the
 * 1-hour one is derived. Sonnet 5's $2/$10 is its introductory rate as the sources record it. Fable 5.1 and Mythos
 * 5.1 read their cache at 0.025× input, as the sources record.
 */
export const ANTHROPIC_SOURCES = {
  MD: 'anomalyco/models.dev f3fc692299671838c7c65fd8126bf84d81a2e817 (2026-07-02), providers/anthropic/models/<id>.toml',
  OPUS_5:
    'anomalyco/models.dev b01d148610a49e2cb692e841223ebf8bc7d61c67 providers/anthropic/models/claude-opus-5.toml; limits 64e4e40caddc002620eef7f7ebdd3008fae7b4fa models/anthropic/claude-opus-5.toml',
  OPUS_5_5:
    'anomalyco/models.dev 482fb019a4847290b37990da929dc707d9243dca providers/anthropic/models/claude-opus-5-5.toml',
  SONNET_5_5:
    'anomalyco/models.dev 4eaad7f59befbf854efa2b0da5a41e4aa94aca83 providers/anthropic/models/claude-sonnet-5-5.toml',
  GENAI: 'npm @pydantic/genai-prices 0.1.8 (2026-09-23), dist/index.js, provider anthropic',
  AISDK: 'npm ai-sdk-cost-calculator 7.1.14 (2026-09-23, prices verified 2026-09-22), dist/index.mjs anthropicPricing',
  MYTHOS_5:
    'npm ai-sdk-cost-calculator 7.1.14 (2026-09-23) anthropicPricing; limits anomalyco/models.dev 25af7c497937fc94d2489c669864b0c960bd49a9 models/anthropic/claude-mythos-5.toml',
} as const;

type Source = keyof typeof ANTHROPIC_SOURCES;

/** A Claude price: input, output, cache read, 5-minute cache write; the 1-hour write is 2× input. */
export function claude(
  input: number,
  output: number,
  cacheRead: number,
  cacheWrite5m: number,
  contextWindow: number | null,
  maxOutput: number | null,
  from: string,
): ModelFacts {
  return {
    context_window: contextWindow,
    max_output_tokens: maxOutput,
    input_per_mtok: input,
    output_per_mtok: output,
    cache_read_per_mtok: cacheRead,
    cache_write_5m_per_mtok: cacheWrite5m,
    cache_write_1h_per_mtok: Math.round(input * 2 * 1e6) / 1e6,
    from,
  };
}

const MD: Source = 'MD';

export const ANTHROPIC_CATALOGUE: Catalogue = {
  sources: ANTHROPIC_SOURCES,
  models: {
    'claude-opus-4-1': claude(15, 75, 1.5, 18.75, 200_000, 32_000, MD),
    'claude-opus-4-1-20250805': claude(15, 75, 1.5, 18.75, 200_000, 32_000, MD),
    'claude-opus-4-5': claude(5, 25, 0.5, 6.25, 200_000, 64_000, MD),
    'claude-opus-4-5-20251101': claude(5, 25, 0.5, 6.25, 200_000, 64_000, MD),
    'claude-opus-4-6': claude(5, 25, 0.5, 6.25, 1_000_000, 128_000, MD),
    'claude-opus-4-7': claude(5, 25, 0.5, 6.25, 1_000_000, 128_000, MD),
    'claude-opus-4-8': claude(5, 25, 0.5, 6.25, 1_000_000, 128_000, MD),
    'claude-opus-5': claude(5, 25, 0.5, 6.25, 1_000_000, 128_000, 'OPUS_5'),
    // The source states no limits for Opus 5.5 and Sonnet 5.5.
    'claude-opus-5-5': claude(4, 20, 0.2, 5, null, null, 'OPUS_5_5'),
    'claude-sonnet-4-5': claude(3, 15, 0.3, 3.75, 200_000, 64_000, MD),
    'claude-sonnet-4-5-20250929': claude(3, 15, 0.3, 3.75, 200_000, 64_000, MD),
    'claude-sonnet-4-6': claude(3, 15, 0.3, 3.75, 1_000_000, 64_000, MD),
    'claude-sonnet-5': claude(2, 10, 0.2, 2.5, 1_000_000, 128_000, MD),
    'claude-sonnet-5-5': claude(2, 10, 0.2, 2.5, null, null, 'SONNET_5_5'),
    'claude-haiku-4-5': claude(1, 5, 0.1, 1.25, 200_000, 64_000, MD),
    'claude-haiku-4-5-20251001': claude(1, 5, 0.1, 1.25, 200_000, 64_000, MD),
    'claude-fable-5': claude(10, 50, 1, 12.5, 1_000_000, 128_000, MD),
    'claude-fable-5-1': claude(10, 50, 0.25, 12.5, 1_000_000, null, 'GENAI'),
    // Mythos is offered to approved organisations only; the source states its rates.
    'claude-mythos-5': claude(10, 50, 1, 12.5, 1_000_000, 128_000, 'MYTHOS_5'),
    'claude-mythos-5-1': claude(10, 50, 0.25, 12.5, null, null, 'AISDK'),
  },
};
