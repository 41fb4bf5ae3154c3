// Hostile requests at the gateway's HTTP edge and hostile upstream replies that the other gateway tests do not
// send: a key in the query string, duplicate credentials, HEAD/OPTIONS, lone surrogates and invalid UTF-8 in a
// body, a 200 carrying an error body, a redirect. Each ends in a coded, well-formed answer (never a 500 or a
// stack), every admitted call has exactly one EXCHANGE, and no key reaches a log line or the ledger.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { connect } from 'node:net';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { issueKey, KEYS, budgetEntries, ledgerEntries, startServed, type Served } from './harness.js';

let served: Served;
let key: string;

before(async () => {
  served = await startServed();
  key = issueKey('AGENT-EDGE');
});
after(async () => {
  await served.cleanup();
});

const body = (content: string): string =>
  JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 8, messages: [{ role: 'user', content }] });

/** A raw request (duplicate headers, any method, raw bytes): status, headers and body text. */
function raw(
  method: string,
  path: string,
  headers: Array<[string, string]>,
  payload?: Buffer,
): Promise<{ status: number; headers: Record<string, unknown>; text: string }> {
  const { port } = new URL(served.url);
  return new Promise((resolve, reject) => {
    const flat: string[] = ['host', `127.0.0.1:${port}`];
    for (const [name, value] of headers) flat.push(name, value);
    if (payload !== undefined) flat.push('content-length', String(payload.byteLength));
    const req = request({ host: '127.0.0.1', port: Number(port), method, path, headers: flat }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }),
      );
    });
    req.once('error', reject);
    req.end(payload);
  });
}

const anthropic: Array<[string, string]> = [
  ['content-type', 'application/json'],
  ['anthropic-version', '2023-06-01'],
];

function assertCoded(r: { status: number; text: string }, status: number): void {
  assert.equal(r.status, status, r.text);
  const parsed = JSON.parse(r.text) as { type?: string; error?: { type?: string; message?: string } };
  assert.equal(parsed.type, 'error', r.text);
  assert.equal(typeof parsed.error?.message, 'string', r.text);
  assert.doesNotMatch(r.text, /\bat .+\.js:\d+/, 'no stack trace');
}

const lastUserText = (sent: Record<string, unknown> | null | undefined): unknown =>
  (sent?.messages as Array<{ content: unknown }> | undefined)?.at(-1)?.content;

const exchangesOfSession = (session: string) =>
  ledgerEntries(served.root).filter((e) => e.event_type === 'EXCHANGE' && e.metadata.session_id === session);

test('a key in the query string is not a credential (401) and reaches no log line or record; with a real key the query is ignored', async () => {
  const before = served.upstream.requests.length;
  const queried = await raw(
    'POST',
    `/v1/messages?key=${encodeURIComponent(key)}&api_key=${encodeURIComponent(key)}`,
    [...anthropic, ['x-cplane-session', 'SES-EDGE-QUERY']],
    Buffer.from(body('query key')),
  );
  assertCoded(queried, 401);
  assert.equal(served.upstream.requests.length, before, 'nothing went upstream');
  const ok = await raw(
    'POST',
    `/v1/messages?beta=true&key=${encodeURIComponent(key)}`,
    [...anthropic, ['x-api-key', key], ['x-cplane-session', 'SES-EDGE-QUERY']],
    Buffer.from(body('query ignored')),
  );
  assert.equal(ok.status, 200, ok.text);
  assert.ok(!served.upstream.requests.at(-1)?.path.includes('key'), 'the query is not sent upstream');
  assert.equal(exchangesOfSession('SES-EDGE-QUERY').length, 1);
  const ledger = JSON.stringify(ledgerEntries(served.root));
  for (const secret of [key, encodeURIComponent(key)]) {
    assert.ok(!ledger.includes(secret), 'not in the ledger');
    assert.ok(!served.stdout().includes(secret) && !served.stderr().includes(secret), 'not in the log');
  }
});

test('duplicate or conflicting credentials are never merged into a valid one: a junk x-api-key beside a good one is 401', async () => {
  const before = served.upstream.requests.length;
  const twice = await raw(
    'POST',
    '/v1/messages',
    [...anthropic, ['x-api-key', key], ['X-Api-Key', 'junk'], ['x-cplane-session', 'SES-EDGE-DUP']],
    Buffer.from(body('two keys')),
  );
  assertCoded(twice, 401);
  // x-api-key wins over Authorization: a bad x-api-key is not rescued by a good bearer.
  const both = await raw(
    'POST',
    '/v1/messages',
    [...anthropic, ['x-api-key', 'junk'], ['authorization', `Bearer ${key}`], ['x-cplane-session', 'SES-EDGE-DUP']],
    Buffer.from(body('both')),
  );
  assertCoded(both, 401);
  assert.equal(served.upstream.requests.length, before, 'nothing went upstream');
  assert.ok(!twice.text.includes(key) && !both.text.includes(key), 'the key is not echoed');
});

test('HEAD, OPTIONS and unknown methods on a real path are a coded 404 (HEAD without a body), never a 500', async () => {
  for (const method of ['OPTIONS', 'PUT', 'DELETE', 'PATCH']) {
    const r = await raw(method, '/v1/messages', [...anthropic, ['x-api-key', key]]);
    assertCoded(r, 404);
  }
  const head = await raw('HEAD', '/v1/messages', [...anthropic, ['x-api-key', key]]);
  assert.equal(head.status, 404);
  assert.equal(head.text, '');
  assert.equal((await fetch(`${served.url}/healthz`)).status, 200);
});

test('a compressed body or one in a charset other than UTF-8 is a coded 415, nothing upstream; UTF-8 and identity are accepted', async () => {
  const before = served.upstream.requests.length;
  const json = Buffer.from(body('caf\u00e9'));
  const refused: Array<[string, Array<[string, string]>, Buffer]> = [
    ['gzip', [['content-encoding', 'gzip']], gzipSync(json)],
    ['deflate', [['content-encoding', 'deflate']], deflateSync(json)],
    ['br', [['content-encoding', 'br']], brotliCompressSync(json)],
    ['gzip named, plain sent', [['content-encoding', 'gzip']], json],
    ['latin1', [['content-type', 'application/json; charset=ISO-8859-1']], Buffer.from(body('caf\u00e9'), 'latin1')],
    ['utf-16', [['content-type', 'application/json; charset=utf-16le']], Buffer.from(body('x'), 'utf16le')],
  ];
  for (const [name, extra, payload] of refused) {
    const r = await raw(
      'POST',
      '/v1/messages',
      [...anthropic.filter(([h]) => !extra.some(([e]) => e === h)), ...extra, ['x-api-key', key]],
      payload,
    );
    assertCoded(r, 415);
    assert.match(r.text, /content-(encoding|type)/, name);
  }
  const openai = await raw(
    'POST',
    '/v1/chat/completions',
    [
      ['content-type', 'application/json'],
      ['content-encoding', 'gzip'],
      ['authorization', `Bearer ${key}`],
    ],
    gzipSync(JSON.stringify({ model: 'gpt-4.1-mini', messages: [{ role: 'user', content: 'hi' }] })),
  );
  assert.equal(openai.status, 415, openai.text);
  assert.equal(typeof (JSON.parse(openai.text) as { error: { message: string } }).error.message, 'string');
  assert.equal(served.upstream.requests.length, before, 'nothing went upstream');
  for (const extra of [
    [['content-type', 'application/json; charset=UTF-8']],
    [['content-encoding', 'identity']],
  ] as Array<Array<[string, string]>>) {
    const r = await raw(
      'POST',
      '/v1/messages',
      [...anthropic.filter(([h]) => !extra.some(([e]) => e === h)), ...extra, ['x-api-key', key]],
      json,
    );
    assert.equal(r.status, 200, r.text);
  }
  assert.equal(lastUserText(served.upstream.requests.at(-1)?.body), 'caf\u00e9', 'forwarded as sent');
});

/** Raw bytes on a new connection: everything the gateway sends before it closes it. */
function rawBytes(text: string): Promise<string> {
  const { port } = new URL(served.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(text));
    let out = '';
    socket.on('data', (d: Buffer) => {
      out += d.toString('utf8');
    });
    socket.once('error', reject);
    socket.once('close', () => resolve(out));
  });
}

test('HTTP the parser refuses (CL with TE, two lengths, a bad chunk size, headers too large) gets a status and a JSON error both SDKs parse', async () => {
  const before = served.upstream.requests.length;
  const json = body('framing');
  const head = `POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nanthropic-version: 2023-06-01\r\nx-api-key: ${key}\r\n`;
  const cases: Array<[string, string, number]> = [
    [
      'content-length with transfer-encoding',
      `${head}content-length: ${json.length}\r\ntransfer-encoding: chunked\r\n\r\n${json.length.toString(16)}\r\n${json}\r\n0\r\n\r\n`,
      400,
    ],
    [
      'two content-lengths',
      `${head}content-length: ${json.length}\r\ncontent-length: ${json.length + 1}\r\n\r\n${json} `,
      400,
    ],
    ['a bad chunk size', `${head}transfer-encoding: chunked\r\n\r\nzz\r\n${json}\r\n0\r\n\r\n`, 400],
    ['headers too large', `${head}x-filler: ${'a'.repeat(64 * 1024)}\r\n\r\n`, 431],
  ];
  for (const [name, text, status] of cases) {
    const reply = await rawBytes(text);
    assert.match(reply, new RegExp(`^HTTP/1\\.1 ${status} `), `${name}: ${reply}`);
    const parsed = JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4)) as {
      type: string;
      error: { type: string; message: string };
    };
    assert.equal(parsed.type, 'error', name);
    assert.equal(parsed.error.type, 'invalid_request_error', name);
    assert.match(parsed.error.message, /the request is refused/, name);
  }
  assert.equal(served.upstream.requests.length, before, 'nothing went upstream');
  assert.equal((await fetch(`${served.url}/healthz`)).status, 200);
});

test('a malformed request pipelined behind a stream being written closes the connection: no error is spliced into the stream', async () => {
  const { port } = new URL(served.url);
  const json = JSON.stringify({ ...JSON.parse(body('pipelined')), stream: true });
  served.upstream.faults.push({ frameDelayMs: 150 });
  const reply = await new Promise<string>((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () =>
      socket.write(
        `POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nanthropic-version: 2023-06-01\r\n` +
          `x-api-key: ${key}\r\ncontent-length: ${Buffer.byteLength(json)}\r\n\r\n${json}`,
      ),
    );
    let out = '';
    let sent = false;
    socket.on('data', (d: Buffer) => {
      out += d.toString('utf8');
      // Once the stream's first event is out, the next request on the connection is garbage.
      if (!sent && out.includes('event: message_start')) {
        sent = true;
        socket.write('NOT HTTP AT ALL\r\n\r\n');
      }
    });
    socket.once('error', reject);
    socket.once('close', () => resolve(out));
  });
  assert.match(reply, /^HTTP\/1\.1 200 /);
  assert.equal(reply.match(/HTTP\/1\.1 \d{3} /g)?.length, 1, `one response only: ${reply}`);
  assert.doesNotMatch(reply, /the request is refused/);
  assert.equal((await fetch(`${served.url}/healthz`)).status, 200);
});

test('lone surrogates and invalid UTF-8 in a request body are answered 200 (U+FFFD), one SUCCESS EXCHANGE each, the ledger verifies', async () => {
  const lone = await raw(
    'POST',
    '/v1/messages',
    [...anthropic, ['x-api-key', key], ['x-cplane-session', 'SES-EDGE-UTF']],
    Buffer.from(
      '{"model":"claude-sonnet-4-5","max_tokens":8,"messages":[{"role":"user","content":"a\\ud800b\\udfffc"}]}',
    ),
  );
  assert.equal(lone.status, 200, lone.text);
  const invalid = await raw(
    'POST',
    '/v1/messages',
    [...anthropic, ['x-api-key', key], ['x-cplane-session', 'SES-EDGE-UTF']],
    Buffer.concat([
      Buffer.from('{"model":"claude-sonnet-4-5","max_tokens":8,"messages":[{"role":"user","content":"bad '),
      Buffer.from([0xff, 0xfe, 0xc3]),
      Buffer.from(' bytes"}]}'),
    ]),
  );
  assert.equal(invalid.status, 200, invalid.text);
  const exchanges = exchangesOfSession('SES-EDGE-UTF');
  assert.equal(exchanges.length, 2);
  for (const e of exchanges) assert.equal(e.decision, 'SUCCESS');
  assert.match(String(exchanges[0]?.metadata.prompt), /a\uFFFDb\uFFFDc|a\\ud800b/);
  const { cli } = await import('./harness.js');
  const verified = cli(['ledger', 'verify', '--root', served.root]);
  assert.equal(verified.status, 0, verified.stderr + verified.stdout);
});

test('an upstream 200 carrying an error body, and a redirect: coded 502 / error, one EXCHANGE each, the redirect not followed', async () => {
  served.upstream.faults.push({
    raw: JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: `busy ${KEYS.anthropic}` } }),
  });
  const errorBody = await raw(
    'POST',
    '/v1/messages',
    [...anthropic, ['x-api-key', key], ['x-cplane-session', 'SES-EDGE-UP']],
    Buffer.from(body('200 error')),
  );
  assertCoded(errorBody, 502);
  assert.ok(!errorBody.text.includes(KEYS.anthropic), 'the upstream key is not echoed');
  const requestsBefore = served.upstream.requests.length;
  served.upstream.faults.push({
    status: 302,
    body: {},
    headers: { location: `${served.upstream.url}/v1/elsewhere?stolen=1` },
  });
  const redirected = await raw(
    'POST',
    '/v1/messages',
    [...anthropic, ['x-api-key', key], ['x-cplane-session', 'SES-EDGE-UP']],
    Buffer.from(body('redirect')),
  );
  assert.ok(redirected.status >= 400 && redirected.status < 600, redirected.text);
  assertCoded(redirected, redirected.status);
  assert.ok(
    served.upstream.requests.slice(requestsBefore).every((r) => r.path === '/v1/messages'),
    'the redirect is never followed',
  );
  const exchanges = exchangesOfSession('SES-EDGE-UP');
  assert.equal(exchanges.length, 2, 'one EXCHANGE per call');
  assert.ok(exchanges.every((e) => e.decision !== 'SUCCESS'));
  assert.ok(!JSON.stringify(exchanges).includes(KEYS.anthropic), 'the upstream key is not recorded');
});

test("an upstream request-id header that is 8 KiB long and echoes the gateway's key is recorded bounded and without the key", async () => {
  const session = 'SES-EDGE-REQUEST-ID';
  served.upstream.faults.push({
    status: 200,
    body: {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content: [{ type: 'text', text: 'hi' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 5, output_tokens: 1 },
    },
    headers: { 'request-id': `req_${KEYS.anthropic}_${'x'.repeat(8192)}` },
  });
  const reply = await raw(
    'POST',
    '/v1/messages',
    [...anthropic, ['x-api-key', key], ['x-cplane-session', session]],
    Buffer.from(body('request id')),
  );
  assert.equal(reply.status, 200, reply.text);
  const [exchange] = exchangesOfSession(session);
  const recorded = String(exchange?.metadata.upstream_request_id);
  assert.ok(recorded.startsWith('req_'), recorded.slice(0, 80));
  assert.ok(recorded.length <= 256, `${recorded.length} characters recorded`);
  assert.ok(!JSON.stringify(exchange).includes(KEYS.anthropic), 'the upstream key is not recorded');
});

test("an upstream 200 that echoes the gateway's upstream key: the client never sees the key, whole or streamed", async () => {
  const echo = `the request carried x-api-key: ${KEYS.anthropic} (reflected)`;
  const usage = { input_tokens: 5, output_tokens: 3 };
  served.upstream.faults.push({
    raw: JSON.stringify({
      id: `msg_${KEYS.anthropic}`,
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-5',
      content: [{ type: 'text', text: echo }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage,
    }),
  });
  const whole = await raw(
    'POST',
    '/v1/messages',
    [...anthropic, ['x-api-key', key], ['x-cplane-session', 'SES-EDGE-ECHO']],
    Buffer.from(body('echo whole')),
  );
  assert.equal(whole.status, 200, whole.text);
  assert.ok(!whole.text.includes(KEYS.anthropic), `the key reached the client: ${whole.text}`);
  const message = JSON.parse(whole.text) as { content: Array<{ text: string }> };
  assert.match(String(message.content[0]?.text), /x-api-key: \[REDACTED\] \(reflected\)/);
  assert.equal(Number(whole.headers['content-length']), Buffer.byteLength(whole.text));

  const frame = (event: string, data: unknown): string => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
  served.upstream.faults.push({
    contentType: 'text/event-stream',
    raw: [
      frame('message_start', {
        type: 'message_start',
        message: {
          id: 'msg_echo',
          type: 'message',
          role: 'assistant',
          model: 'claude-sonnet-4-5',
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 5, output_tokens: 1 },
        },
      }),
      frame('content_block_start', {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'text', text: '' },
      }),
      frame('content_block_delta', {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'text_delta', text: echo },
      }),
      frame('content_block_stop', { type: 'content_block_stop', index: 0 }),
      frame('message_delta', {
        type: 'message_delta',
        delta: { stop_reason: 'end_turn', stop_sequence: null },
        usage: { output_tokens: 3 },
      }),
      frame('message_stop', { type: 'message_stop' }),
    ].join(''),
  });
  const streamed = await raw(
    'POST',
    '/v1/messages',
    [...anthropic, ['x-api-key', key], ['x-cplane-session', 'SES-EDGE-ECHO']],
    Buffer.from(JSON.stringify({ ...JSON.parse(body('echo streamed')), stream: true })),
  );
  assert.equal(streamed.status, 200, streamed.text);
  assert.ok(!streamed.text.includes(KEYS.anthropic), `the key reached the client: ${streamed.text}`);
  assert.match(streamed.text, /x-api-key: \[REDACTED\] \(reflected\)/);
  assert.match(streamed.text, /event: message_stop/);
  const exchanges = exchangesOfSession('SES-EDGE-ECHO');
  assert.equal(exchanges.length, 2);
  assert.ok(exchanges.every((e) => e.decision === 'SUCCESS'));
  assert.ok(!JSON.stringify(exchanges).includes(KEYS.anthropic), 'the upstream key is not recorded');
});

test("count_tokens and models replies that echo the gateway's upstream key: the client never sees the key", async () => {
  const echo = `reflected x-api-key: ${KEYS.anthropic}`;
  served.upstream.faults.push({ raw: JSON.stringify({ input_tokens: 7, note: echo }) });
  const counted = await raw(
    'POST',
    '/v1/messages/count_tokens',
    [...anthropic, ['x-api-key', key], ['x-cplane-session', 'SES-EDGE-ECHO-PASS']],
    Buffer.from(JSON.stringify({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'count' }] })),
  );
  assert.equal(counted.status, 200, counted.text);
  assert.ok(!counted.text.includes(KEYS.anthropic), `the key reached the client: ${counted.text}`);
  assert.equal((JSON.parse(counted.text) as { input_tokens: number }).input_tokens, 7);
  assert.equal(Number(counted.headers['content-length']), Buffer.byteLength(counted.text));
  served.upstream.faults.push({
    raw: JSON.stringify({ data: [{ type: 'model', id: echo }], has_more: false }),
    contentType: `application/json; x=${KEYS.anthropic}`,
  });
  const models = await raw('GET', '/v1/models', [...anthropic, ['x-api-key', key]]);
  assert.equal(models.status, 200, models.text);
  assert.ok(!models.text.includes(KEYS.anthropic), `the key reached the client: ${models.text}`);
  assert.ok(!String(models.headers['content-type']).includes(KEYS.anthropic), 'nor in a header');
  assert.match(models.text, /\[REDACTED\]/);
});

/** An Anthropic message reply carrying `usage` as the upstream claims it. */
const claiming = (id: string, usage: Record<string, number>) => ({
  status: 200,
  body: {
    id,
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-5',
    content: [{ type: 'text', text: 'hi' }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage,
  },
});

/** One call of `session` whose claimed usage was a lie: charged at its reservation, the problem named, nothing more. */
async function assertChargedAtReservation(session: string, prompt: string, problem: RegExp): Promise<void> {
  const lied = await raw(
    'POST',
    '/v1/messages',
    [...anthropic, ['x-api-key', key], ['x-cplane-session', session]],
    Buffer.from(body(prompt)),
  );
  assert.equal(lied.status, 200, lied.text);
  const entries = ledgerEntries(served.root).filter((e) => e.metadata.session_id === session);
  const budget = budgetEntries(served.root).filter((e) => e.metadata.session_id === session);
  const allocated = budget.find((e) => e.event_type === 'BUDGET_ALLOCATED');
  const settled = budget.find((e) => e.event_type === 'BUDGET_SETTLED');
  assert.ok(allocated && settled, JSON.stringify(budget.map((e) => e.event_type)));
  assert.equal(
    settled.metadata.charged_tokens,
    allocated.metadata.reserved_tokens,
    'the reservation is what is charged',
  );
  assert.match(String((settled.metadata.usage_problems as string[])[0]), problem);
  assert.equal(entries.filter((e) => e.event_type === 'BUDGET_EXCEEDED').length, 0, 'no limit crossed');
  assert.equal(entries.filter((e) => e.event_type === 'EXCHANGE').length, 1);
}

test('an upstream claiming more output than max_tokens is not charged by its claim: the reservation stays charged, nothing overspent', async () => {
  served.upstream.faults.push(claiming('msg_lie', { input_tokens: 10, output_tokens: 1_000_000_000 }));
  await assertChargedAtReservation('SES-EDGE-LIE', 'lie about usage', /1000000000 output tokens, more than the 8/);
});

test('an upstream claiming more prompt tokens than the body could hold is not charged by its claim either', async () => {
  served.upstream.faults.push(
    claiming('msg_input_lie', {
      input_tokens: 5,
      cache_read_input_tokens: 1_000_000_000,
      cache_creation_input_tokens: 0,
      output_tokens: 1,
    }),
  );
  await assertChargedAtReservation(
    'SES-EDGE-INPUT-LIE',
    'lie about the prompt',
    /1000000005 input tokens, more than the \d+/,
  );
});
