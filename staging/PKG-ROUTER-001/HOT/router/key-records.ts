import type { AppendInput, LedgerEntry } from '#kernel/ledger/index.js';
import type { TokenClaims } from './auth.js';
import { effectiveMs } from './revocations.js';

/**
 * The key inventory is the ledger: KEY_ISSUED when a key is issued (its claims, never the token), KEY_ROTATED when
 * it is replaced, KEY_REVOKED when it is revoked (router/revocations.ts, at once or at a rotation's grace end).
 * Every host on a shared store reads the same records, so every host lists the same keys.
 */
export function keyIssuedRecord(claims: TokenClaims, rotatedFrom: string | null): AppendInput {
  const keyId = claims.jti as string;
  return {
    event_type: 'KEY_ISSUED',
    submission_id: keyId,
    decision: 'ISSUED',
    reason:
      rotatedFrom === null ? `key issued for ${claims.sub}` : `key issued for ${claims.sub}, replacing ${rotatedFrom}`,
    metadata: {
      agent_id: claims.sub,
      budget_scope: claims.budget_scope ?? null,
      expires_at: new Date(claims.exp * 1000).toISOString(),
      issued_at: new Date(claims.iat * 1000).toISOString(),
      key_id: keyId,
      kid: claims.kid ?? 'default',
      rotated_from: rotatedFrom,
      scopes: [...claims.scopes],
    },
  };
}

export function keyRotatedRecord(
  oldKeyId: string,
  newKeyId: string,
  graceS: number,
  validUntilMs: number,
): AppendInput {
  return {
    event_type: 'KEY_ROTATED',
    submission_id: oldKeyId,
    decision: 'ROTATED',
    reason: `replaced by ${newKeyId}; valid for ${graceS} s more`,
    metadata: {
      grace_s: graceS,
      key_id: oldKeyId,
      new_key_id: newKeyId,
      valid_until: new Date(validUntilMs).toISOString(),
    },
  };
}

/** One key as the inventory lists it (snake_case: it is the API's answer). */
export interface KeyView {
  key_id: string;
  agent: string;
  scopes: string[];
  budget_scope: string | null;
  created_at: string;
  expires_at: string;
  /** The key this one replaced, and the one that replaced it. */
  rotated_from: string | null;
  rotated_to: string | null;
  /** When it is (or was) revoked: a rotated key's grace end, or the moment of its revocation; null: never. */
  revoked_at: string | null;
  state: 'active' | 'grace' | 'revoked' | 'expired';
  /** The last authenticated call this host saw with it since it started; null: none. */
  last_used_at: string | null;
  /**
   * What the key's budget scope has been charged (its own, or the one it shares with the keys naming it); null when
   * the budget status read lists no such scope (never charged, or past the rows it reads).
   */
  spend: { tokens: number; cost: number } | null;
}

/** What the inventory records say about each key, newest issued first. */
export function foldInventory(
  issued: readonly LedgerEntry[],
  rotated: readonly LedgerEntry[],
  revoked: readonly LedgerEntry[],
  nowMs: number,
): KeyView[] {
  const rotatedTo = new Map<string, string>();
  for (const entry of rotated) rotatedTo.set(entry.submission_id, String(entry.metadata.new_key_id));
  const revokedAt = new Map<string, number>();
  for (const entry of revoked) {
    const at = effectiveMs(entry.metadata.effective_at);
    const when = at === Number.NEGATIVE_INFINITY ? Date.parse(String(entry.metadata.revoked_at)) : at;
    const known = revokedAt.get(entry.submission_id);
    if (Number.isFinite(when) && (known === undefined || when < known)) revokedAt.set(entry.submission_id, when);
  }
  const views = issued.map((entry): KeyView => {
    const m = entry.metadata;
    const keyId = entry.submission_id;
    const revokedMs = revokedAt.get(keyId);
    const expires = String(m.expires_at);
    let state: KeyView['state'] = 'active';
    if (revokedMs !== undefined && revokedMs <= nowMs) state = 'revoked';
    else if (Date.parse(expires) <= nowMs) state = 'expired';
    else if (revokedMs !== undefined) state = 'grace';
    return {
      key_id: keyId,
      agent: String(m.agent_id),
      scopes: Array.isArray(m.scopes) ? m.scopes.map(String) : [],
      budget_scope: typeof m.budget_scope === 'string' ? m.budget_scope : null,
      created_at: String(m.issued_at),
      expires_at: expires,
      rotated_from: typeof m.rotated_from === 'string' ? m.rotated_from : null,
      rotated_to: rotatedTo.get(keyId) ?? null,
      revoked_at: revokedMs === undefined ? null : new Date(revokedMs).toISOString(),
      state,
      last_used_at: null,
      spend: null,
    };
  });
  return views.sort((a, b) => b.created_at.localeCompare(a.created_at) || a.key_id.localeCompare(b.key_id));
}
