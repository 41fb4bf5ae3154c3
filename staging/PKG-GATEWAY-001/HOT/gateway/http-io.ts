import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';

export type BodyRead = { ok: true; bytes: Buffer } | { ok: false; reason: 'too_large' | 'aborted' };

/** The request body, refused past `limit` bytes (a declared length over it is refused before reading). */
export function readBody(req: IncomingMessage, limit: number): Promise<BodyRead> {
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    return Promise.resolve({ ok: false, reason: 'too_large' });
  }
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const finish = (result: BodyRead): void => {
      if (settled) return;
      settled = true;
      resolve(result);
    };
    req.on('data', (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > limit) {
        req.pause();
        finish({ ok: false, reason: 'too_large' });
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => finish({ ok: true, bytes: Buffer.concat(chunks, size) }));
    req.on('error', () => finish({ ok: false, reason: 'aborted' }));
    req.on('close', () => finish({ ok: false, reason: 'aborted' }));
  });
}

/**
 * Why a request body cannot be read as the JSON it claims to be, or null. The body is parsed as UTF-8 and
 * forwarded re-serialised: a compressed body would be refused as "not JSON" only when its bytes happen not to
 * parse, and one in another charset would reach the upstream silently altered (its bytes turned into U+FFFD).
 */
export function unreadableBody(headers: IncomingHttpHeaders): string | null {
  const encoding = headers['content-encoding'];
  if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity')
    return `content-encoding ${JSON.stringify(encoding).slice(0, 100)} is not accepted; send the body uncompressed`;
  const charset = /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(headers['content-type'] ?? '')?.[1];
  if (charset !== undefined && !/^(utf-?8|(us-)?ascii)$/i.test(charset))
    return `content-type charset ${JSON.stringify(charset).slice(0, 100)} is not accepted; JSON bodies are UTF-8`;
  return null;
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
    ...headers,
  });
  res.end(text);
}

export interface WriteOptions {
  /** The call's end (the client gone, or the drain giving up on it): a write waiting for the client stops waiting. */
  signal: AbortSignal;
  /** Longest wait for a client to take a write; past it the client is treated as gone and its socket destroyed. */
  stallMs: number;
}

/**
 * Write to a response, resolving when the bytes are handed to the socket (or at once when it is gone). A client
 * that stops reading but keeps its socket open is not waited on for ever: the wait ends when the call is aborted,
 * or after `stallMs`, when the response is destroyed (resolving `true`: the client was given up on).
 */
export function write(res: ServerResponse, text: string | Uint8Array, options: WriteOptions): Promise<boolean> {
  if (res.destroyed || res.writableEnded) return Promise.resolve(false);
  if (res.write(text) || options.signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = (stalled: boolean): void => {
      clearTimeout(timer);
      res.off('drain', taken);
      res.off('close', taken);
      options.signal.removeEventListener('abort', taken);
      resolve(stalled);
    };
    const taken = (): void => done(false);
    const timer = setTimeout(() => {
      res.destroy();
      done(true);
    }, options.stallMs);
    res.once('drain', taken);
    res.once('close', taken);
    options.signal.addEventListener('abort', taken, { once: true });
  });
}

/**
 * Resolves once the writes made to responses so far have left for their sockets. Node corks a response's writes
 * until the next tick, and a tick waits for every pending promise continuation: a stream's frames written just
 * before its conclusion would otherwise reach the client only after that conclusion's synchronous (fsynced) commit.
 */
export function flushed(): Promise<void> {
  return new Promise((resolve) => process.nextTick(resolve));
}
