// The gateway's providers come from what is installed: each family from the packages that serve its surfaces.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { familyCandidates } from '../../gateway/open.js';

test('each family is tried from the packages serving its surfaces: the one named after it first, a package serving nothing never', () => {
  const candidates = familyCandidates([
    { id: 'mock', serves: [] },
    { id: 'groq', serves: ['openai.chat', 'openai.models'] },
    { id: 'openai', serves: ['openai.chat', 'openai.responses', 'openai.models'] },
    { id: 'azure', serves: ['openai.chat'] },
    { id: 'anthropic', serves: ['anthropic.messages', 'anthropic.count_tokens', 'anthropic.models'] },
  ]);
  assert.deepEqual(Object.fromEntries(candidates), {
    anthropic: ['anthropic'],
    openai: ['openai', 'azure', 'groq'],
  });
});

test('a family no installed package serves has no candidate; a compatible package alone serves it', () => {
  assert.deepEqual(Object.fromEntries(familyCandidates([{ id: 'mock', serves: [] }])), {});
  assert.deepEqual(Object.fromEntries(familyCandidates([{ id: 'compat', serves: ['openai.chat'] }])), {
    openai: ['compat'],
  });
});

test('an opt-in package (a cloud route) serves a family only when gateway.upstreams names it, and then alone', () => {
  const installed = [
    { id: 'anthropic', serves: ['anthropic.messages' as const] },
    { id: 'bedrock', serves: ['anthropic.messages' as const], optIn: true },
    { id: 'openai', serves: ['openai.chat' as const] },
    { id: 'compatible', serves: ['openai.chat' as const], optIn: true },
  ];
  assert.deepEqual(Object.fromEntries(familyCandidates(installed)), { anthropic: ['anthropic'], openai: ['openai'] });
  assert.deepEqual(Object.fromEntries(familyCandidates(installed, { anthropic: 'bedrock', openai: 'compatible' })), {
    anthropic: ['bedrock'],
    openai: ['compatible'],
  });
  assert.deepEqual(Object.fromEntries(familyCandidates(installed, { openai: 'missing' })), {
    anthropic: ['anthropic'],
  });
});
