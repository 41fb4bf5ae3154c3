import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Router } from '#router/router.js';
import { sendJson } from './http-io.js';
import { credential } from './identity.js';

/**
 * An operator path's key check (`metrics:read` for /metrics, `keys:admin` for /admin/keys): the key is read like a
 * client's (x-api-key or Bearer) and must hold the scope. Any failure is a 401 naming the scope and the auth code,
 * never the key; true when the request may go on.
 */
export function operatorAuthorised(router: Router, req: IncomingMessage, res: ServerResponse, scope: string): boolean {
  const verdict = router.verifyScopedKey(credential(req.headers), scope);
  if (verdict.ok) return true;
  req.resume();
  sendJson(
    res,
    401,
    { error: { type: 'authentication_error', code: verdict.code, message: `${verdict.message} (needs ${scope})` } },
    { 'www-authenticate': `Bearer realm="cplane", scope="${scope}"` },
  );
  return false;
}
