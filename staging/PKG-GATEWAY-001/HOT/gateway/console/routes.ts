import type { IncomingMessage, ServerResponse } from 'node:http';
import { isCpError } from '#kernel/errors.js';
import type { AuthResult } from '#router/auth.js';
import type { KeyView } from '#router/key-records.js';
import { readBody, sendJson } from '../http-io.js';
import type { ConsoleAssets } from './assets.js';
import type { ConsoleData } from './data.js';
import { CONSOLE_CSP, loginPage, shellPage } from './page.js';
import { consoleQuery, QueryError } from './query.js';

export const CONSOLE_COOKIE = 'cplane_console';

export interface ConsoleOptions {
  data: ConsoleData;
  assets: ConsoleAssets;
  /** The router's check of a console key (signature, expiry, scope console:read, revocation). */
  verify: (token: string) => AuthResult;
  /** The key inventory as the key admin API lists it (router/key-admin.ts listKeys); absent: no keys view. */
  keys?: () => Promise<KeyView[]>;
  clock?: () => number;
}

const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

/** The console key of a request: `Authorization: Bearer` (tools), else the sign-in cookie (browsers). */
export function consoleCredential(req: IncomingMessage): string | null {
  const auth = req.headers.authorization;
  const bearer = typeof auth === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(auth)?.[1] : undefined;
  if (bearer !== undefined) return bearer;
  const cookies = req.headers.cookie;
  if (typeof cookies !== 'string') return null;
  for (const part of cookies.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === CONSOLE_COOKIE) {
      const value = part.slice(eq + 1).trim();
      return value === '' ? null : value;
    }
  }
  return null;
}

/**
 * /console/*: read-only, behind a `console:read` key. Static assets are public (they are the package's bytes
 * and hold no data); the shell page and every /console/api/* answer need the key, else 401.
 */
export class ConsoleRoutes {
  constructor(private readonly options: ConsoleOptions) {}

  async handle(req: IncomingMessage, res: ServerResponse, path: string, search: string): Promise<void> {
    const method = req.method ?? 'GET';
    if (path === '/console') return this.redirect(res, '/console/');
    if (path.startsWith('/console/assets/') && (method === 'GET' || method === 'HEAD')) return this.asset(res, path);
    if (path === '/console/login' && method === 'POST') return this.login(req, res);
    if (path === '/console/logout' && method === 'POST') {
      req.resume();
      if (fromAnotherSite(req))
        return this.html(res, 403, loginPage('Sign-out is accepted only from this console’s own page.'));
      return this.redirect(res, '/console/', `${CONSOLE_COOKIE}=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0`);
    }
    req.resume();
    if (method !== 'GET' && method !== 'HEAD')
      return this.json(res, 405, problem('ERR_CONSOLE_QUERY', `${method} is not allowed here`));
    const token = consoleCredential(req);
    const result = token === null ? null : this.options.verify(token);
    if (result === null || !result.ok) {
      const why = result === null ? 'no console key' : `${result.code}: ${result.message}`;
      if (path.startsWith('/console/api/') || !acceptsHtml(req))
        return this.json(res, 401, problem('ERR_CONSOLE_UNAUTHORIZED', why), {
          'www-authenticate': 'Bearer realm="cplane console"',
        });
      return this.html(res, 401, loginPage(token === null ? null : `That key does not open the console (${why}).`));
    }
    if (path === '/console/') {
      if (!this.options.assets.ok)
        return this.html(res, 503, loginPage(`The console cannot start: ${this.options.assets.problem}`));
      return this.html(res, 200, shellPage({ proofs: this.options.data.proof !== undefined }));
    }
    if (path === '/console/api/proof') return this.proof(res, search);
    if (path.startsWith('/console/api/')) return this.api(res, path.slice('/console/api/'.length), search);
    return this.json(res, 404, problem('ERR_CONSOLE_QUERY', `no console page ${JSON.stringify(path).slice(0, 200)}`));
  }

  private async api(res: ServerResponse, name: string, search: string): Promise<void> {
    try {
      const [status, body] = await this.answer(name, consoleQuery(search));
      this.json(res, status, body);
    } catch (error) {
      // A shared store that cannot answer now: the console says so, as readyz does, rather than a 500.
      if (isCpError(error) && error.code === 'ERR_STORE_UNAVAILABLE')
        return this.json(res, 503, problem(error.code, error.message, error.hint));
      if (!(error instanceof QueryError)) throw error;
      this.json(res, 400, problem('ERR_CONSOLE_QUERY', error.message, error.hint));
    }
  }

  private async answer(name: string, q: ReturnType<typeof consoleQuery>): Promise<[number, unknown]> {
    const { data } = this.options;
    switch (name) {
      case 'root':
        return [200, await data.rootView({ verify: q.flag('verify') })];
      case 'sessions':
        return [
          200,
          await data.sessions({
            ...q.optional('agent', q.id),
            ...q.optional('since', q.time),
            ...q.optional('until', q.time),
            ...q.optional('before', q.seq),
            ...q.optional('limit', q.seq),
          }),
        ];
      case 'session':
        return [
          200,
          await data.session(q.required('id', q.id), { ...q.optional('after', q.seq), ...q.optional('limit', q.seq) }),
        ];
      case 'exchange': {
        const view = await data.exchange(q.required('id', q.id));
        return view === null ? [404, problem('ERR_CONSOLE_QUERY', 'no EXCHANGE with that id')] : [200, view];
      }
      case 'budgets':
        return [200, await data.budgets()];
      case 'breakers':
        return [200, await data.breakers()];
      case 'alerts':
        return [200, await data.alerts()];
      case 'plots':
        return [200, await data.plots()];
      case 'keys':
        if (this.options.keys === undefined)
          return [404, problem('ERR_CONSOLE_QUERY', 'this console has no key inventory (it is read by a gateway)')];
        // Each key's id, agent, scopes, budget, dates and spend: the inventory records never hold a token.
        return [200, { keys: await this.options.keys() }];
      default:
        return [404, problem('ERR_CONSOLE_QUERY', `no console API ${JSON.stringify(name).slice(0, 200)}`)];
    }
  }

  /** An inclusion proof file of one entry, as `cplane ledger prove --entry ID` writes it, as a download. */
  private async proof(res: ServerResponse, search: string): Promise<void> {
    const { data } = this.options;
    if (data.proof === undefined)
      return this.json(
        res,
        501,
        problem(
          'ERR_CONSOLE_QUERY',
          'inclusion proofs are not available on a PostgreSQL store',
          'the Merkle tree and `cplane ledger prove` read a SQLite ledger',
        ),
      );
    let id: string;
    try {
      const q = consoleQuery(search);
      id = q.required('id', q.id);
    } catch (error) {
      if (!(error instanceof QueryError)) throw error;
      return this.json(res, 400, problem('ERR_CONSOLE_QUERY', error.message, error.hint));
    }
    const proof = await data.proof(id);
    if (proof === null) return this.json(res, 404, problem('ERR_CONSOLE_QUERY', 'no entry with that id'));
    // Only letters, digits, `-` and `_` reach the header's quoted file name.
    const name = `${id.replace(/[^A-Za-z0-9_-]/g, '_')}.proof.json`;
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      'content-type': 'application/json; charset=utf-8',
      'content-disposition': `attachment; filename="${name}"`,
    });
    res.end(`${JSON.stringify(proof, null, 2)}\n`);
  }

  private async login(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // A sign-in posted from another site's page (login CSRF) is refused.
    if (fromAnotherSite(req)) {
      req.resume();
      return this.html(res, 403, loginPage('Sign-in is accepted only from this console’s own page.'));
    }
    const read = await readBody(req, 16 * 1024);
    if (!read.ok) return this.html(res, 413, loginPage('That request is too large.'));
    const key = new URLSearchParams(read.bytes.toString('utf8')).get('key')?.trim() ?? '';
    const result = key === '' ? null : this.options.verify(key);
    if (result === null || !result.ok) {
      const why = result === null ? 'no key was entered' : `${result.code}: ${result.message}`;
      return this.html(res, 401, loginPage(`That key does not open the console (${why}).`));
    }
    const now = Math.floor((this.options.clock ?? Date.now)() / 1000);
    const maxAge = Math.max(0, result.claims.exp - now);
    return this.redirect(
      res,
      '/console/',
      `${CONSOLE_COOKIE}=${key}; Path=/console; HttpOnly; SameSite=Strict; Max-Age=${maxAge}`,
    );
  }

  private asset(res: ServerResponse, path: string): void {
    const { assets } = this.options;
    const file = assets.ok ? assets.files.get(path.slice('/console/assets/'.length)) : undefined;
    if (file === undefined) {
      this.json(res, 404, problem('ERR_CONSOLE_QUERY', 'no such console asset'));
      return;
    }
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      'cache-control': 'no-cache',
      'content-type': file.type,
      'content-length': String(file.bytes.byteLength),
    });
    res.end(file.bytes);
  }

  private redirect(res: ServerResponse, location: string, cookie?: string): void {
    res.writeHead(303, { ...SECURITY_HEADERS, location, ...(cookie === undefined ? {} : { 'set-cookie': cookie }) });
    res.end();
  }

  private html(res: ServerResponse, status: number, body: string): void {
    res.writeHead(status, {
      ...SECURITY_HEADERS,
      'content-type': 'text/html; charset=utf-8',
      'content-length': String(Buffer.byteLength(body)),
    });
    res.end(body);
  }

  private json(res: ServerResponse, status: number, body: unknown, extra: Record<string, string> = {}): void {
    sendJson(res, status, body, { ...SECURITY_HEADERS, ...extra });
  }
}

/**
 * A form another site's page posted here. Browsers send Origin on POST, but "null" both from the console's own
 * page (its Referrer-Policy is no-referrer) and from a sandboxed frame or data: page anywhere; Sec-Fetch-Site,
 * which browsers set themselves, tells those apart.
 */
function fromAnotherSite(req: IncomingMessage): boolean {
  const origin = req.headers.origin;
  if (typeof origin === 'string' && origin !== 'null' && origin !== `http://${req.headers.host ?? ''}`) return true;
  const site = req.headers['sec-fetch-site'];
  return site === 'cross-site' || site === 'same-site';
}

function acceptsHtml(req: IncomingMessage): boolean {
  const accept = req.headers.accept;
  return typeof accept === 'string' && accept.includes('text/html');
}

function problem(
  code: string,
  message: string,
  hint?: string,
): { error: { code: string; message: string; hint?: string } } {
  return { error: { code, message, ...(hint === undefined ? {} : { hint }) } };
}
