// What `cplane route` reserves on a real root against a local upstream speaking OpenAI's Chat Completions: the body
// the openai provider is sent, counted with the model's tokenizer (the gateway's counting path), so a session budget
// the byte bound would refuse admits the call; a prompt whose own token count exceeds the budget is still refused.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeChat } from 'gpt-tokenizer/encoding/o200k_base';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';
import { REPO } from '../../scripts/lib/repo.js';
import { budgetEntries, configSet, KEYS } from '../gateway/harness.js';
import { startUpstream, type Upstream } from '../gateway/upstream.js';
import { bootstrapSignedRoot, cplane } from '../lib/signed-root.js';

const { promptInputBound } =
  await fromDevRoot<typeof import('../../staging/PKG-BUDGETER-001/HOT/budgeter/bound.js')>('HOT/budgeter/bound.js');

const LIMIT = 4000;
const MAX_TOKENS = 256;
/** About 8 KB of an agent's instructions: some 1.7k tokens, 8k by its bytes. */
const FITS = Array.from(
  { length: 80 },
  (_, i) => `Step ${i}: open the file, read the failing test, change one line, and run the suite again.`,
).join('\n');
/** About 20 KB of the same: over the budget by its tokens too. */
const OVER = `${FITS}\n${FITS}\n${FITS.slice(0, 4000)}`;

let work: string;
let root: string;
let upstream: Upstream;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'cp-route-reserve-'));
  root = join(work, 'root');
  bootstrapSignedRoot(join(work, 'build'), root);
  upstream = await startUpstream(KEYS);
  const limits = { by_id: { 'SES-FITS': { max_tokens: LIMIT }, 'SES-OVER': { max_tokens: LIMIT } } };
  configSet(root, 'budget.limits.session', JSON.stringify(limits));
});
after(async () => {
  await upstream?.close();
  rmSync(work, { recursive: true, force: true });
});

/** The route command as a child process (not spawnSync: the upstream answers from this process's event loop). */
async function route(session: string, prompt: string) {
  const args = [
    ...[cplane, 'route', '--root', root, '--dev', '--provider', 'openai', '--model', 'gpt-4o'],
    ...['--session', session, '--max-tokens', String(MAX_TOKENS), '--prompt', prompt, '--json'],
  ];
  const child = spawn(process.execPath, args, {
    cwd: REPO,
    env: { ...process.env, OPENAI_BASE_URL: upstream.url, OPENAI_API_KEY: KEYS.openai },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString('utf8');
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString('utf8');
  });
  const status = await new Promise<number | null>((resolve) => child.once('close', resolve));
  return { status, stdout, stderr, response: JSON.parse(stdout) as { outcome: string; error_code: string | null } };
}

const tokens = (prompt: string) => encodeChat([{ role: 'user', content: prompt }], 'gpt-4o').length;

test('cplane route reserves the token count of the Chat body it sends: admitted where the byte bound is refused', async () => {
  assert.ok(promptInputBound(FITS) + MAX_TOKENS > LIMIT, 'the byte bound alone would refuse the call');
  const r = await route('SES-FITS', FITS);
  assert.equal(r.response.outcome, 'success', r.stdout + r.stderr);
  const sent = upstream.requests.at(-1);
  assert.equal(sent?.path, '/v1/chat/completions');
  assert.deepEqual(sent?.body?.messages, [{ role: 'user', content: FITS }]);
  const [allocated] = budgetEntries(root).filter(
    (e) => e.event_type === 'BUDGET_ALLOCATED' && e.metadata.session_id === 'SES-FITS',
  );
  const reserved = allocated?.metadata.reserved_tokens as number;
  assert.ok(reserved >= tokens(FITS) + MAX_TOKENS, `reserved ${reserved}, the tokenizer counts ${tokens(FITS)}`);
  assert.ok(reserved <= LIMIT, `reserved ${reserved} within the session's ${LIMIT}`);
});

test('cplane route still refuses a call whose token count exceeds the budget, sending nothing', async () => {
  assert.ok(tokens(OVER) + MAX_TOKENS > LIMIT, 'the prompt is over the budget by its tokens');
  const before = upstream.requests.length;
  const r = await route('SES-OVER', OVER);
  assert.equal(r.status, 1, r.stderr);
  assert.equal(r.response.outcome, 'rejected');
  assert.equal(r.response.error_code, 'BUDGET_EXHAUSTED');
  assert.equal(upstream.requests.length, before, 'nothing reached the upstream');
});
