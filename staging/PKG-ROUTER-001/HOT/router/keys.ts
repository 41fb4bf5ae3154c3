import type { RefusalCode } from '#kernel/catalogue/define.js';
import {
  type AuthKeys,
  type AuthResult,
  VerifiedTokens,
  verifyConsoleToken,
  verifyScopedToken,
  verifyToken,
} from './auth.js';
import { UNAUTHENTICATED_CODES } from './refusal-sampler.js';
import type { PromptRequest } from './request.js';
import type { RevocationCheck } from './revocations.js';

const LAST_USED_CAPACITY = 4096;

export interface KeyCheckOptions {
  /** Auth keys (kid → secret); none: no key verifies. */
  authKeys?: AuthKeys | undefined;
  /** Skip auth (the seed's dev_mode): every call is authorised and has no key scope. */
  devMode?: boolean | undefined;
  /** Revoked keys, checked on every authentication; none: nothing is revoked. */
  revocations?: RevocationCheck | null | undefined;
  clock: () => number;
}

/**
 * The router's authentication, for route() and any surface in front of it (the HTTP gateway): signature,
 * expiry, agent, contract and model scopes, then the revocation list. A list that cannot be trusted refuses.
 */
export class KeyCheck {
  private readonly keys: AuthKeys;
  // A key is verified on each call (authorise, then budgetScope): its signature is checked once, then remembered.
  private readonly verified = new VerifiedTokens();
  /** When each key (by jti) last authorised a call here: bounded, least recently used first out (O(1) both ways). */
  private readonly used = new Map<string, number>();

  constructor(private readonly options: KeyCheckOptions) {
    this.keys = options.authKeys ?? {};
  }

  verifyKey(token: unknown, expect: { agentId: string; contractId: string; modelId: string }): AuthResult {
    return this.notRevoked(
      token,
      // Object.assign, not a spread given a new field: that object gets a V8 map of its own on every call.
      verifyToken(token, this.keys, Object.assign({}, expect, { nowMs: this.options.clock() }), this.verified),
    );
  }

  /** A key that may read the console (scope `console:read`), checked against the revocation list like any key. */
  verifyConsoleKey(token: unknown): AuthResult {
    return this.notRevoked(token, verifyConsoleToken(token, this.keys, this.options.clock(), this.verified));
  }

  /** A key holding `scope` (an operator's: `metrics:read`, `keys:admin`), checked against the revocation list. */
  verifyScopedKey(token: unknown, scope: string): AuthResult {
    return this.notRevoked(token, verifyScopedToken(token, this.keys, this.options.clock(), scope, this.verified));
  }

  /** Why the request may not make its call, or null (dev mode: never). */
  authorise(request: PromptRequest & { model_id: string }): { code: RefusalCode; message: string } | null {
    if (this.options.devMode) return null;
    const result = this.verifyKey(request.auth_token, {
      agentId: request.agent_id,
      contractId: request.contract_id,
      modelId: request.model_id,
    });
    if (!result.ok) return { code: result.code, message: result.message };
    const jti = result.claims.jti;
    if (jti !== undefined) {
      this.used.delete(jti);
      this.used.set(jti, this.options.clock());
      if (this.used.size > LAST_USED_CAPACITY) this.used.delete(this.used.keys().next().value as string);
    }
    return null;
  }

  /** When the key last authorised a call on this host (ms), if it is among the most recently used. */
  lastUsed(keyId: string): number | null {
    return this.used.get(keyId) ?? null;
  }

  /** The authorised key's budget scope, to charge beside the session's (a dev-mode call has no key). */
  budgetScope(request: PromptRequest & { model_id: string }): string | undefined {
    if (this.options.devMode) return undefined;
    const result = verifyToken(
      request.auth_token,
      this.keys,
      {
        agentId: request.agent_id,
        contractId: request.contract_id,
        modelId: request.model_id,
        nowMs: this.options.clock(),
      },
      this.verified,
    );
    if (!result.ok) return undefined;
    // Every key has a scope: its budget_scope (shared by the keys that name it), else its own id, so a per-key
    // limit or rate (limits.key / rate_limits.key default) holds however many session ids a client invents.
    const own =
      result.claims.jti === undefined
        ? (this.verified.keyIds(request.auth_token as string, result.claims)[0] as string)
        : `key:${result.claims.jti}`;
    return result.claims.budget_scope ?? own;
  }

  /** An auth refusal anyone could provoke, or a malformed request whose key (if any) does not verify. */
  unauthenticated(code: string, token: unknown): boolean {
    if (UNAUTHENTICATED_CODES.has(code)) return true;
    if (code !== 'VALIDATION_FAILED') return false;
    const result = verifyToken(
      token,
      this.keys,
      { agentId: '', contractId: '', nowMs: this.options.clock() },
      this.verified,
    );
    return !result.ok && UNAUTHENTICATED_CODES.has(result.code);
  }

  private notRevoked(token: unknown, result: AuthResult): AuthResult {
    const { revocations } = this.options;
    if (!result.ok || !revocations) return result;
    const ids = this.verified.keyIds(token as string, result.claims);
    try {
      if (revocations.isRevoked(ids, this.options.clock())) {
        return { ok: false, code: 'AUTH_REVOKED', message: `auth key ${ids[0] as string} was revoked` };
      }
    } catch (error) {
      const code =
        typeof (error as { code?: unknown }).code === 'string' ? `${(error as { code: string }).code}: ` : '';
      return {
        ok: false,
        code: 'AUTH_REVOCATION_LIST_INVALID',
        message: `${code}${error instanceof Error ? error.message : String(error)}`,
      };
    }
    return result;
  }
}
