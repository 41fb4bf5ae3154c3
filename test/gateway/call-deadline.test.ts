// The call deadline (`gateway.call_deadline_ms`): an upstream that keeps a stream alive without ending it, or never
// begins its reply, holds a call only until the deadline, however far inside the idle timeout it stays. The reply
// is then cut, the client told in its API's shape, the upstream connection let go, and the call recorded once as a
// TIMEOUT with what had arrived, never retried (the deadline is past for a retry too).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { configSet, issueKey, ledgerEntries, startServed, type Served } from './harness.js';

let served: Served;
let key: string;

before(async () => {
  served = await startServed([], (root) => {
    // The idle timeout far beyond the deadline: only the deadline can end these calls within the test.
    configSet(root, 'router.timeout_ms', '120000');
    configSet(root, 'gateway.call_deadline_ms', '2000');
  });
  key = issueKey('AGENT-DEADLINE');
});
after(async () => {
  await served.cleanup();
});

const frame = (event: string, data: unknown): string => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

const exchangesOf = (session: string) =>
  ledgerEntries(served.root).filter((e) => e.event_type === 'EXCHANGE' && e.metadata.session_id === session);

async function messages(session: string, stream: boolean): Promise<{ status: number; text: string }> {
  const res = await fetch(`${served.url}/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'anthropic-version': '2023-06-01',
      'x-api-key': key,
      'x-cplane-session': session,
    },
    body: JSON.stringify({
      model: 'claude-sonnet-4-5',
      max_tokens: 64,
      stream,
      messages: [{ role: 'user', content: 'hi' }],
    }),
  });
  return { status: res.status, text: await res.text() };
}

async function upstreamLetGo(before: number): Promise<void> {
  for (let i = 0; i < 600 && served.upstream.aborted === before; i += 1) await new Promise((r) => setTimeout(r, 50));
  assert.equal(served.upstream.aborted, before + 1, 'the gateway closed the upstream connection');
}

test('a stream the upstream never ends is cut at the call deadline: the client gets an error event, one TIMEOUT EXCHANGE keeps the text that arrived', async () => {
  const session = 'SES-DEADLINE-STREAM';
  const aborted = served.upstream.aborted;
  const requests = served.upstream.requests.length;
  served.upstream.faults.push({
    raw: [
      frame('message_start', {
        type: 'message_start',
        message: { model: 'claude-sonnet-4-5', content: [], usage: { input_tokens: 5, output_tokens: 1 } },
      }),
      frame('content_block_start', {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'text', text: '' },
      }),
      frame('content_block_delta', {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'text_delta', text: 'partial words' },
      }),
    ].join(''),
    contentType: 'text/event-stream',
    ending: 'hang',
  });
  const reply = await messages(session, true);
  assert.equal(reply.status, 200, reply.text);
  assert.match(reply.text, /partial words/);
  assert.match(reply.text, /event: error/);
  assert.match(reply.text, /deadline of 2000 ms/);
  assert.doesNotMatch(reply.text, /message_stop/, 'a cut reply is never completed');
  const [exchange, ...more] = exchangesOf(session);
  assert.equal(more.length, 0, 'one EXCHANGE');
  assert.notEqual(exchange?.decision, 'SUCCESS');
  assert.equal(exchange?.metadata.error_code, 'TIMEOUT', JSON.stringify(exchange?.metadata));
  assert.match(String(exchange?.metadata.response), /partial words/);
  assert.equal(served.upstream.requests.length, requests + 1, 'not retried');
  await upstreamLetGo(aborted);
});

test('a reply that never begins is cut at the call deadline: a timeout answer, one TIMEOUT EXCHANGE, no retry', async () => {
  const session = 'SES-DEADLINE-WHOLE';
  const requests = served.upstream.requests.length;
  served.upstream.faults.push({ replyDelayMs: 60_000 });
  const reply = await messages(session, false);
  assert.ok(reply.status >= 500, `${reply.status} ${reply.text}`);
  const body = JSON.parse(reply.text) as { type: string; error: { message: string } };
  assert.equal(body.type, 'error');
  assert.match(body.error.message, /deadline of 2000 ms/);
  const [exchange, ...more] = exchangesOf(session);
  assert.equal(more.length, 0, 'one EXCHANGE');
  assert.equal(exchange?.metadata.error_code, 'TIMEOUT', JSON.stringify(exchange?.metadata));
  assert.equal(served.upstream.requests.length, requests + 1, 'not retried');
});
