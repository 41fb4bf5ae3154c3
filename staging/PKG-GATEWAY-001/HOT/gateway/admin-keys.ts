import { isCpError } from '#kernel/errors.js';
import { parseJsonBounded } from '#kernel/json-depth.js';
import { KEYS_ADMIN_SCOPE } from '#router/auth.js';
import {
  deleteKey,
  issueKey,
  type KeyAdminPorts,
  listKeys,
  parseGrace,
  parseKeyRequest,
  rotateKey,
} from '#router/key-admin.js';
import type { Router } from '#router/router.js';
import { readBody, sendJson } from './http-io.js';
import type { Incoming } from './incoming.js';
import { operatorAuthorised } from './operator-auth.js';

export const ADMIN_KEYS_PATH = '/admin/keys';
/** A key request is a few hundred bytes; anything much larger is not one. */
const BODY_LIMIT = 64 * 1024;
const KEY_PATH = /^\/admin\/keys\/([A-Za-z0-9_:-]{1,80})(\/rotate)?$/;
/** An answer holding a key must not be kept by a cache between the operator and the gateway. */
const NO_STORE = { 'cache-control': 'no-store' };

/** Coded refusals of the key operations, by HTTP status; any other error is the server's (a 500 or a 503). */
const STATUS: Readonly<Record<string, number>> = {
  ERR_KEY_REQUEST_INVALID: 400,
  ERR_TOKEN_INVALID: 400,
  ERR_KEY_UNKNOWN: 404,
  ERR_AUTH_NO_SECRET: 503,
  ERR_STORE_UNAVAILABLE: 503,
};

/**
 * The key admin API (scope `keys:admin`): POST /admin/keys issues, GET lists, POST /admin/keys/{id}/rotate
 * rotates with a grace period, DELETE /admin/keys/{id} revokes (router/key-admin.ts does the work, on either store).
 */
export class KeyAdminRoutes {
  constructor(
    private readonly router: Router,
    private readonly ports: KeyAdminPorts,
  ) {}

  async handle(incoming: Incoming): Promise<void> {
    const { req, res, method, path } = incoming;
    if (!operatorAuthorised(this.router, req, res, KEYS_ADMIN_SCOPE)) return;
    try {
      await this.route(incoming, method, path);
    } catch (error) {
      const status = isCpError(error) ? STATUS[error.code] : undefined;
      if (!isCpError(error) || status === undefined) throw error;
      req.resume();
      sendJson(res, status, { error: { code: error.code, message: error.message, hint: error.hint ?? null } });
    }
  }

  private async route(incoming: Incoming, method: string, path: string): Promise<void> {
    const { res } = incoming;
    if (path === ADMIN_KEYS_PATH) {
      if (method === 'GET') return sendJson(res, 200, { keys: await listKeys(this.ports) });
      if (method === 'POST') {
        const body = await this.body(incoming);
        if (body === undefined) return;
        return sendJson(res, 201, await issueKey(this.ports, parseKeyRequest(body)), NO_STORE);
      }
      return this.notAllowed(incoming, 'GET, POST');
    }
    const match = KEY_PATH.exec(path);
    const keyId = match?.[1];
    if (keyId === undefined) {
      incoming.req.resume();
      return sendJson(res, 404, { error: { code: 'not_found', message: 'no such key admin path' } });
    }
    if (match?.[2] !== undefined) {
      if (method !== 'POST') return this.notAllowed(incoming, 'POST');
      const body = await this.body(incoming);
      if (body === undefined) return;
      return sendJson(res, 200, await rotateKey(this.ports, keyId, parseGrace(body)), NO_STORE);
    }
    if (method !== 'DELETE') return this.notAllowed(incoming, 'DELETE');
    incoming.req.resume();
    return sendJson(res, 200, await deleteKey(this.ports, keyId, null));
  }

  /** The JSON body (an empty one is `{}`); undefined once a refusal is sent. */
  private async body(incoming: Incoming): Promise<unknown> {
    const read = await readBody(incoming.req, BODY_LIMIT);
    if (!read.ok) {
      if (read.reason === 'too_large')
        sendJson(incoming.res, 413, { error: { code: 'too_large', message: `the body is over ${BODY_LIMIT} bytes` } });
      return undefined;
    }
    if (read.bytes.length === 0) return {};
    try {
      return parseJsonBounded(read.bytes.toString('utf8'));
    } catch (error) {
      const message = `the body is not JSON: ${error instanceof Error ? error.message : String(error)}`;
      sendJson(incoming.res, 400, { error: { code: 'ERR_KEY_REQUEST_INVALID', message, hint: null } });
      return undefined;
    }
  }

  private notAllowed(incoming: Incoming, allow: string): void {
    incoming.req.resume();
    sendJson(
      incoming.res,
      405,
      { error: { code: 'method_not_allowed', message: `${incoming.method} is not allowed here` } },
      { allow },
    );
  }
}
