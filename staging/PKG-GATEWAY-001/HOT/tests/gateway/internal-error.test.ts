import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import type { WireProvider } from '#providers/wire/spec.js';
import type { Router } from '#router/router.js';
import { Gateway } from '../../gateway/server.js';

// A bug (anything thrown out of a call's handling) is answered by the catch-all: a router whose admission throws.
const router = {
  admit: () => Promise.reject(new Error('a bug in admission')),
  recordRefusal: () => Promise.resolve(),
} as unknown as Router;
const provider = { id: 'fake' } as unknown as WireProvider;

let gateway: Gateway;
let port: number;

before(async () => {
  gateway = new Gateway({
    router,
    providers: new Map([
      ['anthropic', provider],
      ['openai', provider],
    ]),
    bodyLimitBytes: 1 << 20,
    drainTimeoutMs: 1000,
    maxConnections: 16,
    headersTimeoutMs: 10_000,
    requestTimeoutMs: 20_000,
    upstreamTimeoutMs: 10_000,
    log: () => {},
    ready: () => null,
  });
  port = ((await gateway.listen('127.0.0.1', 0)) as AddressInfo).port;
});
after(async () => {
  await gateway.drain();
});

interface ErrorReply {
  type?: string;
  request_id?: string;
  error?: { type?: string; message?: unknown };
}

async function post(path: string, headers: Record<string, string>, body: unknown) {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, json: (await response.json()) as ErrorReply };
}

test("an internal error is a 500 in the client's API shape, with its request id, not to be retried", async () => {
  const anthropic = await post(
    '/v1/messages',
    { 'anthropic-version': '2023-06-01', 'x-api-key': 'k' },
    { model: 'claude-sonnet-4-5', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] },
  );
  assert.equal(anthropic.status, 500);
  assert.equal(anthropic.json.type, 'error', JSON.stringify(anthropic.json));
  assert.equal(anthropic.json.error?.type, 'api_error');
  assert.equal(typeof anthropic.json.error?.message, 'string');
  const anthropicId = anthropic.headers.get('request-id');
  assert.match(String(anthropicId), /^req_[0-9a-f]{32}$/);
  assert.equal(anthropic.json.request_id, anthropicId);
  assert.equal(anthropic.headers.get('x-should-retry'), 'false');
  assert.doesNotMatch(JSON.stringify(anthropic.json), /a bug in admission|\.js:\d+/, 'no internals reach the client');

  const openai = await post(
    '/v1/chat/completions',
    { authorization: 'Bearer k' },
    { model: 'gpt-4.1-mini', messages: [{ role: 'user', content: 'hi' }] },
  );
  assert.equal(openai.status, 500);
  assert.equal(openai.json.error?.type, 'server_error', JSON.stringify(openai.json));
  assert.match(String(openai.headers.get('x-request-id')), /^req_[0-9a-f]{32}$/);
  assert.equal(openai.headers.get('x-should-retry'), 'false');
});
