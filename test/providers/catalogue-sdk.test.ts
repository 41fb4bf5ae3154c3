// Every model each official SDK installed here lists in its model type union (@anthropic-ai/sdk `Model`, openai
// `ChatModel` and `ResponsesModel`, @google/genai's model union) is priced in the budget's shipped price table, or is
// on the commented list below of ids no source read states a per-token price for. A repository test: the SDKs are the
// repository's dev dependencies, not part of an installed root.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { REPO } from '../../scripts/lib/repo.js';

const pricing = (
  JSON.parse(readFileSync(join(REPO, 'staging/PKG-BUDGETER-001/HOT/config/budget.json'), 'utf8')) as {
    pricing: Record<string, unknown>;
  }
).pricing;

const UNPRICED: Readonly<Record<'anthropic' | 'openai' | 'google', readonly string[]>> = {
  anthropic: [
    // No price in the sources read: models.dev (f3fc692 and the newer files its index holds), LiteLLM, and the npm
    // packages @pydantic/genai-prices 0.1.8 and ai-sdk-cost-calculator 7.1.14 (both 2026-09-23). Haiku 5.5's
    // models.dev entry states its limits but no price.
    'claude-haiku-5-5',
    'claude-fable-5-2',
    'claude-mythos-5-2',
    // A restricted-access research preview with no public price.
    'claude-mythos-preview',
  ],
  openai: [
    // Newer than the sources: none of them names these.
    'gpt-6.1-sol',
    'gpt-6.1-terra',
    // Trusted-access programmes (cyber, life sciences) no source prices.
    'gpt-6-cyber',
    'gpt-rosalind-research',
    'gpt-6-rosalind',
    // Audio tokens are billed at their own rates (gpt-audio-mini: text 0.60 / 2.40, audio 10 / 20), which usage's input
    // and output buckets do not separate; for the gpt-4o audio previews the sources state the text rates only.
    'gpt-audio-mini',
    'gpt-audio-mini-2025-12-15',
    'gpt-4o-audio-preview',
    'gpt-4o-audio-preview-2024-10-01',
    'gpt-4o-audio-preview-2024-12-17',
    'gpt-4o-audio-preview-2025-06-03',
    'gpt-4o-mini-audio-preview',
    'gpt-4o-mini-audio-preview-2024-12-17',
    // Each call of a search preview also pays a per-search fee ($25 per 1,000, ai-sdk-cost-calculator 7.1.14), most of
    // a call's cost, which a per-token table cannot charge.
    'gpt-4o-search-preview',
    'gpt-4o-mini-search-preview',
    'gpt-4o-search-preview-2025-03-11',
    'gpt-4o-mini-search-preview-2025-03-11',
  ],
  google: [
    // Gemma on the Gemini API has no paid tier (models.dev, genai-prices: no cost).
    'gemma-4-26b-a4b-it',
    'gemma-4-31b-it',
    // Newer than the sources: none of them names it.
    'gemini-4-argon',
    // Priced by ai-sdk-cost-calculator 7.1.14 alone, which states no limits, and the Gemini package's catalogue holds
    // each model with its window (its test: 1M tokens or more): Robotics-ER 2 at 2 / 10 / 0.2, 3.1 Flash TTS at 1 in /
    // 20 audio out. Robotics-ER 1.6 was shut down on 2026-08-31 (same source) and bills audio input apart.
    'gemini-robotics-er-1.6-preview',
    'gemini-robotics-er-2-preview',
    'gemini-3.1-flash-tts-preview',
    // Image, speech, music and video output, billed per image, per second or at media-token rates that usage's
    // output bucket does not separate (the 3.8 Flash TTS ids match genai-prices' 3.8 Flash text entry by prefix only).
    'gemini-2.5-flash-image',
    'gemini-3.1-flash-lite-image',
    'gemini-3-pro-image',
    'nano-banana-pro-preview',
    'gemini-3.1-flash-image',
    'gemini-nano-banana-2.1',
    'gemini-3.8-flash-tts',
    'gemini-3.8-flash-lite-tts',
    'lyria-3-clip-preview',
    'lyria-3-pro-preview',
    'lyria-3.5',
    'gemini-omni-1.1-flash',
    'gemini-omni-flash-preview',
  ],
};

const require = createRequire(import.meta.url);

/** A file of an installed package, found from its entry point (the SDKs export no `./package.json`). */
function sdkFile(pkg: string, file: string): string {
  let dir = dirname(require.resolve(pkg));
  while (!existsSync(join(dir, 'package.json')) || readJson(join(dir, 'package.json')).name !== pkg) {
    assert.notEqual(dirname(dir), dir, `${pkg}: no package root above its entry point`);
    dir = dirname(dir);
  }
  return readFileSync(join(dir, file), 'utf8');
}

function readJson(path: string): { name?: unknown } {
  return JSON.parse(readFileSync(path, 'utf8')) as { name?: unknown };
}

/** The string literals of the union `name` declares (`type name = 'a' | 'b' | (string & {})`). */
function unionIds(source: string, name: RegExp): string[] {
  const found = source.match(new RegExp(`type ${name.source} = ([^;]*);`));
  assert.ok(found?.[1], `no union ${name.source} in the SDK's types: the SDK changed, find its model union`);
  return [...found[1].matchAll(/["']([^"']+)["']/g)].map((m) => m[1] as string);
}

function sdkModels(): Record<keyof typeof UNPRICED, { ids: Set<string>; deprecated: Set<string> }> {
  const messages = sdkFile('@anthropic-ai/sdk', 'resources/messages/messages.d.ts');
  const deprecatedTable = sdkFile('@anthropic-ai/sdk', 'resources/messages/messages.js').match(
    /DEPRECATED_MODELS = \{([^}]*)\}/,
  );
  assert.ok(deprecatedTable?.[1], "the Anthropic SDK's DEPRECATED_MODELS table moved");
  const shared = sdkFile('openai', 'resources/shared.d.ts');
  const genai = sdkFile('@google/genai', 'dist/genai.d.ts');
  // @google/genai names its model union by a bundler-given name; it is the one holding the current Gemini ids.
  const googleUnion = [...genai.matchAll(/type (\w+) = ("[^;]*\(string & \{\}\));/g)].find((m) =>
    m[2]?.includes('"gemini-2.5-pro"'),
  );
  assert.ok(googleUnion?.[1], "no model union in @google/genai's types");
  return {
    anthropic: {
      ids: new Set(unionIds(messages, /Model/)),
      deprecated: new Set([...deprecatedTable[1].matchAll(/'([^']+)':/g)].map((m) => m[1] as string)),
    },
    openai: {
      ids: new Set([...unionIds(shared, /ChatModel/), ...unionIds(shared, /ResponsesModel/)]),
      deprecated: new Set(),
    },
    google: { ids: new Set(unionIds(genai, new RegExp(googleUnion[1]))), deprecated: new Set() },
  };
}

test('catalogue: every current model the official SDKs list is priced, or allowed unpriced by name', () => {
  const sdks = sdkModels();
  for (const [family, { ids, deprecated }] of Object.entries(sdks) as [
    keyof typeof UNPRICED,
    { ids: Set<string>; deprecated: Set<string> },
  ][]) {
    assert.ok(ids.size >= 20, `${family}: only ${ids.size} model ids read from the SDK`);
    const allowed = new Set(UNPRICED[family]);
    const unpriced = [...ids].filter((id) => !deprecated.has(id) && !Object.hasOwn(pricing, id) && !allowed.has(id));
    assert.deepEqual(unpriced, [], `${family}: listed by its SDK, unpriced and not on the list`);
    // The list stays honest: an id on it is still listed by the SDK and still unpriced.
    for (const id of allowed) {
      assert.ok(ids.has(id), `${family}: ${id} is on the unpriced list but its SDK no longer lists it`);
      assert.ok(!Object.hasOwn(pricing, id), `${family}: ${id} is priced now; take it off the unpriced list`);
    }
  }
  // Anthropic's SDK warns on claude-sonnet-4-5 until its end of life; it stays priced while calls reach it.
  assert.ok(sdks.anthropic.deprecated.has('claude-sonnet-4-5') && Object.hasOwn(pricing, 'claude-sonnet-4-5'));
});
