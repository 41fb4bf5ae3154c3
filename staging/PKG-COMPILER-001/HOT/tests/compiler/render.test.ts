import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compilePrompt } from '../../compiler/compile.js';
import { renderAnthropic } from '../../compiler/render/anthropic.js';
import { renderOpenAIChat } from '../../compiler/render/openai-chat.js';
import { renderOpenAIResponses } from '../../compiler/render/openai-responses.js';
import { renderBody } from '../../compiler/render/index.js';
import { baseSpec } from './fixtures/specs.js';

const text = (content: unknown): string =>
  typeof content === 'string' ? content : (content as { text: string }[]).map((b) => b.text).join('');

test('Anthropic: system blocks carry the system and developer zones; breakpoints become cache_control blocks', () => {
  const compiled = compilePrompt(baseSpec({ model: 'claude-x' }));
  const body = renderAnthropic(compiled);
  assert.equal(body.model, 'claude-x');
  assert.equal(body.max_tokens, 1000);
  assert.equal(body.system[0]?.text, compiled.instructions);
  assert.deepEqual(
    body.system.slice(1).map((b) => b.text),
    compiled.messages.filter((m) => m.role === 'developer').map((m) => m.content),
  );
  assert.equal(body.messages[0]?.role, 'user');
  const flattened = [...body.system.map((b) => b.text), ...body.messages.map((m) => text(m.content))];
  assert.deepEqual(flattened, [compiled.instructions, ...compiled.messages.map((m) => m.content)]);
  const marked = body.messages.filter((m) => Array.isArray(m.content) && m.content.some((b) => b.cache_control));
  assert.equal(marked.length + body.system.filter((b) => b.cache_control).length, compiled.breakpoints);
  assert.ok(marked.every((m) => Array.isArray(m.content) && m.content[0]?.cache_control?.type === 'ephemeral'));
});

test('Anthropic: a breakpoint on the developer zone or system message lands on a system block', () => {
  const bare = compilePrompt({ role: 'reviewer', zones: {}, user_prompt: 'q' });
  const body = renderAnthropic(bare, { model: 'm', maxTokens: 50 });
  assert.equal(body.max_tokens, 50);
  assert.deepEqual(
    body.system.map((b) => b.cache_control !== undefined),
    [false, false, true],
  );
  assert.deepEqual(body.messages, [{ role: 'user', content: 'q' }]);
  const noModel = renderAnthropic(bare);
  assert.ok(!('model' in noModel));
  assert.equal(noModel.max_tokens, 1024);
});

test('OpenAI Responses: instructions is only the system zone; developer zone is input[] role=developer', () => {
  const compiled = compilePrompt(baseSpec());
  const body = renderOpenAIResponses(compiled, { model: 'gpt-x' });
  assert.equal(body.instructions, compiled.instructions);
  assert.ok(
    !body.instructions.includes('<developer_instructions>') && !body.instructions.includes('<environment_context>'),
  );
  assert.deepEqual(body.input.map((m) => m.role).slice(0, 6), [
    'developer',
    'developer',
    'developer',
    'developer',
    'user',
    'user',
  ]);
  assert.equal(body.input.length, compiled.messages.length);
  assert.equal(body.max_output_tokens, 1000);
  assert.equal(body.prompt_cache_key, `cp-${compiled.stable_prefix_hash.slice(0, 32)}`);
  assert.ok(!JSON.stringify(body).includes('cache_control'));
});

test('OpenAI Chat: system first, developer zone as system messages, order preserved', () => {
  const compiled = compilePrompt(baseSpec());
  const body = renderOpenAIChat(compiled);
  assert.equal(body.messages[0]?.content, compiled.instructions);
  assert.deepEqual(
    body.messages.slice(1).map((m) => m.content),
    compiled.messages.map((m) => m.content),
  );
  assert.deepEqual(
    body.messages.slice(0, 5).map((m) => m.role),
    ['system', 'system', 'system', 'system', 'system'],
  );
  assert.equal(body.messages.at(-1)?.role, 'user');
  assert.equal(body.max_tokens, 1000);
  assert.equal(renderBody(compiled, 'neutral'), null);
  assert.throws(() => renderBody(compiled, 'xml' as never), { code: 'ERR_PROMPT_FORMAT_UNKNOWN' });
});

test('Anthropic: a prompt whose first message would be an assistant turn is refused before sending', () => {
  const compiled = compilePrompt({
    role: 'executor',
    zones: {},
    tiers: { L0: { history: [{ role: 'assistant', content: 'hello' }] } },
    user_prompt: 'q',
  });
  assert.throws(() => renderAnthropic(compiled), {
    code: 'ERR_PROMPT_RENDER',
    message: /must start with a user message, not assistant/,
  });
  assert.deepEqual(
    renderOpenAIChat(compiled).messages.map((m) => m.role),
    ['system', 'system', 'system', 'assistant', 'user'],
  );
});
