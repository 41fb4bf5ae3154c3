import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '../../compiler/index.js';
import { baseSpec } from './fixtures/specs.js';

test('compaction summaries filter the initial meta blocks out of history', () => {
  const compiled = api.compilePrompt(baseSpec());
  const transcript = [
    ...compiled.messages.map((m) => ({ role: m.role, content: m.content })),
    { role: 'assistant', content: 'final answer' },
  ];
  const kept = api.filterMetaBlocks(transcript);
  for (const tag of api.META_BLOCK_TAGS) assert.ok(!kept.some((m) => m.content.includes(`<${tag}>`)), tag);
  assert.equal(transcript.length - kept.length, 4);
  assert.ok(kept.some((m) => m.content === 'final answer'));
  assert.ok(
    kept.some((m) => m.content.startsWith('<ledger_policy>')),
    'the ledger policy is not a conversation meta block',
  );
  assert.equal(api.isMetaBlock('  <environment_context>\nos\n</environment_context>'), true);
  assert.equal(api.isMetaBlock('talking about <turn_context> inline'), false);
});

test('the package entry point exposes the compile, render and hashing API', () => {
  const spec = api.validatePromptSpec(baseSpec());
  const compiled = api.compilePrompt(spec);
  assert.equal(api.renderBody(compiled, 'anthropic')?.constructor, Object);
  assert.equal(api.formatFiles([{ path: 'p', content: 'c' }]), 'p\n```\nc\n```');
  assert.deepEqual(api.TAIL_SECTIONS, [
    'Task ID',
    'Max output tokens',
    'Delta context',
    'Guide cache key',
    'Task prompt',
  ]);
  assert.equal(api.estimateTokens('12345'), 2);
  assert.equal(api.MAX_BREAKPOINTS, 4);
  assert.deepEqual(api.keptTierIndexes(6, 4), [0, 1, 2, 5]);
  assert.ok(api.ROLES.every((role) => api.isRole(role)) && !api.isRole('admin'));
});
