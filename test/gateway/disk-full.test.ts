// `cplane serve` on a root whose disk fills while it runs. A call refused for it is told so in its API's shape
// (503, retry-after: not the caller's fault, nothing sent upstream); a call already upstream when the disk fills
// is answered and recorded; once space is back the gateway answers again without a restart, and the root's
// chain verifies.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, statfsSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cli, issueKey, ledgerEntries, startServed, type Served } from './harness.js';

let served: Served;
let key: string;
let mounted = false;
let why = '';

before(async () => {
  served = await startServed([], (root) => {
    // The root moved onto a small tmpfs of its own, so the test can fill its disk.
    const copy = mkdtempSync(join(tmpdir(), 'cp-diskfull-copy-'));
    cpSync(root, copy, { recursive: true });
    const mount = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64m', 'tmpfs', root], { encoding: 'utf8' });
    mounted = mount.status === 0;
    why = `${mount.stderr || mount.error?.message || ''}`.trim();
    if (mounted) cpSync(copy, root, { recursive: true });
    rmSync(copy, { recursive: true, force: true });
  });
  key = issueKey('AGENT-DISKFULL');
});
after(async () => {
  await served.stop();
  if (mounted) spawnSync('umount', [served.root]);
  await served.cleanup();
});

const filler = (): string => join(served.root, 'filler');
function fill(): void {
  const stat = statfsSync(served.root);
  writeFileSync(filler(), Buffer.alloc(stat.bavail * stat.bsize));
}

interface Reply {
  status: number;
  headers: Headers;
  text: string;
}

async function anthropic(session: string, extra: Record<string, unknown> = {}): Promise<Reply> {
  const res = await fetch(`${served.url}/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': key,
      'anthropic-version': '2023-06-01',
      'x-cplane-session': session,
    },
    body: JSON.stringify({
      model: 'claude-sonnet-4-5',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Hi' }],
      ...extra,
    }),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

async function openai(session: string): Promise<Reply> {
  const res = await fetch(`${served.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'x-cplane-session': session },
    body: JSON.stringify({ model: 'gpt-4.1-mini', messages: [{ role: 'user', content: 'Hi' }] }),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** Refused for the disk: 503 with retry-after, the fault and its fix named, and the SDKs left free to retry. */
function assertUnavailable(reply: Reply, errorType: string): void {
  assert.equal(reply.status, 503, reply.text);
  assert.equal(reply.headers.get('retry-after'), '30');
  assert.equal(reply.headers.get('x-should-retry'), null);
  const body = JSON.parse(reply.text) as { error: { type: string; message: string } };
  assert.equal(body.error.type, errorType);
  assert.match(body.error.message, /^BUDGET_UNAVAILABLE: ERR_DISK_FULL: .*no space left on the device.*; free space/);
}

test('a full disk: calls are refused 503 and sent nowhere; a call already upstream is answered and recorded; space back, calls answer again', async (t) => {
  if (!mounted) {
    t.skip(`cannot mount a tmpfs here (${why})`);
    return;
  }
  assert.equal((await anthropic('SES-DF-BEFORE')).status, 200);
  const upstreamBefore = served.upstream.requests.length;
  fill();
  assertUnavailable(await anthropic('SES-DF-FULL'), 'overloaded_error');
  assertUnavailable(await anthropic('SES-DF-FULL-STREAM', { stream: true }), 'overloaded_error');
  assertUnavailable(await openai('SES-DF-FULL-OPENAI'), 'server_error');
  assert.equal(served.upstream.requests.length, upstreamBefore, 'nothing was sent upstream');
  unlinkSync(filler());

  // The disk fills while a call is upstream: its answer is delivered, and its EXCHANGE written.
  let release = (): void => {};
  served.upstream.gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const pending = anthropic('SES-DF-DURING');
  while (served.upstream.requests.length === upstreamBefore) await new Promise((r) => setTimeout(r, 10));
  fill();
  served.upstream.gate = null;
  release();
  const during = await pending;
  assert.equal(during.status, 200, during.text);
  unlinkSync(filler());

  assert.equal((await anthropic('SES-DF-AFTER')).status, 200);
  assert.equal(await served.stop(), 0, served.stderr());
  assert.doesNotMatch(served.stderr(), /internal error|ERR_INTERNAL/);
  const entries = ledgerEntries(served.root);
  const exchanges = (session: string) =>
    entries.filter((e) => e.event_type === 'EXCHANGE' && e.metadata.session_id === session).length;
  assert.deepEqual(['SES-DF-BEFORE', 'SES-DF-DURING', 'SES-DF-AFTER', 'SES-DF-FULL'].map(exchanges), [1, 1, 1, 0]);
  const verify = cli(['ledger', 'verify', '--root', served.root, '--json']);
  assert.equal(verify.status, 0, verify.stdout + verify.stderr);
  const gates = cli(['gate-check', '--root', served.root, '--json']);
  assert.equal(gates.status, 0, gates.stdout + gates.stderr);
});
