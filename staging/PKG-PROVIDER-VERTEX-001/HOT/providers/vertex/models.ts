import type { Catalogue } from '#providers/catalogue.js';
import { claude } from '#providers/anthropic/models.js';

/**
 * Claude's model ids on Vertex AI (`<model>@<version>`, `@default` for the newer ones) with their prices in USD per
 * million tokens; context windows and output limits are Anthropic's for the same model, the 1-hour cache write 2×
 * input. Vertex bills prompts over 200k tokens on Opus 4.6–4.8 and Sonnet 4.6 at twice the rates (Sonnet 4.6:
 * 6 / 22.5 / 0.6 / 7.5), which a flat table cannot say. The ids without a version are Anthropic's catalogue's.
 */
export const VERTEX_SOURCES = {
  MD: 'anomalyco/models.dev f3fc692299671838c7c65fd8126bf84d81a2e817 (2026-07-02), providers/google-vertex-anthropic/models/<id>.toml',
} as const;

const MD: keyof typeof VERTEX_SOURCES = 'MD';

export const VERTEX_CATALOGUE: Catalogue = {
  sources: VERTEX_SOURCES,
  models: {
    'claude-opus-4-1@20250805': claude(15, 75, 1.5, 18.75, 200_000, 32_000, MD),
    'claude-opus-4-5@20251101': claude(5, 25, 0.5, 6.25, 200_000, 64_000, MD),
    'claude-opus-4-6@default': claude(5, 25, 0.5, 6.25, 1_000_000, 128_000, MD),
    'claude-opus-4-7@default': claude(5, 25, 0.5, 6.25, 1_000_000, 128_000, MD),
    'claude-opus-4-8@default': claude(5, 25, 0.5, 6.25, 1_000_000, 128_000, MD),
    'claude-sonnet-4-5@20250929': claude(3, 15, 0.3, 3.75, 200_000, 64_000, MD),
    'claude-sonnet-4-6@default': claude(3, 15, 0.3, 3.75, 1_000_000, 64_000, MD),
    'claude-sonnet-5@default': claude(2, 10, 0.2, 2.5, 1_000_000, 128_000, MD),
    'claude-haiku-4-5@20251001': claude(1, 5, 0.1, 1.25, 200_000, 64_000, MD),
  },
};
