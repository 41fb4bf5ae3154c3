// A streamed reply's frames reach the client's socket before the call's conclusion is committed: the SQLite commit
// blocks the thread (an fsync at the default durability), so frames still held in the response when it starts
// would wait for the disk. The upstream sends its whole stream in one write (as a fast upstream does), the gateway
// runs over a real SQLite ledger, and the ledger's EXCHANGE append looks at the gateway's sockets as it begins.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ledger, sqliteLedgerStore, withAppendBatch } from '#kernel/ledger/index.js';
import { AnthropicProvider } from '#providers/anthropic/provider.js';
import { issueToken } from '#router/auth.js';
import { loadRouterConfig } from '#router/config.js';
import { Router } from '#router/router.js';
import { Gateway } from '../../gateway/server.js';

const UPSTREAM_KEY = 'sk-ant-stream-flush-upstream';
const SECRET = 'stream-flush-auth-secret-0123456789';

const frame = (event: string, data: unknown): string => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

// Anthropic's streaming events as its Messages API documents them.
const STREAM = [
  frame('message_start', {
    type: 'message_start',
    message: {
      id: 'msg_01flush',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 },
    },
  }),
  frame('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
  frame('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hello' } }),
  frame('content_block_stop', { type: 'content_block_stop', index: 0 }),
  frame('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: 'end_turn', stop_sequence: null },
    usage: { output_tokens: 7 },
  }),
  frame('message_stop', { type: 'message_stop' }),
].join('');

let dir: string;
let upstream: Server;
let ledger: Ledger;
let gateway: Gateway;
let url: string;
let key: string;
const sockets = new Set<Socket>();
/** Per EXCHANGE append, as it began: bytes the gateway's sockets still held, and bytes they had handed on. */
const atExchange: { held: number; sent: number }[] = [];

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'stream-flush-'));
  upstream = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'request-id': 'req_flush' });
      res.end(STREAM);
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  ledger = Ledger.open(join(dir, 'ledger.sqlite'), { create: true });
  const store = sqliteLedgerStore(ledger);
  const watched = withAppendBatch(store, (inputs, options) => {
    if (inputs.some((input) => input.event_type === 'EXCHANGE')) {
      let held = 0;
      let sent = 0;
      for (const socket of sockets) {
        held += socket.writableLength;
        sent += socket.bytesWritten - socket.writableLength;
      }
      atExchange.push({ held, sent });
    }
    return store.appendBatch(inputs, options);
  });
  const router = new Router({
    store: { ledger: watched, budget: null },
    config: { ...loadRouterConfig(), durability: 'full' },
    providers: [],
    authKeys: { default: SECRET },
  });
  const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  const provider = new AnthropicProvider({ config: { base_url: upstreamUrl, api_key: UPSTREAM_KEY }, env: {} });
  gateway = new Gateway({
    router,
    providers: new Map([['anthropic', provider]]),
    bodyLimitBytes: 1 << 20,
    drainTimeoutMs: 1000,
    maxConnections: 16,
    headersTimeoutMs: 10_000,
    requestTimeoutMs: 20_000,
    upstreamTimeoutMs: 10_000,
    log: () => {},
    ready: () => null,
  });
  gateway.server.on('connection', (socket: Socket) => sockets.add(socket));
  url = `http://127.0.0.1:${(await gateway.listen('127.0.0.1', 0)).port}`;
  const now = Math.floor(Date.now() / 1000);
  key = issueToken({ sub: 'AGENT-FLUSH', scopes: ['route:*'], iat: now, exp: now + 3600 }, { default: SECRET });
});

after(async () => {
  await gateway.drain();
  await new Promise((resolve) => upstream.close(resolve));
  ledger.close();
  rmSync(dir, { recursive: true, force: true });
});

test('a stream that arrives whole: its frames leave for the client before the EXCHANGE commit, the terminal event after it', async () => {
  const res = await fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'anthropic-version': '2023-06-01',
      'x-api-key': key,
      'x-cplane-session': 'SES-FLUSH-1',
    },
    body: JSON.stringify({
      model: 'claude-sonnet-4-5',
      max_tokens: 64,
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    }),
  });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  assert.match(text, /"text":"hello"/);
  assert.match(text, /"type":"message_stop"/);
  assert.equal(atExchange.length, 1, 'one EXCHANGE append');
  const [seen] = atExchange as [{ held: number; sent: number }];
  assert.equal(seen.held, 0, 'nothing written to the client is held back while the EXCHANGE commits');
  // Everything but the held terminal event (and the chunked body's end) had gone out: the frames before it.
  const beforeStop = STREAM.slice(0, STREAM.indexOf('event: message_stop'));
  assert.ok(seen.sent >= Buffer.byteLength(beforeStop), `${seen.sent} bytes out before the EXCHANGE commit`);
  const exchange = ledger.query({ event_type: 'EXCHANGE' })[0];
  assert.equal(exchange?.decision, 'SUCCESS');
});
