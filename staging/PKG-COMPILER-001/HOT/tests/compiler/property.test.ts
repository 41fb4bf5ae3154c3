// Property tests over randomly generated specs. Seeded: set CP_PROPERTY_SEED to replay a run; a
// failure message always carries the seed and the case index.
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { Ajv } from 'ajv';
import assert from 'node:assert/strict';
import { compilePrompt, type CompiledPrompt } from '../../compiler/compile.js';
import { validatePromptSpec, type PromptSpec } from '../../compiler/spec.js';
import { renderAnthropic } from '../../compiler/render/anthropic.js';
import { hashPrefix } from '../../compiler/prefix.js';
import { makeRng, randomSpec, randomTask, text, type Rng } from './fixtures/specs.js';

const SEED = Number(process.env.CP_PROPERTY_SEED ?? 20261122);
const CASES = 120;

function forAll(name: string, check: (spec: PromptSpec, rng: Rng) => void): void {
  test(`property: ${name} (seed ${SEED}, ${CASES} cases)`, () => {
    const rng = makeRng(SEED ^ name.length);
    for (let i = 0; i < CASES; i += 1) {
      const spec = randomSpec(rng);
      try {
        check(validatePromptSpec(spec), rng);
      } catch (error) {
        (error as Error).message =
          `[seed ${SEED}, case ${i}: replay with CP_PROPERTY_SEED=${SEED}] ${(error as Error).message}`;
        throw error;
      }
    }
  });
}

const compiledSchema = JSON.parse(
  readFileSync(new URL('../../schemas/compiled-prompt.schema.json', import.meta.url), 'utf8'),
) as object;
const validateCompiled = new Ajv({ allErrors: true, strict: true }).compile(compiledSchema);

const stablePart = (c: CompiledPrompt) => ({
  instructions: c.instructions,
  messages: c.messages.slice(0, c.stable_message_count),
});

forAll('compiling twice gives identical output, which matches compiled-prompt.schema.json', (spec) => {
  const compiled = compilePrompt(spec);
  assert.deepEqual(compiled, compilePrompt(structuredClone(spec)));
  assert.ok(validateCompiled(JSON.parse(JSON.stringify(compiled))), JSON.stringify(validateCompiled.errors));
});

forAll('changing only the task keeps the stable prefix and its hash; the full hash changes', (spec, rng) => {
  const a = compilePrompt(spec);
  const b = compilePrompt({ ...spec, task: randomTask(rng) });
  assert.equal(b.stable_prefix_hash, a.stable_prefix_hash);
  assert.deepEqual(stablePart(b), stablePart(a));
  if (b.dynamic_tail_hash !== a.dynamic_tail_hash) assert.notEqual(b.full_prompt_hash, a.full_prompt_hash);
  else assert.deepEqual(b.messages, a.messages);
});

forAll('the task prompt ends the last message and no task value appears in the stable prefix', (spec) => {
  const marker = `\u2063TASK-${Math.random().toString(36).slice(2)}\u2063`;
  const c = compilePrompt({
    ...spec,
    task: { ...spec.task!, task_prompt: `${marker}p`, delta_context: `${marker}d`, guide_cache_key: `${marker}k` },
  });
  assert.ok(c.messages.at(-1)?.content.endsWith(`Task prompt:\n${marker}p`));
  assert.ok(!JSON.stringify(stablePart(c)).includes(marker));
});

forAll('never more than 4 breakpoints (nor more than max_breakpoints), all inside the stable prefix', (spec) => {
  const c = compilePrompt(spec);
  const marks = c.messages.filter((m) => m.cache_control).length + (c.instructions_cache_control ? 1 : 0);
  assert.equal(marks, c.breakpoints);
  assert.ok(c.breakpoints >= 1 && c.breakpoints <= Math.min(4, spec.cache?.max_breakpoints ?? 4));
  assert.ok(c.messages.slice(c.stable_message_count).every((m) => !m.cache_control));
  // The last stable message always carries a breakpoint, so the whole stable prefix is cacheable.
  const lastStable = c.messages[c.stable_message_count - 1];
  assert.ok(lastStable === undefined ? c.instructions_cache_control : lastStable.cache_control !== undefined);
  const body = renderAnthropic(c, { model: 'm' });
  const sent = JSON.stringify(body).split('"cache_control"').length - 1;
  assert.equal(sent, c.breakpoints);
});

forAll('changing any cached-tier content changes the stable hash', (spec, rng) => {
  const a = compilePrompt(spec);
  const tier = (['L1', 'L2', 'L3'] as const)[Math.floor(rng() * 3)]!;
  const changed = { ...spec, tiers: { ...spec.tiers, [tier]: { files: [{ path: 'new.txt', content: text(rng) }] } } };
  assert.notEqual(compilePrompt(changed).stable_prefix_hash, a.stable_prefix_hash);
});

forAll('compaction under a random budget keeps the stable hash and fits, or refuses', (spec, rng) => {
  const full = compilePrompt(spec);
  const budget = Math.max(1, Math.floor(full.token_estimate.total * (0.2 + rng())));
  let c: CompiledPrompt;
  try {
    c = compilePrompt({ ...spec, budget: { max_input_tokens: budget } });
  } catch (error) {
    assert.equal((error as { code?: string }).code, 'ERR_PROMPT_OVER_BUDGET');
    return;
  }
  assert.equal(c.stable_prefix_hash, full.stable_prefix_hash);
  assert.ok(c.token_estimate.total <= budget);
  if (budget >= full.token_estimate.total) assert.equal(c.compaction_stage, 'none');
});

forAll('hashes streamed from assembly pieces equal hashes of the finished texts', (spec) => {
  const c = compilePrompt(spec);
  // Plain copies carry no assembly pieces, so this hashes the joined message texts directly.
  const plain = hashPrefix({
    instructions: c.instructions,
    instructionsBreakpoint: c.instructions_cache_control,
    messages: c.messages.map((m) => ({ ...m })),
    dynamicTailMessages: c.messages.length - c.stable_message_count,
  });
  assert.deepEqual(plain, {
    stable_prefix_hash: c.stable_prefix_hash,
    dynamic_tail_hash: c.dynamic_tail_hash,
    full_prompt_hash: c.full_prompt_hash,
    cache_key: c.cache_key,
  });
});
