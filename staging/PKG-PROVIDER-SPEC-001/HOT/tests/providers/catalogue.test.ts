// The shipped model catalogues and the budget's price table: each provider package's catalogue is the budget's price
// table for its models, and names a source it records. (That every model the official SDKs list is priced is checked
// by test/providers/catalogue-sdk.test.ts, where the SDKs are installed.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { budgetPriceOf, type Catalogue } from '../../providers/catalogue.js';
import { ANTHROPIC_CATALOGUE } from '../../providers/anthropic/models.js';
import { OPENAI_CATALOGUE } from '../../providers/openai/models.js';
import { BEDROCK_CATALOGUE } from '../../providers/bedrock/models.js';
import { VERTEX_CATALOGUE } from '../../providers/vertex/models.js';

const pricing = (
  JSON.parse(readFileSync(new URL('../../config/budget.json', import.meta.url), 'utf8')) as {
    pricing: Record<string, unknown>;
  }
).pricing;

const CATALOGUES: Record<string, Catalogue> = {
  anthropic: ANTHROPIC_CATALOGUE,
  openai: OPENAI_CATALOGUE,
  bedrock: BEDROCK_CATALOGUE,
  vertex: VERTEX_CATALOGUE,
};

test("catalogue: each provider's catalogue is the budget's price table for its models, each price with its source", () => {
  for (const [provider, { sources, models }] of Object.entries(CATALOGUES)) {
    for (const [model, facts] of Object.entries(models)) {
      assert.deepEqual(pricing[model], budgetPriceOf(facts), `${provider} ${model}`);
      assert.ok(Object.hasOwn(sources, facts.from), `${provider} ${model}: source ${facts.from} not recorded`);
      const { context_window: window, max_output_tokens: output } = facts;
      if (window !== null && output !== null) assert.ok(output < window, `${provider} ${model}: output ≥ window`);
      // A cache read never costs more than input; a write never less than a read.
      assert.ok(facts.cache_read_per_mtok <= facts.input_per_mtok, `${provider} ${model}: cache read`);
      assert.ok(facts.cache_write_5m_per_mtok >= facts.cache_read_per_mtok, `${provider} ${model}: cache write`);
    }
  }
});
