import type { IncomingHttpHeaders } from 'node:http';
import { sha256Hex } from '#kernel/canonical.js';

/** Who is calling: the virtual key (a cpt1 route token) and the ids the records carry. */
export interface Identity {
  token: string | null;
  /** The token's subject, read unverified only to name the agent the router then verifies it for. */
  agent: string;
  session: string;
  workOrder: string | null;
}

/** Ids from headers: printable ASCII, at most 200 characters (the record schema's bound); anything else is ignored. */
const ID = /^[\x21-\x7e]{1,200}$/;

function header(headers: IncomingHttpHeaders, name: string): string | null {
  const value = headers[name];
  return typeof value === 'string' ? value : null;
}

/**
 * The client's credential: `x-api-key`, else `Authorization: Bearer` (current SDKs send the latter). A Gemini
 * client (`google`, with the request's query string without its '?') may send it as Google's SDKs and CLI do:
 * `x-goog-api-key`, or `?key=` in the query. Elsewhere a key in the query is no credential.
 */
export function credential(headers: IncomingHttpHeaders, google?: { search: string }): string | null {
  for (const name of google === undefined ? ['x-api-key'] : ['x-api-key', 'x-goog-api-key']) {
    const key = header(headers, name);
    if (key !== null && key.trim() !== '') return key.trim();
  }
  const auth = header(headers, 'authorization');
  const match = auth === null ? null : /^Bearer\s+(\S+)\s*$/i.exec(auth);
  if (match?.[1] !== undefined) return match[1];
  if (google === undefined || !google.search.includes('key=')) return null;
  const key = new URLSearchParams(google.search).get('key');
  return key === null || key.trim() === '' ? null : key.trim();
}

/** The `sub` claim of a cpt1 token without verifying it (the router verifies); '' when there is none. */
export function unverifiedSubject(token: string | null): string {
  if (token === null || token.length > 8192) return '';
  const payload = token.split('.')[1];
  if (payload === undefined) return '';
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { sub?: unknown };
    return typeof claims.sub === 'string' && ID.test(claims.sub) ? claims.sub : '';
  } catch {
    return '';
  }
}

/**
 * Session: `x-cplane-session`, else Claude Code's `x-claude-code-session-id`, else one derived from the key
 * (a digest, never the key). Work order from `x-cplane-work-order`.
 */
export function identify(headers: IncomingHttpHeaders, google?: { search: string }): Identity {
  const token = credential(headers, google);
  const named = [header(headers, 'x-cplane-session'), header(headers, 'x-claude-code-session-id')].find(
    (v) => v !== null && ID.test(v),
  );
  const workOrder = header(headers, 'x-cplane-work-order');
  return {
    token,
    agent: unverifiedSubject(token),
    session: named ?? (token === null ? 'SES-ANONYMOUS' : `SES-KEY-${sha256Hex(token).slice(0, 16)}`),
    workOrder: workOrder !== null && ID.test(workOrder) ? workOrder : null,
  };
}
