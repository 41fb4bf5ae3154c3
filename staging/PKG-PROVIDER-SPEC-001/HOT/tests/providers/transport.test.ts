// The gateway's upstream transport over node:http: bodies streamed as they arrive, headers read case-blind, a
// redirect never followed, the caller's signal aborting a reply mid-body, a refused connection named by its code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import { nodeHttpFetch } from '../../providers/transport.js';

async function serve(handler: Parameters<typeof createServer>[1]): Promise<{ server: Server; url: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const init = (signal = new AbortController().signal) =>
  ({
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"a":"é"}',
    signal,
    redirect: 'error',
  }) as const;

async function text(body: AsyncIterable<Uint8Array> | null): Promise<string> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of body ?? []) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

test('a POST reaches the server with its body and length; the reply streams back over a kept-alive connection', async (t) => {
  const seen: Array<{ body: string; length: string | undefined; port: number | undefined }> = [];
  const { server, url } = await serve((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => {
      body += d.toString('utf8');
    });
    req.on('end', () => {
      seen.push({ body, length: req.headers['content-length'], port: req.socket.remotePort });
      res.writeHead(200, { 'content-type': 'text/event-stream', 'X-Request-Id': 'r1', 'set-cookie': ['a=1', 'b=2'] });
      res.write('data: 1\n\n');
      setTimeout(() => res.end('data: 2\n\n'), 20);
    });
  });
  t.after(() => server.close());
  const fetch = nodeHttpFetch();
  for (let i = 0; i < 2; i++) {
    const reply = await fetch(`${url}/v1/messages?beta=true`, init());
    assert.equal(reply.status, 200);
    assert.equal(reply.headers.get('x-request-id'), 'r1');
    assert.equal(reply.headers.get('X-REQUEST-ID'), 'r1');
    assert.equal(reply.headers.get('set-cookie'), 'a=1, b=2');
    assert.equal(reply.headers.get('absent'), null);
    assert.equal(await text(reply.body), 'data: 1\n\ndata: 2\n\n');
  }
  assert.deepEqual(
    seen.map((s) => [s.body, s.length]),
    [
      ['{"a":"é"}', '10'],
      ['{"a":"é"}', '10'],
    ],
  );
  assert.equal(seen[0]?.port, seen[1]?.port, 'the second call reused the connection');
});

test('a redirect is a reply, never followed (a key is never replayed to another host)', async (t) => {
  let followed = 0;
  const other = await serve((_req, res) => {
    followed += 1;
    res.end('{}');
  });
  const { server, url } = await serve((_req, res) => {
    res.writeHead(307, { location: `${other.url}/v1/messages` });
    res.end();
  });
  t.after(() => {
    server.close();
    other.server.close();
  });
  const reply = await nodeHttpFetch()(`${url}/v1/messages`, init());
  assert.equal(reply.status, 307);
  await text(reply.body);
  assert.equal(followed, 0);
});

test("the caller's signal aborts a reply mid-body; a refused connection is an error naming its code", async (t) => {
  const { server, url } = await serve((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: 1\n\n');
  });
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const controller = new AbortController();
  const reply = await nodeHttpFetch()(`${url}/v1/messages`, init(controller.signal));
  const chunks: string[] = [];
  await assert.rejects(async () => {
    for await (const chunk of reply.body ?? []) {
      chunks.push(Buffer.from(chunk).toString('utf8'));
      controller.abort();
    }
  }, /abort/i);
  assert.deepEqual(chunks, ['data: 1\n\n']);
  const closed = await serve(() => {});
  const port = (closed.server.address() as AddressInfo).port;
  await new Promise((resolve) => closed.server.close(resolve));
  await assert.rejects(nodeHttpFetch()(`http://127.0.0.1:${port}/v1/messages`, init()), (e: unknown) => {
    assert.equal((e as { code?: string }).code, 'ECONNREFUSED');
    return true;
  });
  await assert.rejects(nodeHttpFetch()('ftp://127.0.0.1/x', init()), /unsupported protocol/);
});

/**
 * What node:http's own `signal` option gives, aborted with `reason`: the request's error (before the reply, or a
 * signal already fired), or what reading the body throws (aborted at its first chunk).
 */
function nodeOwnAbort(url: string, reason: unknown, midBody: boolean, already = false): Promise<unknown> {
  const controller = new AbortController();
  if (already) controller.abort(reason);
  return new Promise((resolve) => {
    const req = request(`${url}/v1/messages`, { method: 'POST', signal: controller.signal }, (res) => {
      (async () => {
        for await (const _ of res) controller.abort(reason);
      })().catch(resolve);
    });
    req.on('error', (error) => {
      if (!midBody) resolve(error);
    });
    req.end('{}');
    if (!midBody && !already) setTimeout(() => controller.abort(reason), 20);
  });
}

function sameError(mine: unknown, node: unknown, reason: unknown | undefined): void {
  const [a, b] = [mine as Error & { code?: string }, node as Error & { code?: string }];
  assert.equal(a.constructor, b.constructor, 'the same class as node:http gives');
  assert.ok(a instanceof b.constructor);
  assert.deepEqual([a.name, a.code, a.message], [b.name, b.code, b.message]);
  assert.deepEqual(Object.keys(a), Object.keys(b));
  assert.equal(a.cause, reason);
  assert.equal(b.cause, reason);
}

test("an abort rejects with the very error node:http's signal option gives: before the reply, mid-body, already aborted", async (t) => {
  const { server, url } = await serve((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: 1\n\n');
  });
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const silent = await serve(() => {});
  t.after(() => {
    silent.server.closeAllConnections();
    silent.server.close();
  });
  // Before the reply: the server never answers.
  const early = new AbortController();
  const reasonEarly = new Error('deadline');
  const pending = nodeHttpFetch()(`${silent.url}/v1/messages`, init(early.signal));
  setTimeout(() => early.abort(reasonEarly), 20);
  const earlyError = await pending.then(
    () => assert.fail('resolved'),
    (e: unknown) => e,
  );
  sameError(earlyError, await nodeOwnAbort(silent.url, reasonEarly, false), reasonEarly);
  // Mid-body.
  const mid = new AbortController();
  const reasonMid = new Error('client gone');
  const reply = await nodeHttpFetch()(`${url}/v1/messages`, init(mid.signal));
  let midError: unknown;
  try {
    for await (const _ of reply.body ?? []) mid.abort(reasonMid);
  } catch (e) {
    midError = e;
  }
  // The body's read fails as node's does (the socket destroyed under it): its error carries no cause.
  sameError(midError, await nodeOwnAbort(url, reasonMid, true), undefined);
  // A signal that has already fired.
  const reasonBefore = new Error('drained');
  const before = await nodeHttpFetch()(`${silent.url}/v1/messages`, init(AbortSignal.abort(reasonBefore))).then(
    () => assert.fail('resolved'),
    (e: unknown) => e,
  );
  sameError(before, await nodeOwnAbort(silent.url, reasonBefore, false, true), reasonBefore);
});

test('a kept-alive connection the server drops just as it is reused: the request goes once more on a new one', async (t) => {
  let connections = 0;
  let requests = 0;
  const reply =
    'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: keep-alive\r\n\r\n{}';
  const sockets = new Set<Socket>();
  const server = createNetServer((socket) => {
    sockets.add(socket);
    connections += 1;
    const first = connections === 1;
    let answered = 0;
    socket.on('data', (d: Buffer) => {
      if (!d.toString('latin1').includes('\r\n\r\n')) return;
      // The first connection answers once, then drops the next request unanswered (a server closing an idle one).
      if (first && answered === 1) {
        socket.destroy();
        return;
      }
      answered += 1;
      requests += 1;
      socket.write(reply);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  t.after(() => {
    for (const socket of sockets) socket.destroy();
    server.close();
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/messages`;
  const fetch = nodeHttpFetch();
  const a = await fetch(url, init());
  assert.equal(await text(a.body), '{}');
  const b = await fetch(url, init());
  assert.equal(b.status, 200);
  assert.equal(await text(b.body), '{}');
  assert.equal(connections, 2, 'the second request was sent again on a new connection');
  assert.equal(requests, 2);
});

test('a whole-reply read undoes the encoding the upstream applied; the pass-through read hands the bytes on as they came', async (t) => {
  const json = JSON.stringify({ content: 'é '.repeat(200) });
  const { server, url } = await serve((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.end(gzipSync(json));
    });
  });
  t.after(() => server.close());
  const fetch = nodeHttpFetch();
  const decoded = await fetch(`${url}/v1/messages`, { ...init(), decode: true });
  assert.equal(await text(decoded.body), json);
  const raw = await fetch(`${url}/v1/messages`, init());
  const chunks: Uint8Array[] = [];
  for await (const chunk of raw.body ?? []) chunks.push(chunk);
  assert.deepEqual(Buffer.concat(chunks), gzipSync(json));
});

test('one fetch, many URLs: each call reaches the host, path and query of its own URL, past the parsed-URL bound', async (t) => {
  const seen: string[] = [];
  const a = await serve((req, res) => {
    req.resume();
    seen.push(`a ${req.url}`);
    res.end('{}');
  });
  const b = await serve((req, res) => {
    req.resume();
    seen.push(`b ${req.url}`);
    res.end('{}');
  });
  t.after(() => {
    a.server.close();
    b.server.close();
  });
  const fetch = nodeHttpFetch();
  const urls = Array.from({ length: 80 }, (_, i) => `${i % 2 === 0 ? a.url : b.url}/v1/m${i}?n=${i}`);
  // Every URL, then the first ones again once more than the bound of parsed URLs came between.
  const order = [...urls, ...urls.slice(0, 5), urls[79] as string];
  for (const url of order) await text((await fetch(url, init())).body);
  assert.deepEqual(
    seen,
    order.map((url) => `${url.startsWith(a.url) ? 'a' : 'b'} ${url.slice(a.url.length)}`),
  );
  // A URL of another protocol is refused each time it is asked for, never remembered as a target.
  for (let i = 0; i < 2; i++) await assert.rejects(fetch('ftp://127.0.0.1/x', init()), /unsupported protocol/);
});
