import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compilePrompt } from '../../compiler/compile.js';
import { validatePromptSpec } from '../../compiler/spec.js';
import { baseSystemPrompt, ledgerPolicy, roleTemplate } from '../../compiler/templates.js';
import { baseSpec, baseTask } from './fixtures/specs.js';

const tailOf = (spec = baseSpec()) => compilePrompt(spec).messages.at(-1)?.content ?? '';

test('the example spec shipped with the package is valid and compiles', async () => {
  const { readFile } = await import('node:fs/promises');
  const url = new URL('../../compiler/examples/spec.example.json', import.meta.url);
  const spec = validatePromptSpec(JSON.parse(await readFile(url, 'utf8')));
  const compiled = compilePrompt(spec);
  assert.equal(compiled.breakpoints, 3);
  assert.deepEqual(compiled.breakpoint_tiers, ['L0', 'L1', 'L2']);
});

test('dynamic tail sections come in the canonical order and the task prompt is always last', () => {
  const tail = tailOf();
  const order = [
    'Task ID: T-1',
    'Max output tokens: 1000',
    'Delta context:\nprevious task done',
    'Guide cache key: guide:v1\nfollow the guide',
    'Task prompt:\ndo the thing',
  ];
  assert.equal(tail, order.join('\n\n'));
  assert.ok(tail.endsWith('Task prompt:\ndo the thing'));
  const withUser = compilePrompt(baseSpec({ user_prompt: 'a user question' }));
  assert.equal(withUser.messages.at(-1)?.section, 'current_prompt');
  assert.ok(withUser.messages.at(-1)?.content.endsWith('do the thing'));
  assert.equal(withUser.messages.at(-2)?.content, 'a user question');
});

test('missing optional task fields render as (none), never disappear', () => {
  const tail = tailOf(baseSpec({ task: { task_id: 'T-9', max_output_tokens: 5, task_prompt: 'p' } }));
  assert.equal(
    tail,
    'Task ID: T-9\n\nMax output tokens: 5\n\nDelta context:\n(none)\n\nGuide cache key: (none)\n\nTask prompt:\np',
  );
});

test('without a task the current prompt is the user prompt, last', () => {
  const { task: _task, ...rest } = baseSpec();
  const compiled = compilePrompt({ ...rest, user_prompt: 'just a question' });
  assert.equal(compiled.messages.at(-1)?.content, 'just a question');
  assert.equal(compiled.max_output_tokens, null);
});

test('stable hash is unchanged across task prompt, delta, guide and task id values; full hash and cache key change', () => {
  const a = compilePrompt(baseSpec());
  for (const task of [
    baseTask({ task_prompt: 'another prompt' }),
    baseTask({ delta_context: 'a different delta' }),
    baseTask({ guide_cache_key: 'guide:v2', guide_instruction: 'other' }),
    baseTask({ task_id: 'T-2', max_output_tokens: 7 }),
  ]) {
    const b = compilePrompt(baseSpec({ task }));
    assert.equal(b.stable_prefix_hash, a.stable_prefix_hash);
    assert.notEqual(b.full_prompt_hash, a.full_prompt_hash);
    assert.notEqual(b.dynamic_tail_hash, a.dynamic_tail_hash);
    assert.notEqual(b.cache_key, a.cache_key);
  }
});

test('uncached context (file tree, URLs, working files, active history) changes only the tail', () => {
  const a = compilePrompt(baseSpec());
  for (const change of [
    { file_tree: ['z.ts'] },
    { url_context: [] },
    { active_files: [{ path: 'q.ts', content: 'q' }] },
    { active_history: [{ role: 'user' as const, content: 'new' }] },
    { user_prompt: 'hello' },
  ]) {
    const b = compilePrompt(baseSpec(change));
    assert.equal(b.stable_prefix_hash, a.stable_prefix_hash, JSON.stringify(change));
    assert.notEqual(b.full_prompt_hash, a.full_prompt_hash, JSON.stringify(change));
  }
});

test('role switch, developer zone, user-meta zone and cached tier changes all change the stable hash', () => {
  const a = compilePrompt(baseSpec()).stable_prefix_hash;
  const variants = [
    baseSpec({ role: 'reviewer' }),
    baseSpec({ system_extra: 'project rules' }),
    baseSpec({ zones: { ...baseSpec().zones, developer_instructions: 'other dev rules' } }),
    baseSpec({ zones: { ...baseSpec().zones, turn_context: 'cwd: /y' } }),
    baseSpec({ zones: { ...baseSpec().zones, environment_context: 'os: mac' } }),
    baseSpec({ tiers: { ...baseSpec().tiers, L2: { files: [{ path: 'c.ts', content: 'changed' }] } } }),
    baseSpec({ tools: [{ name: 'grep', description: 'search' }] }),
    baseSpec({ examples: ['Q: 1 A: 2'] }),
  ];
  const hashes = variants.map((spec) => compilePrompt(spec).stable_prefix_hash);
  for (const hash of hashes) assert.notEqual(hash, a);
  assert.equal(new Set(hashes).size, hashes.length);
});

test('every role has its own shipped template; the system zone is the same for all roles', () => {
  const roles = ['orchestrator', 'reviewer', 'executor', 'searcher'] as const;
  const compiled = roles.map((role) => compilePrompt(baseSpec({ role })));
  assert.equal(new Set(compiled.map((c) => c.instructions)).size, 1);
  for (const [i, c] of compiled.entries()) {
    assert.ok(c.messages[0]?.content.includes(roleTemplate(roles[i] as (typeof roles)[number])));
  }
  assert.equal(new Set(roles.map((r) => roleTemplate(r))).size, 4);
  assert.ok(compiled[0]?.instructions.startsWith(baseSystemPrompt()));
  assert.ok(!compiled[0]?.instructions.includes('Ledger policy'));
});

test('first-turn injection order: developer instructions, turn context, (ledger policy), user instructions, environment, then input', () => {
  const c = compilePrompt(
    baseSpec({ tiers: {}, file_tree: [], url_context: [], active_files: [], active_history: [] }),
  );
  assert.deepEqual(
    c.messages.map((m) => [m.role, m.content.split('\n')[0]]),
    [
      ['developer', '# Role: executor'],
      ['developer', '<developer_instructions>'],
      ['developer', '<turn_context>'],
      ['developer', '<ledger_policy>'],
      ['user', '<user_instructions>'],
      ['user', '<environment_context>'],
      ['user', 'Task ID: T-1'],
    ],
  );
  assert.equal(c.messages[3]?.content, `<ledger_policy>\n${ledgerPolicy()}\n</ledger_policy>`);
  assert.equal(c.stable_message_count, 6);
});

test('cache tiers use the exact header texts, in order, with the acknowledgements', () => {
  const c = compilePrompt(
    baseSpec({
      tiers: {
        L0: { files: [{ path: 'a.md', content: 'A' }] },
        L1: { files: [{ path: 'b', content: 'B' }] },
        L2: { files: [{ path: 'c', content: 'C' }] },
        L3: { files: [{ path: 'd', content: 'D' }] },
      },
    }),
  );
  assert.ok(
    c.instructions.endsWith(
      '\n\n# Reference Files (Stable)\n\nThese files are included for reference:\n\na.md\n```\nA\n```',
    ),
  );
  const contents = c.messages.map((m) => m.content);
  const expectSeq = [
    '# Reference Files\n\nThese files are included for reference:\n\nb\n```\nB\n```',
    'Ok.',
    '# Reference Files (L2)\n\nThese files are included for reference:\n\nc\n```\nC\n```',
    'Ok.',
    '# Reference Files (L3)\n\nThese files are included for reference:\n\nd\n```\nD\n```',
    'Ok.',
    '# Repository Files\n\nComplete list of files in the repository:\n\n# File Tree (3 files)\n\na.md\nb.ts\nc.ts',
    'Ok.',
    '# URL Context\n\nThe following content was fetched from URLs mentioned in the conversation:\n\n## X\nSource: https://example.org/x\n\nx content',
    "Ok, I've reviewed the URL content.",
    '# Working Files\n\nHere are the files:\n\nd.ts\n```\nexport const d = 4;\n```',
    'Ok.',
    'recent q',
    'recent a',
  ];
  const start = contents.indexOf(expectSeq[0] as string);
  assert.ok(start > 0);
  assert.deepEqual(contents.slice(start, start + expectSeq.length), expectSeq);
  assert.equal(c.messages.length, start + expectSeq.length + 1);
});

test('files are joined by a blank line; URLs by ---; the file tree is sorted and de-duplicated', () => {
  const c = compilePrompt(
    baseSpec({
      tiers: {
        L1: {
          files: [
            { path: 'x', content: '1' },
            { path: 'y', content: '2' },
          ],
        },
      },
      url_context: [
        { url: 'u1', title: 'T1', content: 'c1' },
        { url: 'u2', title: '', content: 'c2' },
      ],
      file_tree: ['b', 'a', 'B', 'a'],
    }),
  );
  const all = c.messages.map((m) => m.content).join('\u0000');
  assert.ok(all.includes('x\n```\n1\n```\n\ny\n```\n2\n```'));
  assert.ok(all.includes('## T1\nSource: u1\n\nc1\n---\n## u2\nSource: u2\n\nc2'));
  assert.ok(all.includes('# File Tree (3 files)\n\nB\na\nb'));
});

test('empty tiers and empty sections are skipped entirely', () => {
  const c = compilePrompt(
    baseSpec({
      tiers: { L1: { files: [], history: [] }, L2: {} },
      file_tree: [],
      url_context: [],
      active_files: [],
      active_history: [],
    }),
  );
  assert.ok(!c.instructions.includes('# Reference Files'));
  assert.ok(!c.messages.some((m) => m.content === 'Ok.' || /^# (Reference|Repository|URL|Working)/.test(m.content)));
  assert.deepEqual(c.breakpoint_tiers, ['L0']);
});

test('cache_control: on the system message for L0 without messages after it, else on the last L0 message', () => {
  const bare = compilePrompt({ role: 'searcher', zones: {}, user_prompt: 'q' });
  // The developer zone always holds the role template, so L0's last message is the ledger policy.
  assert.equal(bare.instructions_cache_control, false);
  assert.equal(bare.messages[1]?.cache_control?.type, 'ephemeral');
  const withHistory = compilePrompt(
    baseSpec({
      tiers: {
        L0: {
          history: [
            { role: 'user', content: 'h1' },
            { role: 'assistant', content: 'h2' },
          ],
        },
      },
    }),
  );
  const marked = withHistory.messages.filter((m) => m.cache_control);
  assert.equal(marked[0]?.content, 'h2');
  assert.equal(marked.length, 1);
});

test('cache_control sits on the last message of each cached tier (after its history) and never in the tail', () => {
  const c = compilePrompt(baseSpec());
  const marked = c.messages.flatMap((m, i) => (m.cache_control ? [[i, m.section, m.content]] : []));
  assert.deepEqual(
    marked.map(([, s, t]) => [s, t]),
    [
      ['user_meta', '<environment_context>\nos: linux\n</environment_context>'],
      ['L1', 'Ok.'],
      ['L2', 'Ok.'],
      ['L3', 'old a'],
    ],
  );
  assert.ok(marked.every(([i]) => (i as number) < c.stable_message_count));
  assert.equal(c.breakpoints, 4);
});

test('more cached tiers than max_breakpoints: the first max-1 keep theirs, the rest merge into the last tier', () => {
  const two = compilePrompt(baseSpec({ cache: { max_breakpoints: 2 } }));
  assert.equal(two.breakpoints, 2);
  assert.deepEqual(two.breakpoint_tiers, ['L0', 'L3']);
  assert.deepEqual(two.merged_tiers, [
    { tier: 'L1', into: 'L3' },
    { tier: 'L2', into: 'L3' },
  ]);
  const one = compilePrompt(baseSpec({ cache: { max_breakpoints: 1 } }));
  assert.deepEqual(one.breakpoint_tiers, ['L3']);
  assert.equal(one.messages.filter((m) => m.cache_control).length, 1);
  assert.equal(one.messages[one.stable_message_count - 1]?.cache_control?.type, 'ephemeral');
});

test('compaction stages shrink only the dynamic tail and keep the stable hash', () => {
  const bigDelta = 'delta line\n'.repeat(2000);
  const bigPrompt = 'prompt words '.repeat(2000);
  const full = compilePrompt(baseSpec({ task: baseTask({ delta_context: bigDelta, task_prompt: bigPrompt }) }));
  const stableTokens = full.token_estimate.stable_prefix;
  const total = full.token_estimate.total;
  // The delta is 5500 tokens: A trims it down to its last ~500 tokens, B drops it, C cuts the task prompt.
  const budgets: [number, string][] = [
    [total + 10, 'none'],
    [total - 1000, 'A'],
    [total - 5300, 'B'],
    [stableTokens + 400, 'C'],
  ];
  for (const [max, stage] of budgets) {
    const c = compilePrompt(
      baseSpec({
        task: baseTask({ delta_context: bigDelta, task_prompt: bigPrompt }),
        budget: { max_input_tokens: max },
      }),
    );
    assert.equal(c.compaction_stage, stage, `budget ${max}`);
    assert.equal(c.stable_prefix_hash, full.stable_prefix_hash);
    assert.ok(c.token_estimate.total <= max, `total ${c.token_estimate.total} > ${max}`);
    assert.deepEqual(c.messages.slice(0, c.stable_message_count), full.messages.slice(0, full.stable_message_count));
    assert.ok(c.messages.at(-1)?.content.includes('Task prompt:\nprompt words'));
    assert.equal(c.compaction_trace.length, stage === 'none' ? 0 : 'ABC'.indexOf(stage) + 1);
  }
});

test('a prompt that cannot fit after stage C is refused with the numbers', () => {
  const task = baseTask({ delta_context: 'd'.repeat(9000), task_prompt: 'p'.repeat(9000) });
  assert.throws(
    () => compilePrompt(baseSpec({ task, budget: { max_input_tokens: 10 } })),
    (e: Error & { code?: string; details?: Record<string, unknown> }) => {
      assert.equal(e.code, 'ERR_PROMPT_OVER_BUDGET');
      assert.equal(e.details?.max_input_tokens, 10);
      assert.match(e.message, /stage C/);
      return true;
    },
  );
});

test('compiling is deterministic and does not mutate the spec', () => {
  const spec = baseSpec();
  const before = JSON.stringify(spec);
  assert.deepEqual(compilePrompt(spec), compilePrompt(structuredClone(spec)));
  assert.equal(JSON.stringify(spec), before);
});

test('a lone surrogate is made well-formed before hashing: the hashes always describe the text compiled', () => {
  const variants = (s: string) => [
    baseSpec({ system_extra: s }),
    baseSpec({ tiers: { L1: { files: [{ path: `${s}.ts`, content: s }] } } }),
    baseSpec({ zones: { developer_instructions: s } }),
    baseSpec({ active_history: [{ role: 'user', content: s }] }),
    baseSpec({ task: { ...baseTask(), task_prompt: s } }),
  ];
  const lone = variants('x\uD800y\uDC00');
  const replaced = variants('x\uFFFDy\uFFFD');
  const fine = variants('x\u{1F600}y');
  lone.forEach((spec, i) => {
    const before = JSON.stringify(spec);
    const a = compilePrompt(validatePromptSpec(spec));
    assert.equal(JSON.stringify(spec), before, `variant ${i}: the caller's spec is not mutated`);
    assert.ok(a.instructions.isWellFormed(), `variant ${i}`);
    for (const m of a.messages) assert.ok(m.content.isWellFormed(), `variant ${i}: ${m.section}`);
    // Same compiled text, same hashes; a real pair still differs from the replacement characters.
    assert.deepEqual(a, compilePrompt(validatePromptSpec(replaced[i])), `variant ${i}`);
    assert.notEqual(a.full_prompt_hash, compilePrompt(validatePromptSpec(fine[i])).full_prompt_hash, `variant ${i}`);
  });
});
