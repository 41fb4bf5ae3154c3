// A key's signature is verified once and remembered (VerifiedTokens); its lifetime, its key, its agent and scopes
// and the revocation list are still checked on every call.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { issueToken, VerifiedTokens, verifyToken, type AuthKeys } from '../../router/auth.js';
import { KeyCheck } from '../../router/keys.js';

const NOW_MS = 1_800_000_000_000;
const nowS = NOW_MS / 1000;
const expect = { agentId: 'AGENT-1', contractId: 'C1', nowMs: NOW_MS };

function token(keys: AuthKeys, extra: Record<string, unknown> = {}): string {
  return issueToken({ sub: 'AGENT-1', scopes: ['route:*'], iat: nowS, exp: nowS + 60, ...extra }, keys);
}

test('a remembered token still expires, and is refused once its key is changed or removed', () => {
  const keys: AuthKeys = { default: 'secret-one-0123456789' };
  const cache = new VerifiedTokens();
  const t = token(keys);
  assert.equal(verifyToken(t, keys, expect, cache).ok, true);
  assert.equal(cache.size, 1);
  assert.equal(verifyToken(t, keys, expect, cache).ok, true);
  const expired = verifyToken(t, keys, { ...expect, nowMs: NOW_MS + 60_000 }, cache);
  assert.equal(expired.ok ? null : expired.code, 'AUTH_EXPIRED');
  const early = verifyToken(t, keys, { ...expect, nowMs: NOW_MS - 120_000 }, cache);
  assert.equal(early.ok ? null : early.code, 'AUTH_NOT_YET_VALID');
  const wrongAgent = verifyToken(t, keys, { ...expect, agentId: 'AGENT-2' }, cache);
  assert.equal(wrongAgent.ok ? null : wrongAgent.code, 'AUTH_WRONG_AGENT');

  keys.default = 'secret-two-0123456789';
  const rotated = verifyToken(t, keys, expect, cache);
  assert.equal(rotated.ok ? null : rotated.code, 'AUTH_BAD_SIGNATURE');
  delete keys.default;
  const removed = verifyToken(t, keys, expect, cache);
  assert.equal(removed.ok ? null : removed.code, 'AUTH_UNKNOWN_KEY');
});

test('only verified tokens are remembered, at most `capacity`, the least recently used first out', () => {
  const keys: AuthKeys = { default: 'secret-one-0123456789' };
  const cache = new VerifiedTokens(2);
  const forged = token({ default: 'not-our-secret-0123456789' });
  assert.equal(verifyToken(forged, keys, expect, cache).ok, false);
  assert.equal(verifyToken(`${token(keys)}x`, keys, expect, cache).ok, false);
  assert.equal(cache.size, 0);

  const [a, b, c] = ['A', 'B', 'C'].map((jti) => token(keys, { jti: `key-id-${jti}-0123456789` })) as [
    string,
    string,
    string,
  ];
  for (const t of [a, b, a, c]) assert.equal(verifyToken(t, keys, expect, cache).ok, true);
  assert.equal(cache.size, 2);
  // `a` was used after `b`, so `b` left when `c` came in.
  assert.notEqual(cache.get(a, keys), undefined);
  assert.equal(cache.get(b, keys), undefined);
  assert.notEqual(cache.get(c, keys), undefined);
});

test('a key revoked after its first call is refused on the next, its signature remembered or not', () => {
  const keys: AuthKeys = { default: 'secret-one-0123456789' };
  const revoked = new Set<string>();
  const check = new KeyCheck({
    authKeys: keys,
    revocations: { isRevoked: (ids: readonly string[]) => ids.some((id) => revoked.has(id)) },
    clock: () => NOW_MS,
  });
  const withId = token(keys, { jti: 'key-id-revoked-0123' });
  const withoutId = token(keys);
  const call = (auth_token: string) =>
    check.verifyKey(auth_token, { agentId: 'AGENT-1', contractId: 'C1', modelId: 'm' });
  assert.equal(call(withId).ok, true);
  assert.equal(call(withoutId).ok, true);
  revoked.add('key-id-revoked-0123');
  const byId = call(withId);
  assert.equal(byId.ok ? null : byId.code, 'AUTH_REVOKED');
  assert.equal(call(withoutId).ok, true);
  const digest = check.budgetScope({
    auth_token: withoutId,
    agent_id: 'AGENT-1',
    contract_id: 'C1',
    model_id: 'm',
  } as Parameters<KeyCheck['budgetScope']>[0]);
  assert.match(digest ?? '', /^sha256:[0-9a-f]{64}$/);
  revoked.add(digest as string);
  const byDigest = call(withoutId);
  assert.equal(byDigest.ok ? null : byDigest.code, 'AUTH_REVOKED');
});
