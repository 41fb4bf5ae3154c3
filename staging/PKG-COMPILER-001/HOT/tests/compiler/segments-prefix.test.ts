import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SegmentRegistry } from '../../compiler/segments.js';
import { hashPrefix } from '../../compiler/prefix.js';
import type { PromptMessage } from '../../compiler/messages.js';

test('registry orders segments by kind (tools, system, examples, dynamic) whatever the registration order', () => {
  const forward = new SegmentRegistry()
    .register({ id: 't', kind: 'tools', content: 'TOOLS' })
    .register({ id: 's', kind: 'system', content: 'SYSTEM' })
    .register({ id: 'e', kind: 'examples', content: 'EXAMPLES' })
    .register({ id: 'd', kind: 'dynamic', content: 'DYNAMIC' });
  const shuffled = new SegmentRegistry()
    .register({ id: 'd', kind: 'dynamic', content: 'DYNAMIC' })
    .register({ id: 'e', kind: 'examples', content: 'EXAMPLES' })
    .register({ id: 't', kind: 'tools', content: 'TOOLS' })
    .register({ id: 's', kind: 'system', content: 'SYSTEM' });
  assert.equal(forward.compile().text, 'TOOLS\n\nSYSTEM\n\nEXAMPLES\n\nDYNAMIC');
  assert.equal(shuffled.compile().text, forward.compile().text);
  assert.deepEqual(
    shuffled.ordered().map((s) => s.id),
    ['t', 's', 'e', 'd'],
  );
});

test('registry keeps registration order within a kind', () => {
  const compiled = new SegmentRegistry()
    .register({ id: 's2', kind: 'system', content: 'second' })
    .register({ id: 's1', kind: 'system', content: 'first' })
    .compile();
  assert.equal(compiled.text, 'second\n\nfirst');
});

test('stablePrefix excludes the appended dynamic section and prefixes the text', () => {
  const registry = new SegmentRegistry()
    .register({ id: 's', kind: 'system', content: 'role' })
    .register({ id: 'd', kind: 'dynamic', content: 'task 17' });
  const compiled = registry.compile();
  assert.equal(compiled.stablePrefix, 'role');
  assert.ok(!compiled.stablePrefix.includes('task 17'));
  assert.ok(compiled.text.startsWith(compiled.stablePrefix));
  registry.register({ id: 'd2', kind: 'dynamic', content: 'task 18' });
  assert.equal(registry.compile().stablePrefix, 'role');
});

test('registry refuses duplicate ids and unknown kinds', () => {
  const registry = new SegmentRegistry().register({ id: 'a', kind: 'system', content: 'x' });
  assert.throws(() => registry.register({ id: 'a', kind: 'tools', content: 'y' }), {
    code: 'ERR_PROMPT_SEGMENT_INVALID',
    message: /"a" is registered twice/,
  });
  assert.throws(() => registry.register({ id: 'b', kind: 'nope' as never, content: 'y' }), {
    code: 'ERR_PROMPT_SEGMENT_INVALID',
    message: /unknown kind "nope"/,
  });
});

const msg = (role: PromptMessage['role'], content: string, cached = false): PromptMessage =>
  cached ? { role, content, section: 'L1', cache_control: { type: 'ephemeral' } } : { role, content, section: 'L1' };
const stable = [msg('developer', 'role template'), msg('user', 'files', true)];
const hashes = (messages: PromptMessage[], tail: number, instructions = 'system') =>
  hashPrefix({ instructions, instructionsBreakpoint: false, messages, dynamicTailMessages: tail });

test('prefix compiler: stable hash unchanged when only the tail changes; full hash and cache key change', () => {
  const a = hashes([...stable, msg('user', 'task one')], 1);
  const b = hashes([...stable, msg('user', 'task two')], 1);
  assert.equal(a.stable_prefix_hash, b.stable_prefix_hash);
  assert.notEqual(a.dynamic_tail_hash, b.dynamic_tail_hash);
  assert.notEqual(a.full_prompt_hash, b.full_prompt_hash);
  assert.notEqual(a.cache_key, b.cache_key);
  assert.match(a.stable_prefix_hash, /^[0-9a-f]{64}$/);
  assert.ok(a.cache_key.startsWith(`cp1-${a.stable_prefix_hash.slice(0, 16)}-`));
});

test('prefix compiler: stable hash changes when the stable prefix, instructions or a breakpoint changes', () => {
  const base = hashes([...stable, msg('user', 'task')], 1);
  assert.notEqual(
    hashes([msg('developer', 'other template'), stable[1] as PromptMessage, msg('user', 'task')], 1).stable_prefix_hash,
    base.stable_prefix_hash,
  );
  assert.notEqual(
    hashes([...stable, msg('user', 'task')], 1, 'other system').stable_prefix_hash,
    base.stable_prefix_hash,
  );
  assert.notEqual(
    hashes([stable[0] as PromptMessage, msg('user', 'files'), msg('user', 'task')], 1).stable_prefix_hash,
    base.stable_prefix_hash,
  );
  // Moving the split moves a message from the tail into the prefix.
  assert.notEqual(hashes([...stable, msg('user', 'task')], 0).stable_prefix_hash, base.stable_prefix_hash);
});

test('prefix compiler: message boundaries are hashed, not just concatenated text', () => {
  const one = hashes([msg('user', 'ab'), msg('user', 'c')], 0);
  const two = hashes([msg('user', 'a'), msg('user', 'bc')], 0);
  assert.notEqual(one.stable_prefix_hash, two.stable_prefix_hash);
});
