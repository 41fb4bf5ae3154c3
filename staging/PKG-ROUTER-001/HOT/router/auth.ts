import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { RefusalCode } from '#kernel/catalogue/define.js';
import { show } from '#kernel/errors.js';

/**
 * Route credentials: `cpt1.<payload>.<mac>` where payload is base64url JSON
 * {sub, scopes, iat, exp, kid?, jti?, budget_scope?} and mac is base64url HMAC-SHA256 over `cpt1.<payload>`
 * with the key `kid`. Scopes: `route:*` or `route:<contract_id>` (at least one), and optionally `model:*` or
 * `model:<model_id>`: a token naming models may route to those models only. `jti` is the key id revocation
 * names; a token minted before ids existed is named by its digest (`tokenKeyIds`).
 */
export interface TokenClaims {
  sub: string;
  scopes: string[];
  iat: number;
  exp: number;
  kid?: string;
  jti?: string;
  /** The budget scope the key's calls are charged to (the gateway's per-key budgets). */
  budget_scope?: string;
}

/** The router's AUTH_* refusals (router/codes.ts). */
export type AuthFailure = Extract<RefusalCode, `AUTH_${string}`>;

export type AuthResult = { ok: true; claims: TokenClaims } | { ok: false; code: AuthFailure; message: string };

export interface AuthKeys {
  /** Key id → secret. The default key id is "default". */
  [kid: string]: string;
}

const PREFIX = 'cpt1';
const TOKEN_SHAPE = /^cpt1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/;
/** A `jti`: 16 to 64 base64url characters (`token issue` draws 16 random bytes). */
export const KEY_ID = /^[A-Za-z0-9_-]{16,64}$/;
/**
 * A new `jti`: 16 random bytes as base64url, drawn again while it starts with '-' or '_'. One in 32 draws
 * would otherwise start with '-', and `token revoke --key-id -…` reads that as an option, not its value.
 */
export function drawKeyId(random: (size: number) => Buffer): string {
  for (;;) {
    const id = random(16).toString('base64url');
    if (/^[A-Za-z0-9]/.test(id)) return id;
  }
}

/** A key's budget scope: an id the budgeter can hold (1-200 printable ASCII characters, no spaces). */
export const BUDGET_SCOPE = /^[\x21-\x7e]{1,200}$/;
const CLOCK_SKEW_S = 30;

const b64url = (data: Buffer | string): string => Buffer.from(data).toString('base64url');

function mac(secret: string, signingInput: string): Buffer {
  return createHmac('sha256', secret).update(signingInput).digest();
}

export function issueToken(claims: TokenClaims, keys: AuthKeys): string {
  const kid = claims.kid ?? 'default';
  const secret = secretFor(keys, kid);
  if (secret === undefined) throw new Error(`no auth key ${JSON.stringify(kid)} to sign with`);
  const signingInput = `${PREFIX}.${b64url(JSON.stringify(claims))}`;
  return `${signingInput}.${b64url(mac(secret, signingInput))}`;
}

/** The scope of a key that may read the console (`cplane serve` at /console/); it routes nothing. */
export const CONSOLE_SCOPE = 'console:read';

/**
 * Verify a token for `agentId` calling `contractId` at `nowMs`. Never throws on hostile input. With `cache`, a
 * token verified before skips its signature check (VerifiedTokens), nothing else.
 */
export function verifyToken(
  token: unknown,
  keys: AuthKeys,
  expect: { agentId: string; contractId: string; modelId?: string; nowMs: number },
  cache?: VerifiedTokens,
): AuthResult {
  const signed = verifySigned(token, keys, expect.nowMs, cache);
  if (!signed.ok) return signed;
  const { claims } = signed;
  if (claims.sub !== expect.agentId)
    return {
      ok: false,
      code: 'AUTH_WRONG_AGENT',
      message: `auth token is for ${JSON.stringify(claims.sub)}, not ${JSON.stringify(expect.agentId)}`,
    };
  if (!claims.scopes.includes('route:*') && !claims.scopes.includes(`route:${expect.contractId}`)) {
    return { ok: false, code: 'AUTH_SCOPE', message: `auth token has no scope route:${expect.contractId}` };
  }
  const models = claims.scopes.filter((s) => s.startsWith('model:'));
  if (
    models.length > 0 &&
    !models.includes('model:*') &&
    (expect.modelId === undefined || !models.includes(`model:${expect.modelId}`))
  ) {
    return {
      ok: false,
      code: 'AUTH_MODEL_SCOPE',
      message: `auth token may use ${show(
        models.map((m) => m.slice(6)),
        200,
      )}, not the model ${show(expect.modelId ?? '(none)', 120)}`,
    };
  }
  return { ok: true, claims };
}

/** The scope of a key that may scrape `GET /metrics`; it routes nothing. */
export const METRICS_SCOPE = 'metrics:read';
/** The scope of a key that may issue, list, rotate and revoke keys over `/admin/keys`; it routes nothing. */
export const KEYS_ADMIN_SCOPE = 'keys:admin';
/** Scopes that name an operator's surface, not a route: a key holding one is not given `route:*` by default. */
export const OPERATOR_SCOPES: readonly string[] = [CONSOLE_SCOPE, METRICS_SCOPE, KEYS_ADMIN_SCOPE];

/** A key with `console:read` at `nowMs`: signature and lifetime as for routing; it names no agent or contract. */
export function verifyConsoleToken(token: unknown, keys: AuthKeys, nowMs: number, cache?: VerifiedTokens): AuthResult {
  return verifyScopedToken(token, keys, nowMs, CONSOLE_SCOPE, cache);
}

/** A key holding `scope` at `nowMs`: signature and lifetime as for routing; it names no agent or contract. */
export function verifyScopedToken(
  token: unknown,
  keys: AuthKeys,
  nowMs: number,
  scope: string,
  cache?: VerifiedTokens,
): AuthResult {
  const signed = verifySigned(token, keys, nowMs, cache);
  if (!signed.ok) return signed;
  if (!signed.claims.scopes.includes(scope))
    return { ok: false, code: 'AUTH_SCOPE', message: `auth token has no scope ${scope}` };
  return signed;
}

/** Signature, shape and lifetime: what every key must pass whatever it is for. */
function verifySigned(token: unknown, keys: AuthKeys, nowMs: number, cache?: VerifiedTokens): AuthResult {
  const known = typeof token === 'string' ? cache?.get(token, keys) : undefined;
  if (known !== undefined) return lifetime(known.claims, nowMs);
  const signed = verifySignature(token, keys);
  if (!signed.ok) return signed;
  cache?.put(token as string, signed.claims, signed.secret);
  return lifetime(signed.claims, nowMs);
}

/** Shape and signature: what does not change with the clock, so a verified token may be remembered. */
function verifySignature(
  token: unknown,
  keys: AuthKeys,
): { ok: true; claims: TokenClaims; secret: string } | Extract<AuthResult, { ok: false }> {
  if (typeof token !== 'string' || token.length === 0)
    return { ok: false, code: 'AUTH_MISSING', message: 'no auth token' };
  // Exactly the base64url alphabet: Node's decoder skips other characters, so `<mac>;x` would verify as `<mac>`
  // and one key would have many spellings (each a new digest a revocation by digest would not name, and a
  // `;` or line break that reaches a Set-Cookie header).
  if (token.length > 8192 || !TOKEN_SHAPE.test(token)) {
    return { ok: false, code: 'AUTH_MALFORMED', message: 'auth token is not a cpt1 token' };
  }
  const [, payloadPart, macPart] = token.split('.') as [string, string, string];
  // And exactly its canonical spelling: 43 characters carry 258 bits, and the decoder drops the last two, so a
  // mac whose last character differs in those bits would verify as the same key under a new digest.
  if (!isCanonical(payloadPart) || !isCanonical(macPart))
    return { ok: false, code: 'AUTH_MALFORMED', message: 'auth token is not a cpt1 token' };
  let claims: TokenClaims;
  try {
    claims = JSON.parse(Buffer.from(payloadPart, 'base64url').toString('utf8')) as TokenClaims;
  } catch {
    return { ok: false, code: 'AUTH_MALFORMED', message: 'auth token payload is not JSON' };
  }
  if (!isClaims(claims))
    return { ok: false, code: 'AUTH_MALFORMED', message: 'auth token payload lacks sub/scopes/iat/exp' };
  const secret = secretFor(keys, claims.kid ?? 'default');
  if (secret === undefined)
    return {
      ok: false,
      code: 'AUTH_UNKNOWN_KEY',
      message: `auth key ${show(claims.kid ?? 'default', 80)} is not configured`,
    };
  const expected = mac(secret, `${PREFIX}.${payloadPart}`);
  const given = Buffer.from(macPart, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return { ok: false, code: 'AUTH_BAD_SIGNATURE', message: 'auth token signature does not verify' };
  }
  return { ok: true, claims, secret };
}

/** Expiry and issue time against `nowMs`: checked on every use, remembered or not. */
function lifetime(claims: TokenClaims, nowMs: number): AuthResult {
  const nowS = Math.floor(nowMs / 1000);
  if (claims.exp <= nowS)
    return {
      ok: false,
      code: 'AUTH_EXPIRED',
      message: `auth token expired at ${new Date(claims.exp * 1000).toISOString()}`,
    };
  if (claims.iat > nowS + CLOCK_SKEW_S)
    return { ok: false, code: 'AUTH_NOT_YET_VALID', message: 'auth token is issued in the future' };
  return { ok: true, claims };
}

interface VerifiedToken {
  claims: TokenClaims;
  /** The secret its signature verified under: a key changed or removed since makes it unknown again. */
  secret: string;
  /** Its revocation ids (tokenKeyIds), computed on first use. */
  ids: string[] | null;
}

/**
 * Tokens whose shape and signature verified, by the token string: a key in use is HMAC-checked, decoded and
 * parsed once, not on every call. Bounded, least recently used first out (a Map keeps insertion order, so a hit
 * re-inserted is the newest and the first key the oldest: O(1) both ways). Only verified tokens enter, so a flood
 * of forged ones costs its verification each time and evicts nothing. Lifetime, agent, scopes and revocation are
 * still checked on every use; the claims are frozen, shared by every result that reads them.
 */
export class VerifiedTokens {
  private readonly entries = new Map<string, VerifiedToken>();

  constructor(readonly capacity = 4096) {}

  get size(): number {
    return this.entries.size;
  }

  get(token: string, keys: AuthKeys): VerifiedToken | undefined {
    const entry = this.entries.get(token);
    if (entry === undefined) return undefined;
    this.entries.delete(token);
    if (secretFor(keys, entry.claims.kid ?? 'default') !== entry.secret) return undefined;
    this.entries.set(token, entry);
    return entry;
  }

  put(token: string, claims: TokenClaims, secret: string): void {
    Object.freeze(claims.scopes);
    this.entries.set(token, { claims: Object.freeze(claims), secret, ids: null });
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as string);
  }

  /** tokenKeyIds of a token this cache holds, else computed afresh. */
  keyIds(token: string, claims: TokenClaims): string[] {
    const entry = this.entries.get(token);
    if (entry === undefined || entry.claims !== claims) return tokenKeyIds(token, claims);
    entry.ids ??= tokenKeyIds(token, claims);
    return entry.ids;
  }
}

/** Whether `part` is the one base64url spelling of the bytes it decodes to (no stray trailing bits). */
function isCanonical(part: string): boolean {
  return Buffer.from(part, 'base64url').toString('base64url') === part;
}

/** `sha256:<hex>` of a token's bytes: the stable id of a token minted without a `jti`. */
export function tokenDigest(token: string): string {
  return `sha256:${createHash('sha256').update(token, 'utf8').digest('hex')}`;
}

/** The ids a revocation may name a verified token by: its `jti` when it has one, and always its digest. */
export function tokenKeyIds(token: string, claims: TokenClaims): string[] {
  return claims.jti === undefined ? [tokenDigest(token)] : [claims.jti, tokenDigest(token)];
}

/**
 * The key id of a token to revoke (its `jti`, else its digest), read without verifying the signature: revoking
 * a forged token harms nobody, and the holder of a stolen one must be able to cut it off. Null: not a cpt1 token.
 */
export function tokenKeyId(token: string): string | null {
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] !== PREFIX || token.length > 8192) return null;
  try {
    const claims = JSON.parse(Buffer.from(parts[1] as string, 'base64url').toString('utf8')) as unknown;
    if (!isClaims(claims)) return null;
    return claims.jti ?? tokenDigest(token);
  } catch {
    return null;
  }
}

/** The key's own entry only: a token's `kid` of "__proto__" or "constructor" must not reach Object.prototype. */
function secretFor(keys: AuthKeys, kid: string): string | undefined {
  if (!Object.hasOwn(keys, kid)) return undefined;
  const secret = keys[kid];
  return typeof secret === 'string' && secret.length > 0 ? secret : undefined;
}

function isClaims(value: unknown): value is TokenClaims {
  if (typeof value !== 'object' || value === null) return false;
  const c = value as Record<string, unknown>;
  return (
    typeof c.sub === 'string' &&
    Array.isArray(c.scopes) &&
    c.scopes.every((s) => typeof s === 'string') &&
    Number.isInteger(c.iat) &&
    Number.isInteger(c.exp) &&
    (c.kid === undefined || typeof c.kid === 'string') &&
    (c.jti === undefined || (typeof c.jti === 'string' && KEY_ID.test(c.jti))) &&
    (c.budget_scope === undefined || (typeof c.budget_scope === 'string' && BUDGET_SCOPE.test(c.budget_scope)))
  );
}
