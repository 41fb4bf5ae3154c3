// Hostile clients and a hostile upstream against `cplane serve`, with the limits taken from the root's `gateway`
// config as an operator sets them: too many connections, a client that never finishes its headers or its body,
// JSON nested past any real API's depth (in a request and in a reply), and the gateway's checkpoint schedule.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { readRootCheckpoints } from '../../staging/PKG-KERNEL-001/HOT/kernel/ledger/checkpoint-store.js';
import { configSet, issueKey, ledgerEntries, startServed, type Served } from './harness.js';

let served: Served;
let key: string;
const MAX_CONNECTIONS = 4;

before(async () => {
  served = await startServed([], (root) => {
    configSet(root, 'gateway.max_connections', String(MAX_CONNECTIONS));
    configSet(root, 'gateway.headers_timeout_ms', '1000');
    configSet(root, 'gateway.request_timeout_ms', '2000');
    configSet(root, 'gateway.body_limit_bytes', '65536');
    configSet(root, 'gateway.checkpoint', '{"every_entries": 1, "every_seconds": 3600}');
  });
  key = issueKey('AGENT-HOSTILE');
});
after(async () => {
  await served.cleanup();
});

const port = (): number => Number(new URL(served.url).port);

/** A raw socket; resolves when the server has accepted it (it answers nothing until it is sent something). */
function open(): Promise<{ socket: Socket; closed: Promise<string> }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port(), '127.0.0.1');
    let received = '';
    socket.on('data', (d: Buffer) => {
      received += d.toString('utf8');
    });
    const closed = new Promise<string>((r) => socket.once('close', () => r(received)));
    socket.once('error', () => {});
    socket.once('connect', () => resolve({ socket, closed }));
    socket.once('error', reject);
  });
}

const headers = {
  'content-type': 'application/json',
  'x-api-key': '',
  'anthropic-version': '2023-06-01',
  'x-cplane-session': 'SES-HOSTILE',
};
const post = (body: string): Promise<Response> =>
  fetch(`${served.url}/v1/messages`, { method: 'POST', headers: { ...headers, 'x-api-key': key }, body });

test('connections past gateway.max_connections are closed as they arrive; the ones held still work', async () => {
  const held = await Promise.all(Array.from({ length: MAX_CONNECTIONS }, () => open()));
  const extra = await open();
  // The server closes the extra socket without a byte; the held ones stay open.
  assert.equal(await extra.closed, '');
  const first = held[0];
  assert.ok(first);
  first.socket.write('GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n');
  assert.match(await first.closed, /^HTTP\/1\.1 200 /);
  for (const h of held) h.socket.destroy();
  await Promise.all(held.map((h) => h.closed));
});

test('a client that never finishes its headers (slowloris) or its body is disconnected by the configured deadlines', async () => {
  const slowHeaders = await open();
  slowHeaders.socket.write('POST /v1/messages HTTP/1.1\r\nhost: x\r\nx-drip: ');
  const drip = setInterval(() => slowHeaders.socket.write('a'), 200);
  const slowBody = await open();
  slowBody.socket.write(
    'POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"model":',
  );
  const bodyDrip = setInterval(() => slowBody.socket.write(' '), 200);
  try {
    const [h, b] = await Promise.all([slowHeaders.closed, slowBody.closed]);
    // Node answers a request that ran out of time with 408 when it can; either way the socket is gone.
    assert.ok(h === '' || /^HTTP\/1\.1 408 /.test(h), h);
    assert.ok(b === '' || /^HTTP\/1\.1 408 /.test(b), b);
  } finally {
    clearInterval(drip);
    clearInterval(bodyDrip);
  }
  assert.equal((await fetch(`${served.url}/healthz`)).status, 200);
});

test('a request body nested past the depth bound is refused 400 and recorded; nothing goes upstream', async () => {
  const before = served.upstream.requests.length;
  const depth = 20_000;
  const body = `{"model":"claude-sonnet-4-5","max_tokens":8,"messages":[{"role":"user","content":${'['.repeat(depth)}${']'.repeat(depth)}}]}`;
  const res = await post(body);
  const text = await res.text();
  assert.equal(res.status, 400, text);
  assert.match(text, /nested deeper than 128 levels/);
  assert.equal(res.headers.get('x-should-retry'), 'false');
  assert.equal(served.upstream.requests.length, before);
  const refused = ledgerEntries(served.root).filter(
    (e) => e.event_type === 'PROMPT_REJECTED' && String(e.metadata.error_message).includes('deeper'),
  );
  assert.ok(refused.length >= 1, 'the refusal is in the ledger');
  // Nesting inside a string is text, not depth: a prompt full of brackets is fine.
  const fine = await post(
    JSON.stringify({
      model: 'claude-sonnet-4-5',
      max_tokens: 8,
      messages: [{ role: 'user', content: '['.repeat(5000) }],
    }),
  );
  assert.equal(fine.status, 200, await fine.text());
});

const deepJson = (levels: number): string => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
const ask = (content: string): Promise<Response> =>
  post(JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 8, messages: [{ role: 'user', content }] }));
const exchangeOf = (res: Response) =>
  ledgerEntries(served.root).find(
    (e) => e.event_type === 'EXCHANGE' && e.metadata.gateway_request_id === res.headers.get('request-id'),
  );

test('an upstream reply nesting 10,000 deep: usage is bounded and the call succeeds; tool input that cannot be recorded is a recorded 502, never a 500', async () => {
  served.upstream.faults.push({
    raw: `{"type":"message","model":"claude-sonnet-4-5","content":[{"type":"text","text":"deep"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":2,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"x":${deepJson(10_000)}}}`,
  });
  const usage = await ask('deep usage');
  assert.equal(usage.status, 200, await usage.text());
  const ok = exchangeOf(usage);
  assert.equal(ok?.decision, 'SUCCESS');
  assert.equal(ok?.metadata.input_tokens, 3);

  served.upstream.faults.push({
    raw: `{"type":"message","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"t1","name":"f","input":${deepJson(10_000)}}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":2}}`,
  });
  const tool = await ask('deep tool input');
  const text = await tool.text();
  assert.equal(tool.status, 502, text);
  assert.doesNotMatch(text, /deep tool input|"a":\{"a"/);
  const failed = exchangeOf(tool);
  assert.ok(failed, 'the failed call has its EXCHANGE');
  assert.match(JSON.stringify(failed.metadata), /MALFORMED_RESPONSE/);
  assert.equal((await fetch(`${served.url}/healthz`)).status, 200);
});

test("hostile fields are refused 400 at the edge with their value named, never a 500; a key holder's are all recorded", async () => {
  const before = served.upstream.requests.length;
  const bad: Array<[string, string]> = [
    ['model', JSON.stringify({ model: 'claude sonnet', max_tokens: 8, messages: [] })],
    ['model', JSON.stringify({ model: 'claude\u0000x', max_tokens: 8, messages: [] })],
    ['model', '{"model":"\\ud800","max_tokens":8,"messages":[]}'],
    ['model', JSON.stringify({ model: 7, max_tokens: 8, messages: [] })],
    ['max_tokens', JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 2 ** 53 - 1, messages: [] })],
    ['max_tokens', JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 1.5, messages: [] })],
    ['max_tokens', JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 0, messages: [] })],
  ];
  // Past the refusal sampler's rate (20/s): a key holder's refusals are recorded one by one all the same.
  const rounds = 4;
  for (let round = 0; round < rounds; round++) {
    for (const [field, body] of bad) {
      const res = await post(body);
      const text = await res.text();
      assert.equal(res.status, 400, `${body}: ${text}`);
      assert.match(text, new RegExp(`VALIDATION_FAILED: ${field}`));
    }
  }
  const chat = await fetch(`${served.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: 'gpt-4.1-mini', max_completion_tokens: 1e12, messages: [] }),
  });
  assert.equal(chat.status, 400, await chat.text());
  const count = await fetch(`${served.url}/v1/messages/count_tokens`, {
    method: 'POST',
    headers: { ...headers, 'x-api-key': key },
    body: JSON.stringify({ model: 'claude sonnet', messages: [] }),
  });
  assert.equal(count.status, 400, await count.text());
  for (const top of ['null', '[1]', '"text"', '7', 'true']) {
    const res = await fetch(`${served.url}/v1/messages/count_tokens`, {
      method: 'POST',
      headers: { ...headers, 'x-api-key': key },
      body: top,
    });
    const text = await res.text();
    assert.equal(res.status, 400, `${top}: ${text}`);
    assert.match(text, /VALIDATION_FAILED: the request body must be a JSON object/);
  }
  assert.equal(served.upstream.requests.length, before, 'nothing refused went upstream');
  const recorded = ledgerEntries(served.root).filter(
    (e) =>
      e.event_type === 'PROMPT_REJECTED' &&
      e.metadata.error_code === 'VALIDATION_FAILED' &&
      /^(model|max_tokens|max_completion_tokens): /.test(String(e.metadata.error_message)),
  );
  assert.equal(recorded.length, bad.length * rounds + 2);
});

test('a key pasted into a conversation is stored as a marker and counted; the upstream gets the request as sent', async () => {
  const pasted = `sk-ant-api03-${'Q7r8_S9t0-'.repeat(9)}end`;
  const res = await ask(`my key is ${pasted}, keep it safe`);
  assert.equal(res.status, 200, await res.text());
  const sent = served.upstream.requests[served.upstream.requests.length - 1];
  assert.ok(JSON.stringify(sent?.body).includes(pasted), 'the upstream request is not altered');
  const exchange = exchangeOf(res);
  assert.ok(exchange);
  assert.ok(!JSON.stringify(exchange).includes(pasted));
  assert.match(String(exchange.metadata.prompt), /my key is \[REDACTED:anthropic_api_key\], keep it safe/);
  assert.deepEqual(exchange.metadata.secrets_scrubbed, { anthropic_api_key: 1 });
});

test('gateway.checkpoint: the head is signed after recorded exchanges, on the configured schedule', async () => {
  const res = await post(
    JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 8, messages: [{ role: 'user', content: 'sign' }] }),
  );
  assert.equal(res.status, 200, await res.text());
  const exchanges = ledgerEntries(served.root);
  const found = readRootCheckpoints(served.root);
  const seqs = found.map((f) => ('checkpoint' in f ? f.checkpoint.seq : -1));
  // every_entries 1: the checkpoint written after the last call covers at least its EXCHANGE.
  const last = exchanges.filter((e) => e.event_type === 'EXCHANGE').length;
  assert.ok(last >= 1);
  assert.ok(Math.max(...seqs) >= exchanges.length - 1, `checkpoints ${seqs.join(',')} of ${exchanges.length} entries`);
});
