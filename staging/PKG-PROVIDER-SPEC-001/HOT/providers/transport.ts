import { type ClientRequest, Agent as HttpAgent, type IncomingMessage, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { PassThrough, addAbortSignal } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';

/** The headers of a reply, as the wire path reads them (a fetch Response's Headers is one). */
export interface ReplyHeaders {
  get(name: string): string | null;
}

/** An upstream reply: a fetch Response satisfies this, so tests can inject fetch. */
export interface WireHttpReply {
  status: number;
  headers: ReplyHeaders;
  body: AsyncIterable<Uint8Array> | null;
}

export interface WireInit {
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  signal: AbortSignal;
  redirect: 'error';
  /**
   * Undo a content-encoding the upstream applied (gzip, deflate, br), as fetch does: the whole-reply path reads the
   * body itself. The pass-through path leaves it unset and hands the bytes on as they came.
   */
  decode?: boolean;
}

export type WireFetch = (url: string, init: WireInit) => Promise<WireHttpReply>;

class IncomingHeaders implements ReplyHeaders {
  constructor(private readonly message: IncomingMessage) {}
  get(name: string): string | null {
    const value = this.message.headers[name.toLowerCase()];
    if (value === undefined) return null;
    return Array.isArray(value) ? value.join(', ') : value;
  }
}

/** The reply's body, decoded when asked and the upstream said how it is encoded; a broken encoding fails the read. */
function bodyOf(message: IncomingMessage, decode: boolean): AsyncIterable<Uint8Array> {
  if (!decode) return message;
  const encoding = (message.headers['content-encoding'] ?? '').trim().toLowerCase();
  const decoder =
    encoding === 'gzip' || encoding === 'x-gzip'
      ? createGunzip()
      : encoding === 'deflate'
        ? createInflate()
        : encoding === 'br'
          ? createBrotliDecompress()
          : null;
  if (decoder === null) return message;
  message.on('error', (error) => decoder.destroy(error));
  return message.pipe(decoder);
}

/**
 * Node's own AbortError class (not exported): the error node:http destroys a request with when its `signal` option
 * fires, taken from a stream node aborted, so an abort here throws what node's option would.
 */
const NodeAbortError = ((): (new (message?: string, options?: { cause?: unknown }) => Error) => {
  const probe = new PassThrough();
  probe.on('error', () => {});
  addAbortSignal(AbortSignal.abort(), probe);
  return (probe.errored as Error).constructor as new (
    message?: string,
    options?: { cause?: unknown },
  ) => Error;
})();

/**
 * What node:http does with a request's `signal` option — the request destroyed with node's AbortError (message
 * 'The operation was aborted', code ABORT_ERR, cause the signal's reason) when the signal fires, at once if it has —
 * through one listener dropped when the request closes, where node's option also sets an end-of-stream watcher on
 * every request (listeners on its events, a null-prototype copy of the options): ~18K instructions a call.
 */
function abortedBy(signal: AbortSignal, req: ClientRequest): void {
  const onAbort = (): void => {
    req.destroy(new NodeAbortError(undefined, { cause: signal.reason }));
  };
  if (signal.aborted) {
    onAbort();
    return;
  }
  signal.addEventListener('abort', onAbort, { once: true });
  req.once('close', () => signal.removeEventListener('abort', onAbort));
}

/** Where a URL sends a request, as node:http takes it. */
interface Target {
  secure: boolean;
  protocol: string;
  hostname: string;
  port: string;
  path: string;
}

/** URLs parsed per fetch: a provider calls the same few URLs, so the cache stays at their number. */
const MAX_TARGETS = 64;

/** A URL's target, parsed once (a WHATWG URL parse per call otherwise); a URL of another protocol is refused. */
function targets(): (url: string) => Target | TypeError {
  const parsed = new Map<string, Target>();
  return (url) => {
    const known = parsed.get(url);
    if (known !== undefined) return known;
    const target = new URL(url);
    const secure = target.protocol === 'https:';
    if (!secure && target.protocol !== 'http:') return new TypeError(`unsupported protocol ${target.protocol}`);
    const hostname = target.hostname.startsWith('[') ? target.hostname.slice(1, -1) : target.hostname;
    const made = {
      secure,
      protocol: target.protocol,
      hostname,
      port: target.port,
      path: `${target.pathname}${target.search}`,
    };
    // The oldest out first (a Map keeps insertion order): O(1), and only a caller of many distinct URLs pays it.
    if (parsed.size >= MAX_TARGETS) parsed.delete(parsed.keys().next().value as string);
    parsed.set(url, made);
    return made;
  };
}

/**
 * Every upstream call over node:http(s) with keep-alive connections of its own: a round trip costs a
 * fraction of fetch's (no WHATWG stream or Response machinery on the hot path). Redirects are never followed (a 3xx
 * is a failed reply, so a key is never replayed to another host), no accept-encoding is sent and nothing is
 * decompressed unless the caller asks (`decode`), and the caller's signal aborts the request and its body.
 */
export function nodeHttpFetch(): WireFetch {
  const agents = {
    'http:': new HttpAgent({ keepAlive: true, scheduling: 'lifo' }),
    'https:': new HttpsAgent({ keepAlive: true, scheduling: 'lifo' }),
  };
  const targetOf = targets();
  return (url, init) =>
    new Promise((resolve, reject) => {
      const target = targetOf(url);
      if (target instanceof TypeError) {
        reject(target);
        return;
      }
      const { secure } = target;
      const headers: Record<string, string> = { ...init.headers };
      if (init.body !== undefined) headers['content-length'] = String(Buffer.byteLength(init.body));
      const options = {
        agent: secure ? agents['https:'] : agents['http:'],
        protocol: target.protocol,
        hostname: target.hostname,
        port: target.port,
        path: target.path,
        method: init.method,
        headers,
      };
      const send = (retry: boolean): void => {
        const req = (secure ? httpsRequest : httpRequest)(options, (message) => {
          resolve({
            status: message.statusCode ?? 0,
            headers: new IncomingHeaders(message),
            body: bodyOf(message, init.decode === true),
          });
        });
        abortedBy(init.signal, req);
        req.once('error', (error: NodeJS.ErrnoException) => {
          // A kept-alive connection the server closed as idle just as it was reused: the request never reached
          // it, so it is sent once more on a new connection (node's documented remedy), not counted as a failure.
          if (
            retry &&
            req.reusedSocket &&
            (error.code === 'ECONNRESET' || error.code === 'EPIPE') &&
            !init.signal.aborted
          )
            send(false);
          else reject(error);
        });
        req.end(init.body);
      };
      send(true);
    });
}
