// `cplane prompt compile`: the compiler's command (HOT/cli/commands/prompt.ts) end to end through the CLI.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '#cli/main.js';
import { baseSpec, baseTask } from '../compiler/fixtures/specs.js';

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

test('cplane prompt compile refuses a spec whose bytes are not UTF-8, instead of compiling U+FFFD into the prompt', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-prompt-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // The same spec in Latin-1: "café" is one byte 0xE9 where UTF-8 has two.
  const text = JSON.stringify(baseSpec({ model: 'm-1', task: baseTask({ task_prompt: 'order a café' }) }));
  writeFileSync(join(dir, 'latin1.json'), Buffer.from(text, 'latin1'));
  const refused = await cli(['prompt', 'compile', '--spec', 'latin1.json', '--json'], dir);
  assert.equal(refused.code, 3, refused.out);
  const error = (JSON.parse(refused.out) as { error: { code: string; hint: string; details: { path: string } } }).error;
  assert.equal(error.code, 'ERR_INPUT_NOT_UTF8');
  assert.equal(error.details.path, join(dir, 'latin1.json'));
  assert.match(error.hint, /UTF-8/);
  writeFileSync(join(dir, 'utf8.json'), text);
  const compiled = await cli(['prompt', 'compile', '--spec', 'utf8.json', '--json'], dir);
  assert.equal(compiled.code, 0, compiled.err);
  assert.match(compiled.out, /order a café/);
});
