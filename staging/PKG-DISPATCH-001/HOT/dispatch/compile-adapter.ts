import { compilePrompt, validatePromptSpec } from '#compiler/index.js';
import type { CompileDispatchPrompt } from './compiler-port.js';

/**
 * The production CompileDispatchPrompt: the dispatch spec goes through the prompt compiler's own
 * validation and compile path (stable prefix, cache tiers, canonical dynamic tail) unchanged.
 */
export const compileWithPromptCompiler: CompileDispatchPrompt = (spec) => {
  const compiled = compilePrompt(validatePromptSpec(spec));
  return {
    stable_prefix_hash: compiled.stable_prefix_hash,
    dynamic_tail_hash: compiled.dynamic_tail_hash,
    full_prompt_hash: compiled.full_prompt_hash,
    cache_key: compiled.cache_key,
    prompt: compiled,
  };
};
