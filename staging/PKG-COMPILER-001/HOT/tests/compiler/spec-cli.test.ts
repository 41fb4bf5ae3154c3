import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '#cli/main.js';
import { validatePromptSpec, parsePromptSpec } from '../../compiler/spec.js';
import { baseSpec } from './fixtures/specs.js';

const pointerOf = (value: unknown): string => {
  try {
    validatePromptSpec(value);
  } catch (error) {
    assert.equal((error as { code?: string }).code, 'ERR_PROMPT_SPEC_INVALID');
    return (error as { details: { pointer: string } }).details.pointer;
  }
  throw new Error('spec was accepted');
};

test('invalid specs are refused with the JSON pointer of the problem', () => {
  assert.equal(pointerOf({ ...baseSpec(), role: 'wizard' }), '/role');
  assert.equal(
    pointerOf({ ...baseSpec(), tiers: { L1: { files: [{ path: 'a', content: 3 }] } } }),
    '/tiers/L1/files/0/content',
  );
  assert.equal(pointerOf({ ...baseSpec(), tiers: { L9: {} } }), '/tiers/L9');
  assert.equal(
    pointerOf({ ...baseSpec(), active_history: [{ role: 'system', content: 'x' }] }),
    '/active_history/0/role',
  );
  assert.equal(pointerOf({ ...baseSpec(), task: { task_id: 'T', task_prompt: 'p' } }), '/task/max_output_tokens');
  assert.equal(pointerOf({ ...baseSpec(), cache: { max_breakpoints: 5 } }), '/cache/max_breakpoints');
  const { zones: _zones, ...noZones } = baseSpec();
  assert.equal(pointerOf(noZones), '/zones');
  const { task: _task, ...noTask } = baseSpec();
  assert.equal(pointerOf(noTask), '/task');
  assert.equal(pointerOf([]), '/');
  assert.equal(pointerOf({ ...baseSpec(), 'we/ird~': 1 }), '/we~1ird~0');
});

test('all problems are listed in details, and the message names the first', () => {
  try {
    validatePromptSpec({ role: 'x', zones: { turn_context: 1 }, user_prompt: '' });
    assert.fail('accepted');
  } catch (error) {
    const e = error as { message: string; details: { errors: { pointer: string }[] } };
    assert.ok(e.details.errors.length >= 3);
    assert.match(e.message, /at \/\S+: .* \(and \d+ more\)/);
    assert.deepEqual([...new Set(e.details.errors.map((p) => p.pointer))].sort(), [
      '/role',
      '/user_prompt',
      '/zones/turn_context',
    ]);
  }
});

test('empty prompts and history messages are refused as empty', () => {
  assert.throws(() => validatePromptSpec({ ...baseSpec(), user_prompt: '' }), {
    code: 'ERR_PROMPT_SPEC_INVALID',
    message: 'prompt spec is invalid at /user_prompt: must not be empty',
  });
  assert.throws(() => validatePromptSpec({ ...baseSpec(), active_history: [{ role: 'user', content: '' }] }), {
    message: /\/active_history\/0\/content: must not be empty/,
  });
});

test('spec text that is not JSON is refused with the source named', () => {
  assert.throws(() => parsePromptSpec('{"role":', 'spec.json'), {
    code: 'ERR_PROMPT_SPEC_INVALID',
    message: /"spec\.json" is not JSON/,
  });
});

async function cli(argv: string[], cwd: string): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli({
    argv,
    cwd,
    stdout: (t) => {
      out += `${t}\n`;
    },
    stderr: (t) => {
      err += `${t}\n`;
    },
  });
  return { code, out, err };
}

test('cplane prompt compile prints hashes, messages and the provider body', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-prompt-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'spec.json'), JSON.stringify(baseSpec({ model: 'm-1' })));
  const human = await cli(['prompt', 'compile', '--spec', 'spec.json'], dir);
  assert.equal(human.code, 0, human.err);
  assert.match(human.out, /stable_prefix_hash: [0-9a-f]{64}/);
  assert.match(human.out, /breakpoints: 4 \(L0, L1, L2, L3\)/);

  const neutral = JSON.parse((await cli(['prompt', 'compile', '--spec', 'spec.json', '--json'], dir)).out) as Record<
    string,
    unknown
  >;
  for (const key of [
    'instructions',
    'messages',
    'stable_prefix_hash',
    'dynamic_tail_hash',
    'full_prompt_hash',
    'cache_key',
    'breakpoints',
  ])
    assert.ok(key in neutral, key);
  assert.equal(neutral.body, undefined);

  for (const format of ['anthropic', 'openai-responses', 'openai-chat']) {
    const run = await cli(
      ['prompt', 'compile', '--spec', join(dir, 'spec.json'), '--format', format, '--model', 'm-2', '--json'],
      '/',
    );
    assert.equal(run.code, 0, run.err);
    const value = JSON.parse(run.out) as { body: { model: string }; stable_prefix_hash: string; format: string };
    assert.equal(value.body.model, 'm-2');
    assert.equal(value.format, format);
    assert.equal(value.stable_prefix_hash, neutral.stable_prefix_hash);
  }
});

test('cplane prompt compile refuses a bad spec (exit 3, pointer in JSON) and a missing file', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-prompt-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'bad.json'), JSON.stringify({ ...baseSpec(), url_context: [{ url: 'u', title: 't' }] }));
  const bad = await cli(['prompt', 'compile', '--spec', 'bad.json', '--json'], dir);
  assert.equal(bad.code, 3);
  const error = (JSON.parse(bad.out) as { error: { code: string; details: { pointer: string } } }).error;
  assert.equal(error.code, 'ERR_PROMPT_SPEC_INVALID');
  assert.equal(error.details.pointer, '/url_context/0/content');

  const missing = await cli(['prompt', 'compile', '--spec', 'nope.json'], dir);
  assert.equal(missing.code, 3);
  assert.match(missing.err, /ERR_PROMPT_SPEC_UNREADABLE: cannot read prompt spec ".*nope\.json"/);

  const usage = await cli(['prompt', 'compile', '--spec', 'bad.json', '--format', 'xml'], dir);
  assert.equal(usage.code, 2);

  writeFileSync(join(dir, 'nomodel.json'), JSON.stringify(baseSpec()));
  const noModel = await cli(['prompt', 'compile', '--spec', 'nomodel.json', '--format', 'anthropic'], dir);
  assert.equal(noModel.code, 2);
  assert.match(noModel.err, /--format anthropic needs a model/);
  assert.equal((await cli(['prompt', 'compile', '--spec', 'nomodel.json'], dir)).code, 0);
});
