// `cplane serve` as a process: health, edge refusals in each API's shape, the breaker, secrets, the log, and a
// SIGTERM drain that lets the call in flight finish and exits 0.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { issueKey, KEYS, ledgerEntries, startServed, type Served } from './harness.js';
import { CHECKPOINT_FRAMES } from '../../staging/PKG-KERNEL-001/HOT/kernel/ledger/wal-checkpointer.js';

let served: Served;
let key: string;
/** Every response body and header the tests saw: the secret test reads them all. */
const seen: string[] = [];

before(async () => {
  served = await startServed(['--body-limit', '4096']);
  key = issueKey('AGENT-SERVE');
});
after(async () => {
  await served.cleanup();
});

async function call(
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; headers: Headers; text: string }> {
  const res = await fetch(`${served.url}${path}`, {
    method: init.method ?? 'POST',
    headers: { 'content-type': 'application/json', ...init.headers },
    ...(init.body === undefined ? {} : { body: init.body }),
  });
  const text = await res.text();
  seen.push(text, JSON.stringify([...res.headers.entries()]));
  return { status: res.status, headers: res.headers, text };
}

const anthropicHeaders = (session: string): Record<string, string> => ({
  'x-api-key': key,
  'anthropic-version': '2023-06-01',
  'x-cplane-session': session,
});
const message = (extra: Record<string, unknown> = {}): string =>
  JSON.stringify({
    model: 'claude-sonnet-4-5',
    max_tokens: 64,
    messages: [{ role: 'user', content: 'Hello' }],
    ...extra,
  });

test('healthz and readyz', async () => {
  assert.equal((await call('/healthz', { method: 'GET' })).status, 200);
  const ready = await call('/readyz', { method: 'GET' });
  assert.equal(ready.status, 200, ready.text);
});

test('readyz, which anyone may ask, says what is wrong without naming the root or its files', async (t) => {
  const budget = join(served.root, 'HOT', 'registries', 'budget.sqlite');
  // Immutable: not writable even for root (a probe whose access check fails as a read-only disk would).
  const frozen = spawnSync('chattr', ['+i', budget], { encoding: 'utf8' });
  if (frozen.status !== 0) return t.skip(`chattr +i unavailable: ${frozen.stderr.trim()}`);
  try {
    const ready = await call('/readyz', { method: 'GET' });
    assert.equal(ready.status, 503, ready.text);
    const body = JSON.parse(ready.text) as { status: string; problem: string };
    assert.equal(body.status, 'not_ready');
    assert.match(body.problem, /cannot be written \(EPERM\)/);
    assert.ok(!ready.text.includes(served.root) && !ready.text.includes('HOT/'), ready.text);
  } finally {
    spawnSync('chattr', ['-i', budget]);
  }
  assert.equal((await call('/readyz', { method: 'GET' })).status, 200);
});

test("the gateway's ledger WAL is grown to its steady size at start, so appends overwrite it instead of growing it", () => {
  // The worker's checkpoint interval and a quarter, in 2 KiB pages (24-byte frame headers): see wal-reserve.ts.
  const size = statSync(join(served.root, 'HOT', 'ledger', 'ledger.sqlite-wal')).size;
  assert.ok(size >= 1.25 * CHECKPOINT_FRAMES * (2048 + 24), `WAL of ${size} bytes`);
});

test("unknown paths are 404 in the surface's shape; a body over the limit 413; malformed JSON 400 — nothing sent upstream", async () => {
  const upstreamBefore = served.upstream.requests.length;
  const a = await call('/v1/messages/nope', { headers: anthropicHeaders('SES-S-EDGE'), body: '{}' });
  assert.equal(a.status, 404);
  assert.equal((JSON.parse(a.text) as { type: string; error: { type: string } }).error.type, 'not_found_error');
  assert.ok(a.headers.get('request-id'));
  const o = await call('/v1/images/generations', { headers: { authorization: `Bearer ${key}` }, body: '{}' });
  assert.equal(o.status, 404);
  assert.equal((JSON.parse(o.text) as { error: { code: string } }).error.code, 'unknown_url');
  assert.ok(o.headers.get('x-request-id'));
  const big = await call('/v1/messages', {
    headers: anthropicHeaders('SES-S-EDGE'),
    body: message({ system: 'x'.repeat(5000) }),
  });
  assert.equal(big.status, 413);
  assert.equal((JSON.parse(big.text) as { error: { type: string } }).error.type, 'request_too_large');
  const bad = await call('/v1/chat/completions', {
    headers: { authorization: `Bearer ${key}`, 'x-cplane-session': 'SES-S-EDGE' },
    body: '{"model": "gpt-4.1-mini", "messages": [',
  });
  assert.equal(bad.status, 400);
  assert.equal((JSON.parse(bad.text) as { error: { type: string } }).error.type, 'invalid_request_error');
  const noMax = await call('/v1/messages', {
    headers: anthropicHeaders('SES-S-EDGE'),
    body: JSON.stringify({ model: 'claude-sonnet-4-5', messages: [] }),
  });
  assert.equal(noMax.status, 400);
  assert.equal(served.upstream.requests.length, upstreamBefore);
});

test('Expect: 100-continue: a body declared over the limit is refused 413 before the client is asked for it; one within it is asked for and answered', async () => {
  const { port } = new URL(served.url);
  const head = (length: number): string =>
    'POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nanthropic-version: 2023-06-01\r\n' +
    `x-api-key: ${key}\r\nx-cplane-session: SES-S-EXPECT\r\nexpect: 100-continue\r\ncontent-length: ${length}\r\nconnection: close\r\n\r\n`;
  /** Sends the headers, and the body only once the gateway says 100 Continue; everything it sent, at close. */
  const exchange = (length: number, payload: string): Promise<string> =>
    new Promise((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () => socket.write(head(length)));
      let out = '';
      socket.on('data', (d: Buffer) => {
        const before = out;
        out += d.toString('utf8');
        if (!before.startsWith('HTTP/1.1 100') && out.startsWith('HTTP/1.1 100 Continue\r\n\r\n'))
          socket.write(payload);
      });
      socket.once('error', reject);
      socket.once('close', () => {
        // Head and body in one: each request is one log line, and the secret test reads every reply.
        seen.push(out, '');
        resolve(out);
      });
    });
  const refused = await exchange(1_000_000, '');
  assert.match(refused, /^HTTP\/1\.1 413 /, refused);
  assert.match(refused, /request_too_large/);
  const answered = await exchange(Buffer.byteLength(message()), message());
  assert.match(answered, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /, answered);
});

test('breaker open: 503 with retry-after, no DISPATCH, nothing upstream', async () => {
  const overloaded = {
    status: 529,
    body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
  };
  served.upstream.faults.push(overloaded, overloaded, overloaded);
  const first = await call('/v1/messages', {
    headers: anthropicHeaders('SES-S-BREAKER'),
    body: message({ model: 'claude-haiku-4-5' }),
  });
  assert.equal(first.status, 529, first.text);
  assert.equal(first.headers.get('x-should-retry'), 'false', 'the gateway already retried');
  const upstreamBefore = served.upstream.requests.length;
  const open = await call('/v1/messages', {
    headers: anthropicHeaders('SES-S-BREAKER'),
    body: message({ model: 'claude-haiku-4-5' }),
  });
  assert.equal(open.status, 503);
  assert.ok(Number(open.headers.get('retry-after')) >= 1);
  assert.match(open.text, /CIRCUIT_OPEN/);
  assert.equal(served.upstream.requests.length, upstreamBefore);
});

test('secrets: the upstream keys and the client key appear in no response, log line or ledger entry', async () => {
  served.upstream.faults.push({
    status: 400,
    body: {
      type: 'error',
      error: { type: 'invalid_request_error', message: `key ${KEYS.anthropic} is not allowed here` },
    },
  });
  const echoed = await call('/v1/messages', { headers: anthropicHeaders('SES-S-SECRET'), body: message() });
  assert.equal(echoed.status, 400);
  assert.match(echoed.text, /REDACTED/);
  const pasted = await call('/v1/messages', {
    headers: anthropicHeaders('SES-S-SECRET'),
    body: message({ messages: [{ role: 'user', content: `my key is ${key}` }] }),
  });
  assert.equal(pasted.status, 200);
  const ledger = JSON.stringify(ledgerEntries(served.root));
  for (const secret of [KEYS.anthropic, KEYS.openai, key]) {
    assert.ok(!ledger.includes(secret), 'not in the ledger');
    assert.ok(!seen.some((t) => t.includes(secret)), 'not in any response');
    assert.ok(!served.stdout().includes(secret) && !served.stderr().includes(secret), 'not in the log');
  }
});

test('a second gateway on a port in use is refused with ERR_SERVE_LISTEN, exit 3', async () => {
  const port = new URL(served.url).port;
  // Not spawnSync: a blocked event loop would leave this process's idle keep-alive sockets to go stale.
  const r = await new Promise<{ status: number | null; stderr: string }>((resolve) => {
    const child = spawn(
      process.execPath,
      [join(served.root, 'HOT', 'scripts', 'cplane.js'), 'serve', '--root', served.root, '--port', port],
      { env: { ...process.env, CPLANE_AUTH_SECRET: 'x' }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString('utf8');
    });
    child.once('exit', (status) => resolve({ status, stderr }));
  });
  assert.equal(r.status, 3, r.stderr);
  assert.match(r.stderr, /ERR_SERVE_LISTEN/);
});

test('the log has one JSON line per request; SIGTERM drains the call in flight, then exits 0', async () => {
  served.upstream.faults.push({ frameDelayMs: 100 });
  const inFlight = call('/v1/messages', { headers: anthropicHeaders('SES-S-DRAIN'), body: message({ stream: true }) });
  await new Promise((r) => setTimeout(r, 300));
  const code = await served.stop();
  const streamed = await inFlight;
  assert.equal(code, 0, served.stderr());
  assert.match(streamed.text, /event: message_stop/, 'the call in flight finished');
  const [exchange] = ledgerEntries(served.root).filter(
    (e) => e.event_type === 'EXCHANGE' && e.metadata.session_id === 'SES-S-DRAIN',
  );
  assert.equal(exchange?.decision, 'SUCCESS');
  assert.match(served.stderr(), /drained \(1 finished, 0 cancelled\)/);
  const lines = served
    .stdout()
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.equal(lines.length, seen.length / 2, 'one log line per request');
  const drained = lines.find((l) => l.session === 'SES-S-DRAIN');
  assert.equal(drained?.status, 200);
  assert.equal(drained?.exchange_id, exchange?.id);
  assert.equal(drained?.model, 'claude-sonnet-4-5');
  assert.equal(typeof drained?.output_tokens, 'number');
});
