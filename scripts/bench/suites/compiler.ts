// compile_vs_sha256: compiling a spec with >= 100k tokens (~400 KB) of context, against one SHA-256
// pass over the same prompt bytes measured in the same run. Target: within 3x.
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DEV_ROOT } from '../../lib/repo.js';
import { defineSuite, medianOf, timeEach } from '../row.js';
import type * as Compiler from '../../../staging/PKG-COMPILER-001/HOT/compiler/index.js';

type Spec = Compiler.PromptSpec;

function file(path: string, bytes: number, seed: number): { path: string; content: string } {
  const lines: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i += 1) {
    const line = `export function f${seed}_${i}(value: number): number { return value * ${(i * 7919 + seed) % 1000} + ${i}; }`;
    lines.push(line);
    size += line.length + 1;
  }
  return { path, content: lines.join('\n') };
}

/**
 * ~480 KB of context spread over every tier and the uncached sections (>= 100k tokens at 4 chars
 * each), round-tripped through JSON as `prompt compile` reads it. The file tree is sorted, as
 * `git ls-files` prints it.
 */
export function largeSpec(): Spec {
  return JSON.parse(JSON.stringify(buildSpec())) as Spec;
}

function buildSpec(): Spec {
  const files = (tier: string, count: number, bytes: number) =>
    Array.from({ length: count }, (_, i) => file(`src/${tier}/m${i}.ts`, bytes, i + tier.length));
  return {
    role: 'executor',
    zones: {
      developer_instructions: 'Run the tests.',
      turn_context: 'cwd: /srv',
      user_instructions: 'Be brief.',
      environment_context: 'os: linux',
    },
    tiers: {
      L0: { files: files('l0', 10, 16_000) },
      L1: {
        files: files('l1', 8, 12_000),
        history: [
          { role: 'user', content: 'q'.repeat(2000) },
          { role: 'assistant', content: 'a'.repeat(2000) },
        ],
      },
      L2: { files: files('l2', 8, 8_000) },
      L3: { files: files('l3', 6, 6_000) },
    },
    file_tree: Array.from({ length: 2000 }, (_, i) => `src/pkg${i % 40}/file${i}.ts`).sort(),
    url_context: [{ url: 'https://example.org/doc', title: 'Doc', content: 'd'.repeat(20_000) }],
    active_files: files('active', 4, 10_000),
    active_history: [
      { role: 'user', content: 'u'.repeat(4000) },
      { role: 'assistant', content: 'v'.repeat(4000) },
    ],
    task: {
      task_id: 'T-1',
      max_output_tokens: 4096,
      delta_context: 'x'.repeat(8000),
      guide_cache_key: 'g',
      task_prompt: 'Do it.',
    },
  };
}

export default defineSuite({
  name: 'compiler',
  async run({ quick, log }) {
    const compiler = (await import(
      pathToFileURL(join(DEV_ROOT, 'HOT', 'compiler', 'index.js')).href
    )) as typeof Compiler;
    const spec = largeSpec();
    const compiled = compiler.compilePrompt(compiler.validatePromptSpec(spec));
    const bytes = [compiled.instructions, ...compiled.messages.map((m) => m.content)].join('');
    log(
      `compiler: ${bytes.length} chars (~${compiled.token_estimate.total} tokens), ${compiled.messages.length} messages`,
    );
    const iterations = quick ? 10 : 40;
    const rounds = quick ? 3 : 5;
    const compileMs: number[] = [];
    const hashMs: number[] = [];
    for (let r = 0; r < rounds; r += 1) {
      hashMs.push(
        medianOf(
          timeEach(iterations, () => {
            createHash('sha256').update(bytes).digest('hex');
          }),
        ),
      );
      compileMs.push(
        medianOf(
          timeEach(iterations, () => {
            compiler.compilePrompt(compiler.validatePromptSpec(spec));
          }),
        ),
      );
    }
    const value = medianOf(compileMs);
    const baseline = medianOf(hashMs);
    const ratio = value / baseline;
    return [{ name: 'compile_vs_sha256', value, unit: 'ms', baseline, ratio, target: '<= 3x', ok: ratio <= 3 }];
  },
});
