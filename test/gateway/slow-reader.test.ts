// A streaming client that stops reading (its socket stays open, its receive window full): the gateway cannot
// wait on it for ever. The call is ended as the client's going away (CANCELLED, one EXCHANGE) once a write has
// waited the upstream idle timeout, and a SIGTERM drain still ends within its deadline.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { configSet, issueKey, budgetEntries, ledgerEntries, startServed, type Served } from './harness.js';

let served: Served;
let key: string;
const UPSTREAM_TIMEOUT_MS = 1500;

before(async () => {
  served = await startServed([], (root) => {
    configSet(root, 'router.timeout_ms', String(UPSTREAM_TIMEOUT_MS));
  });
  key = issueKey('AGENT-SLOW');
});
after(async () => {
  await served.cleanup();
});

/** An Anthropic stream of about `mib` MiB: more than loopback socket buffers hold, so a client not reading stalls it. */
function bigStream(mib: number): string {
  const frame = (event: string, data: unknown): string => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
  const text = 'x'.repeat(1000);
  const delta = frame('content_block_delta', {
    type: 'content_block_delta',
    index: 0,
    delta: { type: 'text_delta', text },
  });
  const frames = [
    frame('message_start', {
      type: 'message_start',
      message: { model: 'claude-sonnet-4-5', content: [], usage: { input_tokens: 5, output_tokens: 1 } },
    }),
    frame('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
  ];
  const count = Math.ceil((mib * 1024 * 1024) / delta.length);
  for (let i = 0; i < count; i += 1) frames.push(delta);
  frames.push(
    frame('content_block_stop', { type: 'content_block_stop', index: 0 }),
    frame('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 9 } }),
    frame('message_stop', { type: 'message_stop' }),
  );
  return frames.join('');
}

/** A raw client that sends a streaming request and then never reads a byte of the reply. */
function stalledClient(served: Served, session: string): Promise<{ socket: Socket }> {
  const body = JSON.stringify({
    model: 'claude-sonnet-4-5',
    max_tokens: 64,
    stream: true,
    messages: [{ role: 'user', content: 'a long answer please' }],
  });
  const { port } = new URL(served.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    socket.setNoDelay(true);
    socket.once('error', () => {});
    socket.once('connect', () => {
      socket.write(
        [
          'POST /v1/messages HTTP/1.1',
          'host: 127.0.0.1',
          'content-type: application/json',
          `content-length: ${Buffer.byteLength(body)}`,
          `x-api-key: ${key}`,
          'anthropic-version: 2023-06-01',
          `x-cplane-session: ${session}`,
          '',
          body,
        ].join('\r\n'),
      );
      // Read the status line, then stop reading: the kernel buffers fill and the gateway's writes stall.
      socket.once('data', () => socket.pause());
      resolve({ socket });
    });
    socket.once('error', reject);
  });
}

const exchangesOf = (session: string, on: Served = served) =>
  ledgerEntries(on.root).filter((e) => e.event_type === 'EXCHANGE' && e.metadata.session_id === session);

async function waitFor<T>(what: string, ms: number, probe: () => T | undefined): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const found = probe();
    if (found !== undefined) return found;
    if (Date.now() > until) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

test('a stream client that stops reading is cut off after the upstream idle timeout: one CANCELLED EXCHANGE, reservation charged', async () => {
  served.upstream.faults.push({ raw: bigStream(8), contentType: 'text/event-stream' });
  const client = await stalledClient(served, 'SES-SLOW-STALL');
  // Nothing here may block this process (it is the upstream too): the stall bound is the upstream idle timeout,
  // and ten of them is far past it.
  // The gateway logs a request when its response closes (the paused client cannot see its socket close).
  const until = Date.now() + UPSTREAM_TIMEOUT_MS * 10;
  while (!served.stdout().includes('SES-SLOW-STALL') && Date.now() < until)
    await new Promise((r) => setTimeout(r, 100));
  const logged = served.stdout().includes('SES-SLOW-STALL');
  client.socket.destroy();
  assert.ok(logged, 'the gateway still holds a client that has read nothing for ten idle timeouts');
  const [exchange] = await waitFor('the stalled call to be recorded', 10_000, () => {
    const found = exchangesOf('SES-SLOW-STALL');
    return found.length > 0 ? found : undefined;
  });
  assert.ok(exchange);
  const { error_code, error_message } = exchange.metadata;
  assert.equal(exchange.decision, 'CANCELLED', JSON.stringify({ error_code, error_message }));
  assert.equal(exchange.metadata.error_code, 'CANCELLED');
  assert.match(String(exchange.metadata.error_message), /read nothing for 1500 ms/);
  assert.equal(exchange.metadata.usage_complete, false);
  assert.equal(exchangesOf('SES-SLOW-STALL').length, 1, 'exactly one EXCHANGE');
  const budget = budgetEntries(served.root)
    .filter((e) => e.metadata.request_id === exchange.metadata.gateway_request_id)
    .map((e) => e.event_type);
  assert.deepEqual(budget, ['BUDGET_ALLOCATED', 'BUDGET_SETTLED'], 'charged, never released');
  assert.equal((await fetch(`${served.url}/healthz`)).status, 200);
});

test('SIGTERM while a stream client is not reading: the drain cancels it within its deadline, records it, exits 0', async () => {
  // The default upstream timeout (60 s): only the drain can end this call in time.
  const draining = await startServed(['--drain-timeout', '300']);
  try {
    draining.upstream.faults.push({ raw: bigStream(8), contentType: 'text/event-stream' });
    const client = await stalledClient(draining, 'SES-SLOW-DRAIN');
    await waitFor('the upstream call', 10_000, () => (draining.upstream.requests.length > 0 ? true : undefined));
    // Give the gateway time to fill the client's buffers.
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(exchangesOf('SES-SLOW-DRAIN', draining).length, 0, 'still in flight when the drain starts');
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([
      draining.stop(),
      new Promise<'hung'>((r) => {
        timer = setTimeout(() => r('hung'), 15_000);
      }),
    ]);
    clearTimeout(timer);
    assert.equal(code, 0, `the gateway did not exit after SIGTERM (${code})\n${draining.stderr()}`);
    assert.match(draining.stderr(), /drained \(0 finished, 1 cancelled\)/);
    const exchanges = exchangesOf('SES-SLOW-DRAIN', draining);
    assert.equal(exchanges.length, 1, 'exactly one EXCHANGE');
    assert.equal(exchanges[0]?.decision, 'CANCELLED');
    client.socket.destroy();
  } finally {
    await draining.cleanup();
  }
});
