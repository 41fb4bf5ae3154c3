import { CpError, show } from '#kernel/errors.js';
import type { LedgerStore } from '#kernel/ledger/store.js';
import { type AuthKeys, BUDGET_SCOPE, drawKeyId, issueToken, OPERATOR_SCOPES, type TokenClaims } from './auth.js';
import { foldInventory, keyIssuedRecord, keyRotatedRecord, type KeyView } from './key-records.js';
import { isKeyId, type RevokeResult } from './revocations.js';

export type { KeyView } from './key-records.js';

/** A year: a key is a short-lived credential, and `exp` must stay a safe integer of seconds. */
export const MAX_TTL_S = 366 * 24 * 3600;
/** The longest a rotated key may keep working beside its replacement. */
export const MAX_GRACE_S = 30 * 24 * 3600;
export const DEFAULT_TTL_S = 3600;
export const SCOPE = /^(route|model):(\*|[^\s]{1,256})$|^console:read$|^metrics:read$|^keys:admin$/;
const AGENT = /^[\x21-\x7e]{1,200}$/;
/** The inventory read for a listing: the newest keys first, at most this many. */
const MAX_LISTED = 10_000;

export interface KeyRequest {
  agent: string;
  scopes: string[];
  ttl_s: number;
  budget_scope?: string;
}

function invalid(message: string, details: Record<string, unknown>): CpError {
  return new CpError('ERR_KEY_REQUEST_INVALID', message, {
    hint: 'e.g. {"agent": "AGENT-1", "scopes": ["route:*"], "ttl_s": 86400, "budget_scope": "team-a"}',
    details,
  });
}

/** A key request from the API's JSON body or the CLI's options, bounded and checked; ERR_KEY_REQUEST_INVALID. */
export function parseKeyRequest(body: unknown): KeyRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw invalid('a key request is a JSON object {agent, scopes, ttl_s, budget_scope}', {});
  const b = body as Record<string, unknown>;
  const unknown = Object.keys(b).filter((k) => !['agent', 'scopes', 'ttl_s', 'budget_scope'].includes(k));
  if (unknown.length > 0) throw invalid(`unknown field ${show(unknown[0])}`, { field: unknown[0] });
  if (typeof b.agent !== 'string' || !AGENT.test(b.agent))
    throw invalid(`agent must be 1 to 200 printable ASCII characters, got ${show(b.agent)}`, { field: 'agent' });
  const given = b.scopes === undefined ? ['route:*'] : b.scopes;
  if (
    !Array.isArray(given) ||
    given.length === 0 ||
    given.length > 64 ||
    !given.every((s) => typeof s === 'string' && SCOPE.test(s))
  )
    throw invalid(
      `scopes must be 1 to 64 of route:* | route:<contract_id> | model:* | model:<model_id> | console:read | metrics:read | keys:admin, got ${show(given)}`,
      { field: 'scopes' },
    );
  const scopes = given as string[];
  const ttl = b.ttl_s === undefined ? DEFAULT_TTL_S : b.ttl_s;
  if (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < 1 || ttl > MAX_TTL_S)
    throw invalid(`ttl_s must be a whole number of seconds from 1 to ${MAX_TTL_S}, got ${show(ttl)}`, {
      field: 'ttl_s',
    });
  if (b.budget_scope !== undefined && (typeof b.budget_scope !== 'string' || !BUDGET_SCOPE.test(b.budget_scope)))
    throw invalid(
      `budget_scope must be 1 to 200 printable ASCII characters without spaces, got ${show(b.budget_scope)}`,
      {
        field: 'budget_scope',
      },
    );
  return {
    agent: b.agent,
    // A key naming neither a route nor an operator scope routes anywhere its model scopes allow.
    scopes: scopes.some((s) => s.startsWith('route:') || OPERATOR_SCOPES.includes(s)) ? scopes : ['route:*', ...scopes],
    ttl_s: ttl,
    ...(b.budget_scope === undefined ? {} : { budget_scope: b.budget_scope as string }),
  };
}

/** A grace period from a rotate request's body (`{grace_s}`, default 0: the old key stops at once). */
export function parseGrace(body: unknown): number {
  const grace = typeof body === 'object' && body !== null ? (body as { grace_s?: unknown }).grace_s : undefined;
  if (grace === undefined) return 0;
  if (typeof grace !== 'number' || !Number.isInteger(grace) || grace < 0 || grace > MAX_GRACE_S)
    throw invalid(`grace_s must be a whole number of seconds from 0 to ${MAX_GRACE_S}, got ${show(grace)}`, {
      field: 'grace_s',
    });
  return grace;
}

/** Where the key inventory lives and how a key is revoked, on either store (SQLite root or shared PostgreSQL). */
export interface KeyAdminPorts {
  authKeys: AuthKeys;
  clock: () => number;
  randomBytes: (size: number) => Buffer;
  ledger: Pick<LedgerStore, 'appendBatch' | 'query'>;
  /** Revoke at once, or from `effectiveAtMs` (a rotation's grace end), recording KEY_REVOKED. */
  revoke(keyId: string, reason: string | null, effectiveAtMs?: number): Promise<RevokeResult>;
  /** What each budget scope has been charged; absent: spend is not shown. */
  spend?(): Promise<ReadonlyMap<string, { tokens: number; cost: number }>>;
  /** The last call this host authenticated with the key (ms); absent or null: unknown. */
  lastUsed?(keyId: string): number | null;
}

export interface Issued {
  /** The key itself: shown once, here, and never recorded. */
  token: string;
  key_id: string;
  agent: string;
  scopes: string[];
  budget_scope: string | null;
  expires_at: string;
  entry_id: string;
}

/** Sign a new key and record KEY_ISSUED (with `extra` records in the same batch). */
async function mint(
  ports: KeyAdminPorts,
  request: KeyRequest,
  rotatedFrom: string | null,
  extra: (keyId: string) => Parameters<KeyAdminPorts['ledger']['appendBatch']>[0] = () => [],
): Promise<Issued> {
  if (!ports.authKeys.default)
    throw new CpError('ERR_AUTH_NO_SECRET', 'no signing secret: $CPLANE_AUTH_SECRET is not set (nor router.auth)', {
      hint: 'export CPLANE_AUTH_SECRET=<a long random string> (the router verifies with the same secret)',
    });
  const now = Math.floor(ports.clock() / 1000);
  const claims: TokenClaims = {
    sub: request.agent,
    scopes: request.scopes,
    iat: now,
    exp: now + request.ttl_s,
    jti: drawKeyId(ports.randomBytes),
    ...(request.budget_scope === undefined ? {} : { budget_scope: request.budget_scope }),
  };
  const token = issueToken(claims, ports.authKeys);
  const keyId = claims.jti as string;
  const [entry] = await ports.ledger.appendBatch([keyIssuedRecord(claims, rotatedFrom), ...extra(keyId)]);
  return {
    token,
    key_id: keyId,
    agent: claims.sub,
    scopes: claims.scopes,
    budget_scope: claims.budget_scope ?? null,
    expires_at: new Date(claims.exp * 1000).toISOString(),
    entry_id: entry?.id ?? '',
  };
}

export function issueKey(ports: KeyAdminPorts, request: KeyRequest): Promise<Issued> {
  return mint(ports, request, null);
}

/** Every key the inventory records, with its state now, its last use on this host and its budget scope's spend. */
export async function listKeys(ports: KeyAdminPorts): Promise<KeyView[]> {
  const read = (event_type: string) => ports.ledger.query({ event_type, limit: MAX_LISTED });
  const [issued, rotated, revoked] = await Promise.all([read('KEY_ISSUED'), read('KEY_ROTATED'), read('KEY_REVOKED')]);
  const views = foldInventory(issued, rotated, revoked, ports.clock());
  const spend = (await ports.spend?.()) ?? null;
  for (const view of views) {
    const used = ports.lastUsed?.(view.key_id) ?? null;
    view.last_used_at = used === null ? null : new Date(used).toISOString();
    // A scope the budget status does not list has never been charged, or is past the rows it reads: unknown, not 0.
    if (spend !== null) view.spend = spend.get(view.budget_scope ?? `key:${view.key_id}`) ?? null;
  }
  return views;
}

async function inventoried(ports: KeyAdminPorts, keyId: string): Promise<KeyView> {
  if (!isKeyId(keyId))
    throw new CpError('ERR_TOKEN_INVALID', `${show(keyId)} is not a key id`, { details: { key_id: keyId } });
  // The key's own records only (the ledger's submission_id index): not the whole inventory.
  const read = (event_type: string) => ports.ledger.query({ event_type, submission_id: keyId, limit: 100 });
  const [issued, rotated, revoked] = await Promise.all([read('KEY_ISSUED'), read('KEY_ROTATED'), read('KEY_REVOKED')]);
  const found = foldInventory(issued, rotated, revoked, ports.clock())[0];
  if (found === undefined)
    throw new CpError('ERR_KEY_UNKNOWN', `no key ${show(keyId)} in the key inventory (no KEY_ISSUED record)`, {
      hint: 'GET /admin/keys (or `cplane token list`) lists the keys; `token revoke --key-id` revokes any key id',
      details: { key_id: keyId },
    });
  return found;
}

export interface Rotated extends Issued {
  old_key_id: string;
  /** When the old key stops working (its revocation takes effect everywhere). */
  old_valid_until: string;
}

/**
 * A new key with the old one's agent, scopes, lifetime and budget (its spend goes on in the same scope), recorded
 * with KEY_ROTATED in one batch; the old key is revoked from now + grace_s on every host (each checks the time).
 */
export async function rotateKey(ports: KeyAdminPorts, keyId: string, graceS: number): Promise<Rotated> {
  const old = await inventoried(ports, keyId);
  if (old.state === 'revoked' || old.state === 'expired')
    throw invalid(`key ${keyId} is ${old.state}: there is nothing to rotate`, { key_id: keyId, state: old.state });
  const ttl = Math.max(1, Math.round((Date.parse(old.expires_at) - Date.parse(old.created_at)) / 1000));
  const until = ports.clock() + graceS * 1000;
  const issued = await mint(
    ports,
    {
      agent: old.agent,
      scopes: old.scopes,
      ttl_s: Math.min(ttl, MAX_TTL_S),
      budget_scope: old.budget_scope ?? `key:${old.key_id}`,
    },
    old.key_id,
    (newKeyId) => [keyRotatedRecord(old.key_id, newKeyId, graceS, until)],
  );
  await ports.revoke(old.key_id, `rotated to ${issued.key_id}`, graceS === 0 ? undefined : until);
  return { ...issued, old_key_id: old.key_id, old_valid_until: new Date(until).toISOString() };
}

/** Revoke a key at once (a rotated key in its grace included). */
export async function deleteKey(ports: KeyAdminPorts, keyId: string, reason: string | null): Promise<RevokeResult> {
  await inventoried(ports, keyId);
  return ports.revoke(keyId, reason ?? 'deleted over the key admin API');
}
