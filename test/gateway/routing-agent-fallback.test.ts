// The opt-in agent runner (scripts/lib/agent-check.ts) and the Claude Code fallback check
// (scripts/claude-code/fallback.ts) driven end to end with a stand-in for Claude Code: a small agent on the official
// Anthropic SDK (no retries, so a 529 that reached it would fail it) that makes Claude Code's kinds of call through
// the gateway — streamed on the main model, whole on the small fast one — and prints Claude Code's JSON result.
// While the primary answers 529 the runner passes: every request is one EXCHANGE listing the primary's 529 and the
// secondary's answer. With no overload window no request falls back, and the same check fails.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { fallbackCheck } from '../../scripts/claude-code/fallback.js';
import { CLAUDE_CODE } from '../../scripts/claude-code/agent.js';
import { runAgentCheck } from '../../scripts/lib/agent-check.js';
import { REPO } from '../../scripts/lib/repo.js';

const sdk = pathToFileURL(createRequire(join(REPO, 'package.json')).resolve('@anthropic-ai/sdk')).href;

const STAND_IN = `
const { default: Anthropic } = await import(${JSON.stringify(sdk)});
const client = new Anthropic({ apiKey: process.env.ANTHROPIC_API_KEY, baseURL: process.env.ANTHROPIC_BASE_URL, maxRetries: 0 });
const ask = { max_tokens: 64, messages: [{ role: 'user', content: 'Say hello to cplane' }] };
const title = await client.messages.create({ ...ask, model: process.env.ANTHROPIC_SMALL_FAST_MODEL });
const stream = client.messages.stream({ ...ask, model: 'claude-sonnet-4-5' });
const answer = await stream.finalMessage();
const again = await client.messages.create({ ...ask, model: 'claude-sonnet-4-5', stream: true });
for await (const _ of again);
const text = answer.content.map((b) => b.text ?? '').join('');
process.stdout.write(JSON.stringify({ type: 'result', is_error: false, result: text + ' / ' + title.model }));
`;

function standIn(dir: string): typeof CLAUDE_CODE {
  const path = join(dir, 'stand-in.mjs');
  writeFileSync(path, STAND_IN);
  return { ...CLAUDE_CODE, product: 'a Claude Code stand-in', entry: { path }, viaNode: true };
}

test('a primary answering 529: the stand-in keeps working through the fallback; one EXCHANGE per request, both attempts', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-agent-fallback-'));
  try {
    assert.equal(await runAgentCheck(fallbackCheck(600_000, standIn(dir))), 0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('no overload window: nothing falls back, and the fallback check fails', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-agent-fallback-'));
  try {
    assert.equal(await runAgentCheck(fallbackCheck(0, standIn(dir))), 1);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
