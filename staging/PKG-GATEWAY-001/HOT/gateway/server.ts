import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { performance } from 'node:perf_hooks';
import { CpError, show } from '#kernel/errors.js';
import { parseJsonBounded } from '#kernel/json-depth.js';
import type { WireProvider } from '#providers/wire/spec.js';
import type { Router } from '#router/router.js';
import { handleGeneration, handlePassThrough, type CallContext } from './call.js';
import { readBody, sendJson, unreadableBody } from './http-io.js';
import type { ConsoleRoutes } from './console/routes.js';
import { identify } from './identity.js';
import type { RequestLog } from './log.js';
import { refusalFor } from './refusals.js';
import { endpointFor, errorBody, familyOf, requestIdHeader, type ErrorKind, type Family } from './surfaces.js';

export interface GatewayOptions {
  router: Router;
  /** Wire providers by family (`anthropic`, `openai`); a family without one answers 503. */
  providers: ReadonlyMap<Family, WireProvider>;
  bodyLimitBytes: number;
  drainTimeoutMs: number;
  /** Client connections open at once; one more is closed as it arrives. */
  maxConnections: number;
  /** Deadlines for a client to send its request headers, and its whole request. */
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  /** Runs after each generation whose EXCHANGE is recorded (the periodic checkpoint); a text is logged. */
  afterExchange?: () => string | null | Promise<string | null>;
  /** Deadline for an upstream reply's headers, and for each chunk after them. */
  upstreamTimeoutMs: number;
  /** The longest one call may take upstream in all, its reply and retries included; absent: none. */
  callDeadlineMs?: number;
  log: (entry: RequestLog) => void;
  /** Null when the ledger and the budget store are open and writable, else what is wrong. */
  ready: () => string | null;
  /** The read-only console at /console/ (absent: those paths are 404 like any other). */
  console?: ConsoleRoutes;
}

/** The latest response on each connection, so a parse error on it knows whether one is being written. */
const responding = new WeakMap<Duplex, ServerResponse>();

/** Node's own answers to a request it could not parse, each with the status node gives it. */
const CLIENT_ERRORS: Readonly<Record<string, [status: number, reason: string, what: string]>> = {
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', 'its headers are over the size limit'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'it was not received within the request deadline'],
};

/**
 * A request node refused before the gateway saw it (malformed framing, both Content-Length and
 * Transfer-Encoding, headers too large, too slow) is answered with a JSON error body both SDKs parse (node's
 * own answer has none), then the connection is closed. Which API the client speaks is unknown here: the
 * body is Anthropic's shape, whose `error.message` the OpenAI SDK reads too.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  // A response already begun on this connection cannot be followed by another one.
  const current = responding.get(socket);
  const begun = current !== undefined && current.headersSent && !current.writableFinished;
  if (error.code === 'ECONNRESET' || !socket.writable || begun) {
    socket.destroy();
    return;
  }
  const [status, reason, what] = CLIENT_ERRORS[error.code ?? ''] ?? [
    400,
    'Bad Request',
    `it is not well-formed HTTP/1.1 (${error.code ?? 'unknown'})`,
  ];
  const body = JSON.stringify({
    type: 'error',
    error: { type: 'invalid_request_error', message: `the request is refused: ${what}`, param: null, code: null },
  });
  // A client too slow to send its request may well manage on a retry; a malformed one never will.
  const retry = status === 408 ? '' : 'x-should-retry: false\r\n';
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
      `${retry}connection: close\r\n\r\n${body}`,
    () => socket.destroy(),
  );
}

interface InFlight {
  abort(): void;
  done: Promise<void>;
}

/**
 * `cplane serve`: node:http, no framework (the overhead budget is sub-millisecond and it adds no dependency
 * to the governed runtime). Every generation goes through the router's pipeline (call.ts).
 */
export class Gateway {
  readonly server: Server;
  private readonly inFlight = new Set<InFlight>();
  private draining = false;

  constructor(private readonly options: GatewayOptions) {
    this.server = createServer({ keepAlive: true, connectionsCheckingInterval: 1000 }, (req, res) => {
      this.track(req, res);
    });
    // Longer than clients keep idle sockets (undici: the server's hint less 1 s), so a client never sends a request
    // on a socket the gateway is closing at that moment; the drain closes idle sockets itself.
    this.server.keepAliveTimeout = 65_000;
    // Slow clients (slowloris, a body dripped a byte a minute) are cut off, checked every second; a client that
    // opens connections without end is held to maxConnections, so the gateway keeps its descriptors.
    this.server.requestTimeout = options.requestTimeoutMs;
    this.server.headersTimeout = options.headersTimeoutMs;
    this.server.maxConnections = options.maxConnections;
    this.server.on('clientError', answerClientError);
    // A body declared over the limit is refused before the client sends it: node's default would invite it to.
    this.server.on('checkContinue', (req, res) => {
      const declared = Number(req.headers['content-length'] ?? Number.NaN);
      if (!(declared > options.bodyLimitBytes)) res.writeContinue();
      this.track(req, res);
    });
  }

  listen(host: string, port: number): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      this.server.once('error', (error: NodeJS.ErrnoException) => {
        reject(
          new CpError(
            'ERR_SERVE_LISTEN',
            `cannot listen on ${show(host)} port ${port}: ${error.code ?? error.message}`,
            {
              hint: 'another process holds the port (pick another --port, or 0 for any), or --host is not an address here',
              details: { host, port, errno: error.code ?? null },
              cause: error,
            },
          ),
        );
      });
      this.server.listen(port, host, () => {
        this.server.removeAllListeners('error');
        resolve(this.server.address() as AddressInfo);
      });
    });
  }

  /**
   * Stop accepting, let calls in flight finish within the drain timeout, cancel the rest (each still writes its
   * EXCHANGE), then resolve. The caller closes the router (ledger, budget, breaker state) after this.
   */
  async drain(): Promise<{ finished: number; cancelled: number }> {
    this.draining = true;
    const closed = new Promise<void>((resolve) => {
      this.server.close(() => resolve());
    });
    this.server.closeIdleConnections();
    const pending = [...this.inFlight];
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.options.drainTimeoutMs);
    });
    const all = Promise.all(pending.map((f) => f.done)).then(() => 'done' as const);
    const first = await Promise.race([all, timedOut]);
    clearTimeout(timer);
    let cancelled = 0;
    if (first === 'timeout') {
      const rest = [...this.inFlight];
      cancelled = rest.length;
      for (const call of rest) call.abort();
      await Promise.all(rest.map((f) => f.done));
    }
    this.server.closeAllConnections();
    await closed;
    return { finished: pending.length - cancelled, cancelled };
  }

  private track(req: IncomingMessage, res: ServerResponse): void {
    responding.set(req.socket, res);
    const controller = new AbortController();
    const entry: InFlight = { abort: () => controller.abort(), done: Promise.resolve() };
    const requestId = `req_${randomUUID().replace(/-/g, '')}`;
    entry.done = this.handle(req, res, controller, requestId)
      .catch((error: unknown) => {
        process.stderr.write(
          `cplane serve: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
        );
        if (res.headersSent) {
          res.destroy();
          return;
        }
        // In the client's own API shape, or its SDK reads no message; not retried, since the call may have gone upstream.
        const family = familyOf(
          (req.url ?? '/').split('?', 1)[0] ?? '/',
          typeof req.headers['anthropic-version'] === 'string',
        );
        sendJson(res, 500, errorBody(family, 'api_error', `internal error (request ${requestId})`, requestId), {
          [requestIdHeader(family)]: requestId,
          'x-should-retry': 'false',
        });
      })
      .finally(() => {
        this.inFlight.delete(entry);
      });
    this.inFlight.add(entry);
  }

  private async handle(
    req: IncomingMessage,
    res: ServerResponse,
    controller: AbortController,
    requestId: string,
  ): Promise<void> {
    const started = performance.now();
    const method = req.method ?? 'GET';
    const [path = '/', search = ''] = (req.url ?? '/').split('?', 2);
    const log: RequestLog = {
      ts: new Date().toISOString(),
      method,
      path,
      status: 0,
      surface: null,
      model: null,
      session: null,
      agent: null,
      request_id: requestId,
      exchange_id: null,
      outcome: null,
      input_tokens: null,
      output_tokens: null,
      cache_read_tokens: null,
      cache_write_tokens: null,
      cost: null,
      ms: 0,
    };
    res.on('close', () => {
      if (!res.writableFinished) controller.abort();
      log.status = res.statusCode;
      log.ms = Math.round((performance.now() - started) * 10) / 10;
      this.options.log(log);
    });
    if (method === 'GET' && path === '/healthz') return sendJson(res, 200, { status: 'ok' });
    if (method === 'GET' && path === '/readyz') {
      const problem = this.options.ready();
      return sendJson(
        res,
        problem === null ? 200 : 503,
        problem === null ? { status: 'ready' } : { status: 'not_ready', problem },
      );
    }
    if (this.options.console !== undefined && (path === '/console' || path.startsWith('/console/')))
      return this.options.console.handle(req, res, path, search);
    const anthropicVersion = typeof req.headers['anthropic-version'] === 'string';
    const endpoint = endpointFor(method, path, anthropicVersion);
    const fail = (
      family: Family,
      status: number,
      kind: ErrorKind,
      message: string,
      extra: Record<string, string> = {},
    ): void => {
      sendJson(res, status, errorBody(family, kind, message, requestId), {
        [requestIdHeader(family)]: requestId,
        'x-should-retry': 'false',
        ...extra,
      });
    };
    if (endpoint === null) {
      req.resume();
      return fail(
        familyOf(path, anthropicVersion),
        404,
        'not_found',
        `no endpoint ${method} ${JSON.stringify(path).slice(0, 200)}`,
      );
    }
    log.surface = endpoint.surface;
    const { family } = endpoint;
    if (this.draining) {
      req.resume();
      return fail(family, 503, 'unavailable', 'the gateway is shutting down', { connection: 'close' });
    }
    const provider = this.options.providers.get(family);
    if (provider === undefined) {
      req.resume();
      return fail(family, 503, 'api_error', `no ${family} upstream is configured on this gateway`);
    }
    const identity = identify(req.headers);
    log.session = identity.session;
    log.agent = identity.agent || null;
    let body: unknown = null;
    let bytes: Buffer = Buffer.alloc(0);
    if (endpoint.method === 'POST') {
      const unreadable = unreadableBody(req.headers);
      if (unreadable !== null) {
        req.resume();
        return fail(family, 415, 'invalid_request', `the request body is refused: ${unreadable}`, {
          connection: 'close',
        });
      }
      const read = await readBody(req, this.options.bodyLimitBytes);
      if (!read.ok) {
        if (read.reason === 'aborted') return;
        return fail(family, 413, 'too_large', `the request body is over ${this.options.bodyLimitBytes} bytes`, {
          connection: 'close',
        });
      }
      bytes = read.bytes;
      try {
        body = parseJsonBounded(bytes.toString('utf8'));
      } catch (error) {
        const message =
          error instanceof RangeError
            ? `the request body is refused: ${error.message}`
            : `the request body is not JSON: ${error instanceof Error ? error.message : String(error)}`;
        await this.options.router.recordRefusal(
          {
            contract_id: endpoint.surface,
            agent_id: identity.agent,
            session_id: identity.session,
            ...(identity.token === null ? {} : { auth_token: identity.token }),
          },
          'VALIDATION_FAILED',
          message,
        );
        return fail(family, 400, 'invalid_request', message);
      }
    }
    const ctx: CallContext = {
      router: this.options.router,
      provider,
      endpoint,
      identity,
      body,
      bytes,
      search,
      requestId,
      req,
      res,
      signal: controller.signal,
      log,
      upstreamTimeoutMs: this.options.upstreamTimeoutMs,
      deadline:
        this.options.callDeadlineMs === undefined
          ? null
          : { ms: this.options.callDeadlineMs, at: started + this.options.callDeadlineMs },
      refuse: (code, message, retryAfterMs) => {
        const refusal = refusalFor(code);
        const headers: Record<string, string> = { [requestIdHeader(family)]: requestId };
        if (refusal.noRetry) headers['x-should-retry'] = 'false';
        if (retryAfterMs !== null && retryAfterMs !== undefined)
          headers['retry-after'] = String(Math.ceil(retryAfterMs / 1000));
        log.outcome = 'rejected';
        sendJson(res, refusal.status, errorBody(family, refusal.kind, `${code}: ${message}`, requestId), headers);
      },
      fail,
    };
    if (endpoint.generation) await handleGeneration(ctx);
    else await handlePassThrough(ctx);
    if (log.exchange_id !== null && this.options.afterExchange) {
      // Awaited inside the request's handling, so a drain waits for a checkpoint being written.
      const problem = await this.options.afterExchange();
      if (problem !== null) process.stderr.write(`cplane serve: warning: ${problem}\n`);
    }
  }
}
