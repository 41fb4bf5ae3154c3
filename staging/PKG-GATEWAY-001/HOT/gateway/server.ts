import type { GatewayRouting } from './routing.js';
import { randomUUID } from 'node:crypto';
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { CpError, show } from '#kernel/errors.js';
import { parseJsonBounded } from '#kernel/json-depth.js';
import type { WireProvider } from '#providers/wire/spec.js';
import { METRICS_SCOPE } from '#router/auth.js';
import type { Router } from '#router/router.js';
import type { IncomingCall } from './call.js';
import { handleGeneration } from './generation.js';
import { handlePassThrough } from './pass-through.js';
import { ADMIN_KEYS_PATH, type KeyAdminRoutes } from './admin-keys.js';
import type { UpstreamCounts } from './input-counts.js';
import { answerClientError, noteResponding } from './client-error.js';
import { readBody, sendJson, unreadableBody } from './http-io.js';
import type { ConsoleRoutes } from './console/routes.js';
import { identify, type Identity } from './identity.js';
import type { RequestLog } from './log.js';
import { CONTENT_TYPE } from './metrics/exposition.js';
import { operatorAuthorised } from './operator-auth.js';
import { failer, type Fail, type Handler, type Incoming, refuser, requestLog } from './incoming.js';
import { Targets } from './targets.js';
import { endpointFor, errorBody, familyOf, requestIdHeader, type Endpoint, type Family } from './surfaces.js';

export interface GatewayOptions {
  router: Router;
  /** Wire providers by family (`anthropic`, `openai`, `gemini`); a family without one answers 503. */
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
  /** Model aliases over deployments (gateway/routing.ts); absent: each family's one upstream. */
  routing?: GatewayRouting | null;
  /** The Prometheus exposition at GET /metrics (a `metrics:read` key); absent: that path is 404 like any other. */
  metrics?: { render(): Promise<string> };
  /** Told of each request before it is handled (its trace context; its response's close ends its span). */
  traces?: { inbound(requestId: string, headers: IncomingHttpHeaders, response: ServerResponse): void };
  /** Input counts by the upstream's count endpoint for reservations (gateway.count_input_tokens); absent: none. */
  inputCounts?: UpstreamCounts | null;
  /** The key admin API under /admin/keys (a `keys:admin` key); absent: those paths are 404 like any other. */
  keyAdmin?: KeyAdminRoutes;
}

interface InFlight {
  abort(): void;
  done: Promise<void>;
}

/**
 * `cplane serve`: node:http, no framework (the overhead budget is sub-millisecond and it adds no dependency
 * to the governed runtime). Every provider call goes through the router's pipeline (generation.ts, pass-through.ts).
 */
export class Gateway {
  readonly server: Server;
  private readonly inFlight = new Set<InFlight>();
  private draining = false;
  private readonly targets: Targets;

  constructor(private readonly options: GatewayOptions) {
    this.targets = new Targets(options.providers);
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
    noteResponding(req.socket, res);
    const controller = new AbortController();
    const entry: InFlight = { abort: () => controller.abort(), done: Promise.resolve() };
    const requestId = `req_${randomUUID().replace(/-/g, '')}`;
    this.options.traces?.inbound(requestId, req.headers, res);
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
        sendJson(res, 500, errorBody(family, 'api_error', `internal error (request ${requestId})`, requestId, 500), {
          [requestIdHeader(family)]: requestId,
          'x-should-retry': 'false',
        });
      })
      .finally(() => {
        this.inFlight.delete(entry);
      });
    this.inFlight.add(entry);
  }

  /**
   * Route → handler: the gateway's own paths by exact method and path, the console under its prefix, and every
   * other request to the provider APIs (which answer a path they do not serve with a 404 in the client's shape).
   */
  private readonly exact: ReadonlyMap<string, Handler> = new Map<string, Handler>([
    ['GET /healthz', (incoming) => sendJson(incoming.res, 200, { status: 'ok' })],
    ['GET /readyz', (incoming) => this.readiness(incoming)],
    ['GET /metrics', (incoming) => this.scrape(incoming)],
  ]);

  private readonly console: Handler = (incoming) =>
    this.options.console?.handle(incoming.req, incoming.res, incoming.path, incoming.search);

  private readonly api: Handler = (incoming) => this.apiCall(incoming);

  private readonly keyAdmin: Handler = (incoming) => this.options.keyAdmin?.handle(incoming);

  private handlerFor(method: string, path: string): Handler {
    const exact = this.exact.get(`${method} ${path}`);
    if (exact !== undefined) return exact;
    if (this.options.console !== undefined && (path === '/console' || path.startsWith('/console/')))
      return this.console;
    if (this.options.keyAdmin !== undefined && (path === ADMIN_KEYS_PATH || path.startsWith(`${ADMIN_KEYS_PATH}/`)))
      return this.keyAdmin;
    return this.api;
  }

  private async handle(
    req: IncomingMessage,
    res: ServerResponse,
    controller: AbortController,
    requestId: string,
  ): Promise<void> {
    const incoming = this.incoming(req, res, controller, requestId);
    await this.handlerFor(incoming.method, incoming.path)(incoming);
  }

  /** The request as the handlers see it, its log written when the response closes (a client gone aborts the call). */
  private incoming(
    req: IncomingMessage,
    res: ServerResponse,
    controller: AbortController,
    requestId: string,
  ): Incoming {
    const started = performance.now();
    const method = req.method ?? 'GET';
    const [path = '/', search = ''] = (req.url ?? '/').split('?', 2);
    const log = requestLog(method, path, requestId);
    res.on('close', () => {
      if (!res.writableFinished) controller.abort();
      log.status = res.statusCode;
      log.ms = Math.round((performance.now() - started) * 10) / 10;
      this.options.log(log);
    });
    return { req, res, signal: controller.signal, requestId, started, method, path, search, log };
  }

  private readiness({ res }: Incoming): void {
    const problem = this.options.ready();
    sendJson(
      res,
      problem === null ? 200 : 503,
      problem === null ? { status: 'ready' } : { status: 'not_ready', problem },
    );
  }

  private async scrape(incoming: Incoming): Promise<void> {
    const { req, res } = incoming;
    const { metrics } = this.options;
    if (metrics === undefined) return this.apiCall(incoming);
    if (!operatorAuthorised(this.options.router, req, res, METRICS_SCOPE)) return;
    const text = await metrics.render();
    if (res.headersSent || res.destroyed) return;
    res.writeHead(200, { 'content-type': CONTENT_TYPE, 'content-length': String(Buffer.byteLength(text)) });
    res.end(text);
  }

  /**
   * A provider API call: endpoint → upstream → identity → body → the surface's handler (generation.ts,
   * pass-through.ts) → checkpoint.
   */
  private async apiCall(incoming: Incoming): Promise<void> {
    const { req, path, method, log } = incoming;
    const anthropicVersion = typeof req.headers['anthropic-version'] === 'string';
    const endpoint = endpointFor(method, path, anthropicVersion);
    const fail = failer(incoming);
    if (endpoint === null) {
      req.resume();
      const where = JSON.stringify(path).slice(0, 200);
      return fail(familyOf(path, anthropicVersion), 404, 'not_found', `no endpoint ${method} ${where}`);
    }
    log.surface = endpoint.surface;
    if (endpoint.surface === 'gemini.stream' && new URLSearchParams(incoming.search).get('alt') !== 'sse') {
      req.resume();
      return fail(
        'gemini',
        400,
        'invalid_request',
        'streamGenerateContent is served as server-sent events only: add ?alt=sse',
      );
    }
    const provider = this.upstreamFor(incoming, endpoint, fail);
    if (provider === undefined) return;
    const identity = identify(req.headers, endpoint.family === 'gemini' ? { search: incoming.search } : undefined);
    log.session = identity.session;
    log.agent = identity.agent || null;
    const read = await this.readJson(incoming, endpoint, identity, fail);
    if (read === null) return;
    const ctx = this.callContext(incoming, endpoint, provider, identity, read, fail);
    await (endpoint.generation ? handleGeneration(ctx) : handlePassThrough(ctx));
    if (log.exchange_id !== null && this.options.afterExchange) {
      // Awaited inside the request's handling, so a drain waits for a checkpoint being written.
      const problem = await this.options.afterExchange();
      if (problem !== null) process.stderr.write(`cplane serve: warning: ${problem}\n`);
    }
  }

  /**
   * The upstream for the endpoint's family; undefined once the refusal is sent (draining, none configured). A
   * generation may be served by another family (its model decides, targets.ts): its family may have none.
   */
  private upstreamFor(incoming: Incoming, endpoint: Endpoint, fail: Fail): WireProvider | null | undefined {
    const { family } = endpoint;
    if (this.draining) {
      incoming.req.resume();
      fail(family, 503, 'unavailable', 'the gateway is shutting down', { connection: 'close' });
      return undefined;
    }
    const provider = this.options.providers.get(family);
    if (provider === undefined && !endpoint.generation) {
      incoming.req.resume();
      fail(family, 503, 'api_error', `no ${family} upstream is configured on this gateway`);
      return undefined;
    }
    return provider ?? null;
  }

  /** A POST's body read (bounded) and parsed; a GET has none. Null once the refusal is sent. */
  private async readJson(
    incoming: Incoming,
    endpoint: Endpoint,
    identity: Identity,
    fail: Fail,
  ): Promise<{ body: unknown; bytes: Buffer } | null> {
    if (endpoint.method !== 'POST') return { body: null, bytes: Buffer.alloc(0) };
    const { req } = incoming;
    const { family } = endpoint;
    const unreadable = unreadableBody(req.headers);
    if (unreadable !== null) {
      req.resume();
      const message = `the request body is refused: ${unreadable}`;
      fail(family, 415, 'invalid_request', message, { connection: 'close' });
      return null;
    }
    const read = await readBody(req, this.options.bodyLimitBytes);
    if (!read.ok) {
      if (read.reason !== 'aborted')
        fail(family, 413, 'too_large', `the request body is over ${this.options.bodyLimitBytes} bytes`, {
          connection: 'close',
        });
      return null;
    }
    try {
      return { body: parseJsonBounded(read.bytes.toString('utf8')), bytes: read.bytes };
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
      fail(family, 400, 'invalid_request', message);
      return null;
    }
  }

  private callContext(
    incoming: Incoming,
    endpoint: Endpoint,
    provider: WireProvider | null,
    identity: Identity,
    read: { body: unknown; bytes: Buffer },
    fail: Fail,
  ): IncomingCall {
    const { callDeadlineMs } = this.options;
    return {
      router: this.options.router,
      provider,
      targets: this.targets,
      routing: this.options.routing ?? null,
      endpoint,
      identity,
      body: read.body,
      bytes: read.bytes,
      search: incoming.search,
      requestId: incoming.requestId,
      req: incoming.req,
      res: incoming.res,
      signal: incoming.signal,
      log: incoming.log,
      upstreamTimeoutMs: this.options.upstreamTimeoutMs,
      inputCounts: this.options.inputCounts ?? null,
      deadline: callDeadlineMs === undefined ? null : { ms: callDeadlineMs, at: incoming.started + callDeadlineMs },
      refuse: refuser(incoming, endpoint.family),
      fail,
    };
  }
}
