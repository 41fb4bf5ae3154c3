/**
 * A provider package's model catalogue: each model's context window and its price in USD per million tokens, shaped
 * like the budget's `pricing` entries, with the source the figures were read from. The budget's shipped price table
 * (PKG-BUDGETER-001 config/budget.json) carries the same prices; a test holds the two together, so a catalogue edit
 * that forgets the table (or the other way round) fails.
 */
export interface ModelFacts {
  /** Tokens of prompt and output together; null where the source does not state it. */
  context_window: number | null;
  max_output_tokens: number | null;
  input_per_mtok: number;
  output_per_mtok: number;
  cache_read_per_mtok: number;
  cache_write_5m_per_mtok: number;
  cache_write_1h_per_mtok: number;
  /** A key of the catalogue's sources. */
  from: string;
}

/** A source: the repository snapshot (commit, and date where known) and the file the figures come from. */
export type CatalogueSources = Readonly<Record<string, string>>;

export interface Catalogue {
  sources: CatalogueSources;
  models: Readonly<Record<string, ModelFacts>>;
}

/**
 * A price with no separate cache-write charge: the write buckets priced as input unless the source states a write
 * price, and cache reads as input where the model has no cached-input discount (null).
 */
export function tokenPriced(
  input: number,
  output: number,
  cacheRead: number | null,
  contextWindow: number | null,
  maxOutput: number | null,
  from: string,
  cacheWrite: number = input,
): ModelFacts {
  return {
    context_window: contextWindow,
    max_output_tokens: maxOutput,
    input_per_mtok: input,
    output_per_mtok: output,
    cache_read_per_mtok: cacheRead ?? input,
    cache_write_5m_per_mtok: cacheWrite,
    cache_write_1h_per_mtok: cacheWrite,
    from,
  };
}

/** A model's entry in the budget's price table. */
export function budgetPriceOf(facts: ModelFacts): Record<string, number> {
  return {
    input_per_mtok: facts.input_per_mtok,
    output_per_mtok: facts.output_per_mtok,
    cache_read_per_mtok: facts.cache_read_per_mtok,
    cache_write_5m_per_mtok: facts.cache_write_5m_per_mtok,
    cache_write_1h_per_mtok: facts.cache_write_1h_per_mtok,
  };
}
