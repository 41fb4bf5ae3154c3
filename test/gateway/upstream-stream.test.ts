// Upstream replies that misbehave at their end or in their body. A stream whose terminal event is followed by a
// connection held open (with more bytes, or none) or dropped before the body's end: the terminal event ends the
// reply, so the call is answered and recorded as the success it is, nothing after it reaches the client or the
// record, and the upstream connection is let go. A count_tokens or models 2xx that is no JSON answer: a recorded 502.
// A whole reply with bytes that are not UTF-8: forwarded well-formed, as the record holds it; one labelled other
// than JSON: forwarded as the JSON it was read as. A stream held open after an error event: ended by it. A terminal
// event that cannot be read: withheld, the reply ends in an error. A whole reply under another 2xx: answered 200.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { isUtf8 } from 'node:buffer';
import { request } from 'node:http';
import { configSet, issueKey, KEYS, ledgerEntries, startServed, type Served } from './harness.js';

let served: Served;
let key: string;

before(async () => {
  served = await startServed([], (root) => {
    // Short enough that a gateway waiting out the idle timeout records the call as timed out within the test, long
    // enough that a loaded machine never times out the status line of a call the test expects answered.
    configSet(root, 'router.timeout_ms', '10000');
  });
  key = issueKey('AGENT-UP-STREAM');
});
after(async () => {
  await served.cleanup();
});

const frame = (event: string | null, data: unknown): string =>
  `${event === null ? '' : `event: ${event}\n`}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;

/** A whole Anthropic stream answering "hello" (5 in, 7 out), its message_stop named or only typed in its data. */
function anthropicStream(stopNamed: boolean): string {
  return [
    frame('message_start', {
      type: 'message_start',
      message: {
        model: 'claude-sonnet-4-5',
        content: [],
        usage: { input_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 },
      },
    }),
    frame('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
    frame('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'text_delta', text: 'hello' },
    }),
    frame('content_block_stop', { type: 'content_block_stop', index: 0 }),
    frame('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 7 } }),
    frame(stopNamed ? 'message_stop' : null, { type: 'message_stop' }),
  ].join('');
}

/** Text sent after the terminal event: a well-behaved gateway neither forwards nor records it. */
const AFTER = frame('content_block_delta', {
  type: 'content_block_delta',
  index: 0,
  delta: { type: 'text_delta', text: 'AFTER-THE-END' },
});

function post(
  path: string,
  headers: Record<string, string>,
  body: unknown,
): Promise<{ status: number; text: string; bytes: Buffer; type: string | undefined }> {
  const payload = JSON.stringify(body);
  const { port } = new URL(served.url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: Number(port),
        method: 'POST',
        path,
        headers: {
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(payload)),
          ...headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const bytes = Buffer.concat(chunks);
          resolve({
            status: res.statusCode ?? 0,
            text: bytes.toString('utf8'),
            bytes,
            type: res.headers['content-type'],
          });
        });
        res.on('error', reject);
      },
    );
    req.once('error', reject);
    req.end(payload);
  });
}

const messages = (session: string) =>
  post(
    '/v1/messages',
    { 'anthropic-version': '2023-06-01', 'x-api-key': key, 'x-cplane-session': session },
    { model: 'claude-sonnet-4-5', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'hi' }] },
  );

const exchangesOf = (session: string) =>
  ledgerEntries(served.root).filter((e) => e.event_type === 'EXCHANGE' && e.metadata.session_id === session);

/** The upstream saw the gateway hang up on the reply it never ended (waited for: the close reaches it after the answer). */
async function upstreamLetGo(before: number): Promise<void> {
  for (let i = 0; i < 600 && served.upstream.aborted === before; i += 1) await new Promise((r) => setTimeout(r, 50));
  assert.equal(served.upstream.aborted, before + 1, 'the gateway closed the upstream connection');
}

for (const c of [
  { name: 'held open with more frames after message_stop', stopNamed: true, ending: 'hang' as const, extra: AFTER },
  {
    name: 'held open after a message_stop typed only in its data',
    stopNamed: false,
    ending: 'hang' as const,
    extra: '',
  },
  { name: 'dropped after message_stop, before the body ends', stopNamed: true, ending: 'drop' as const, extra: '' },
]) {
  test(`an upstream stream ${c.name}: the reply completes, one SUCCESS EXCHANGE with exact usage`, async () => {
    const session = `SES-UP-END-${c.ending}-${c.stopNamed ? 'named' : 'typed'}`;
    const aborted = served.upstream.aborted;
    served.upstream.faults.push({
      raw: anthropicStream(c.stopNamed) + c.extra,
      contentType: 'text/event-stream',
      ending: c.ending,
    });
    const reply = await messages(session);
    assert.equal(reply.status, 200, reply.text);
    assert.match(reply.text, /"type":"message_stop"/, 'the terminal event is released');
    assert.doesNotMatch(reply.text, /AFTER-THE-END|"type":"error"/);
    const [exchange, ...more] = exchangesOf(session);
    assert.equal(more.length, 0, 'one EXCHANGE');
    assert.equal(exchange?.decision, 'SUCCESS', JSON.stringify(exchange?.metadata));
    assert.equal(exchange?.metadata.usage_complete, true);
    assert.equal(exchange?.metadata.input_tokens, 5);
    assert.equal(exchange?.metadata.output_tokens, 7);
    assert.deepEqual(JSON.parse(String(exchange?.metadata.response)), [{ type: 'text', text: 'hello' }]);
    if (c.ending === 'hang') await upstreamLetGo(aborted);
  });
}

test('streams that end their body after the terminal event leave their upstream connection to the next call', async () => {
  const before = served.upstream.connections;
  for (let i = 0; i < 3; i += 1) {
    const reply = await messages(`SES-UP-KEEPALIVE-${i}`);
    assert.equal(reply.status, 200, reply.text);
    assert.match(reply.text, /"type":"message_stop"/);
    // The rest of the body (its chunked terminator) is read aside after the reply: give it a moment to land.
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.ok(served.upstream.connections - before <= 1, `${served.upstream.connections - before} new connections`);
});

test('an OpenAI chat stream held open after [DONE]: the reply completes, one SUCCESS EXCHANGE with exact usage', async () => {
  const session = 'SES-UP-END-CHAT';
  const aborted = served.upstream.aborted;
  const chunk = (delta: unknown, finish: string | null) => ({
    id: 'c1',
    object: 'chat.completion.chunk',
    model: 'gpt-4.1-mini',
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  served.upstream.faults.push({
    raw: [
      frame(null, chunk({ role: 'assistant', content: 'hello' }, null)),
      frame(null, chunk({}, 'stop')),
      frame(null, {
        id: 'c1',
        object: 'chat.completion.chunk',
        model: 'gpt-4.1-mini',
        choices: [],
        usage: { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 },
      }),
      frame(null, '[DONE]'),
      frame(null, chunk({ content: 'AFTER-THE-END' }, null)),
    ].join(''),
    contentType: 'text/event-stream',
    ending: 'hang',
  });
  const reply = await post(
    '/v1/chat/completions',
    { authorization: `Bearer ${key}`, 'x-cplane-session': session },
    { model: 'gpt-4.1-mini', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'hi' }] },
  );
  assert.equal(reply.status, 200, reply.text);
  assert.match(reply.text, /data: \[DONE\]/);
  assert.doesNotMatch(reply.text, /AFTER-THE-END/);
  const [exchange, ...more] = exchangesOf(session);
  assert.equal(more.length, 0, 'one EXCHANGE');
  assert.equal(exchange?.decision, 'SUCCESS', JSON.stringify(exchange?.metadata));
  assert.equal(exchange?.metadata.output_tokens, 7);
  assert.ok(!reply.text.includes(KEYS.openai));
  await upstreamLetGo(aborted);
});

test('a count_tokens or models 2xx that is not a JSON answer (HTML, empty, an error object) is a recorded 502, never a success', async () => {
  const session = 'SES-UP-PASS-MALFORMED';
  const anthropic = { 'anthropic-version': '2023-06-01', 'x-api-key': key, 'x-cplane-session': session };
  const bodies = [
    { raw: '<html><body>502 Bad Gateway</body></html>', contentType: 'text/html' },
    { raw: '' },
    { raw: JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'busy' } }) },
    { raw: '[1,2]' },
  ];
  for (const fault of bodies) {
    served.upstream.faults.push(fault);
    const counted = await post('/v1/messages/count_tokens', anthropic, {
      model: 'claude-sonnet-4-5',
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(counted.status, 502, `${fault.raw}: ${counted.text}`);
    assert.equal((JSON.parse(counted.text) as { type?: string }).type, 'error', counted.text);
  }
  served.upstream.faults.push(bodies[0] as (typeof bodies)[0]);
  const { port } = new URL(served.url);
  const models = await fetch(`http://127.0.0.1:${port}/v1/models`, { headers: anthropic });
  assert.equal(models.status, 502);
  const exchanges = exchangesOf(session);
  assert.equal(exchanges.length, bodies.length + 1, 'one EXCHANGE per call');
  for (const e of exchanges) {
    assert.equal(e.decision, 'ERROR', JSON.stringify(e.metadata));
    assert.equal(e.metadata.error_code, 'MALFORMED_RESPONSE');
  }
});

/** JSON text with the bytes FF C3 (not UTF-8: each decodes to U+FFFD) where it says BAD. */
function notUtf8(json: string): Buffer {
  const [head = '', tail = ''] = json.split('BAD');
  return Buffer.concat([Buffer.from(head), Buffer.from([0xff, 0xc3]), Buffer.from(tail)]);
}

test('a whole reply whose bytes are not UTF-8 reaches the client well-formed (U+FFFD), as the record holds it', async () => {
  const session = 'SES-UP-NOT-UTF8';
  const anthropic = { 'anthropic-version': '2023-06-01', 'x-api-key': key, 'x-cplane-session': session };
  served.upstream.faults.push({
    raw: notUtf8(
      JSON.stringify({
        type: 'message',
        id: 'msg_1',
        role: 'assistant',
        model: 'claude-sonnet-4-5',
        content: [{ type: 'text', text: 'x BAD y' }],
        stop_reason: 'end_turn',
        usage: { input_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 7 },
      }),
    ),
  });
  const whole = await post('/v1/messages', anthropic, {
    model: 'claude-sonnet-4-5',
    max_tokens: 64,
    messages: [{ role: 'user', content: 'hi' }],
  });
  assert.equal(whole.status, 200, whole.text);
  assert.ok(isUtf8(whole.bytes), 'the client gets UTF-8');
  assert.equal((JSON.parse(whole.text) as { content: Array<{ text: string }> }).content[0]?.text, 'x \uFFFD\uFFFD y');
  served.upstream.faults.push({ raw: notUtf8(JSON.stringify({ input_tokens: 3, note: 'BAD' })) });
  const counted = await post('/v1/messages/count_tokens', anthropic, {
    model: 'claude-sonnet-4-5',
    messages: [{ role: 'user', content: 'hi' }],
  });
  assert.equal(counted.status, 200, counted.text);
  assert.ok(isUtf8(counted.bytes), 'the client gets UTF-8');
  const [generation, passed, ...more] = exchangesOf(session);
  assert.equal(more.length, 0);
  assert.deepEqual(JSON.parse(String(generation?.metadata.response)), [{ type: 'text', text: 'x \uFFFD\uFFFD y' }]);
  assert.equal(passed?.decision, 'SUCCESS');
});

test('a whole reply labelled other than JSON (text/html, text/plain) reaches the client as the JSON it was read as', async () => {
  const session = 'SES-UP-LABEL';
  const anthropic = { 'anthropic-version': '2023-06-01', 'x-api-key': key, 'x-cplane-session': session };
  served.upstream.faults.push({
    contentType: 'text/html; charset=utf-8',
    raw: JSON.stringify({
      type: 'message',
      id: 'msg_1',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content: [{ type: 'text', text: 'labelled html' }],
      stop_reason: 'end_turn',
      usage: { input_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 7 },
    }),
  });
  const whole = await post('/v1/messages', anthropic, {
    model: 'claude-sonnet-4-5',
    max_tokens: 64,
    messages: [{ role: 'user', content: 'hi' }],
  });
  assert.equal(whole.status, 200, whole.text);
  assert.equal(whole.type, 'application/json', 'an SDK parses the reply as JSON only when it is labelled so');
  served.upstream.faults.push({ contentType: 'text/plain', raw: JSON.stringify({ input_tokens: 3 }) });
  const counted = await post('/v1/messages/count_tokens', anthropic, {
    model: 'claude-sonnet-4-5',
    messages: [{ role: 'user', content: 'hi' }],
  });
  assert.equal(counted.status, 200, counted.text);
  assert.equal(counted.type, 'application/json');
  assert.equal(exchangesOf(session).length, 2);
});

test('an upstream stream held open after an error event: the reply ends with it, one ERROR EXCHANGE with the partial content', async () => {
  const aborted = served.upstream.aborted;
  served.upstream.faults.push({
    raw:
      anthropicStream(true).split('event: content_block_stop')[0] +
      frame('error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
    contentType: 'text/event-stream',
    ending: 'hang',
  });
  const reply = await messages('SES-UP-ERR-ANTHROPIC');
  assert.equal(reply.status, 200, reply.text);
  assert.match(reply.text, /overloaded_error/);
  assert.doesNotMatch(reply.text, /message_stop/);
  const [cut, ...more] = exchangesOf('SES-UP-ERR-ANTHROPIC');
  assert.equal(more.length, 0, 'one EXCHANGE');
  assert.equal(cut?.decision, 'ERROR');
  assert.equal(cut?.metadata.error_code, 'UPSTREAM_STREAM_ERROR', JSON.stringify(cut?.metadata));
  assert.deepEqual(JSON.parse(String(cut?.metadata.response)), [{ type: 'text', text: 'hello' }]);
  await upstreamLetGo(aborted);

  const chatAborted = served.upstream.aborted;
  served.upstream.faults.push({
    raw:
      frame(null, {
        id: 'c1',
        object: 'chat.completion.chunk',
        model: 'gpt-4.1-mini',
        choices: [{ index: 0, delta: { role: 'assistant', content: 'hel' }, finish_reason: null }],
      }) + frame(null, { error: { message: 'The server had an error', type: 'server_error' } }),
    contentType: 'text/event-stream',
    ending: 'hang',
  });
  const chat = await post(
    '/v1/chat/completions',
    { authorization: `Bearer ${key}`, 'x-cplane-session': 'SES-UP-ERR-CHAT' },
    { model: 'gpt-4.1-mini', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'hi' }] },
  );
  assert.equal(chat.status, 200, chat.text);
  assert.match(chat.text, /The server had an error/);
  const [chatCut] = exchangesOf('SES-UP-ERR-CHAT');
  assert.equal(chatCut?.metadata.error_code, 'UPSTREAM_STREAM_ERROR', JSON.stringify(chatCut?.metadata));
  await upstreamLetGo(chatAborted);
});

test('a terminal event the reader cannot read (message_stop with data that is not JSON) is withheld: the client gets an error', async () => {
  served.upstream.faults.push({
    raw: `${anthropicStream(true).split('event: message_stop')[0]}event: message_stop\ndata: {not json\n\n`,
    contentType: 'text/event-stream',
  });
  const reply = await messages('SES-UP-BAD-STOP');
  assert.equal(reply.status, 200, reply.text);
  assert.doesNotMatch(reply.text, /event: message_stop/, 'the reply is not presented as whole');
  assert.match(reply.text, /event: error/);
  const [cut, ...more] = exchangesOf('SES-UP-BAD-STOP');
  assert.equal(more.length, 0, 'one EXCHANGE');
  assert.equal(cut?.decision, 'ERROR');
  assert.equal(cut?.metadata.error_code, 'STREAM_TRUNCATED');
});

test('a whole reply under another 2xx status (205, 206) reaches the client as 200, the status its body is read with', async () => {
  const session = 'SES-UP-STATUS';
  const anthropic = { 'anthropic-version': '2023-06-01', 'x-api-key': key, 'x-cplane-session': session };
  served.upstream.faults.push({
    status: 205,
    raw: JSON.stringify({
      type: 'message',
      id: 'msg_1',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content: [{ type: 'text', text: 'reset content' }],
      stop_reason: 'end_turn',
      usage: { input_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 7 },
    }),
  });
  const whole = await post('/v1/messages', anthropic, {
    model: 'claude-sonnet-4-5',
    max_tokens: 64,
    messages: [{ role: 'user', content: 'hi' }],
  });
  assert.equal(whole.status, 200, whole.text);
  served.upstream.faults.push({ status: 206, raw: JSON.stringify({ input_tokens: 3 }) });
  const counted = await post('/v1/messages/count_tokens', anthropic, {
    model: 'claude-sonnet-4-5',
    messages: [{ role: 'user', content: 'hi' }],
  });
  assert.equal(counted.status, 200, counted.text);
  assert.deepEqual(
    exchangesOf(session).map((e) => e.decision),
    ['SUCCESS', 'SUCCESS'],
  );
});
