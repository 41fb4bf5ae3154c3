// A token's `kid` names a key: "__proto__", "constructor" or "toString" must be an unknown key, recorded as
// an AUTH refusal, never a lookup on Object.prototype that crashes the router.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { issueToken, verifyToken } from '../../router/auth.js';
import { harness, request } from './harness.js';

const KEYS = { default: 'test-secret-0123456789abcdef' };

/** A token signed with `secret` whatever its kid says (an attacker controls the payload, not our keys). */
function tokenWithKid(kid: string, nowS: number, secret = KEYS.default): string {
  const payload = Buffer.from(
    JSON.stringify({ sub: 'AGENT-1', scopes: ['route:*'], iat: nowS, exp: nowS + 60, kid }),
  ).toString('base64url');
  const input = `cpt1.${payload}`;
  return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
}

test('a hostile kid is AUTH_UNKNOWN_KEY: recorded as PROMPT_REJECTED, provider never called', async (t) => {
  const h = harness(t, { router: { devMode: false, authKeys: KEYS } });
  const nowS = Math.floor(h.now.ms / 1000);
  const kids = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__'];
  for (const kid of kids) {
    const res = await h.router.route(request({ auth_token: tokenWithKid(kid, nowS) }));
    assert.equal(res.outcome, 'rejected', kid);
    assert.equal(res.error_code, 'AUTH_UNKNOWN_KEY', kid);
  }
  const rejected = h.ledger.query({ event_type: 'PROMPT_REJECTED' });
  assert.equal(rejected.length, kids.length);
  assert.ok(rejected.every((e) => e.metadata.error_code === 'AUTH_UNKNOWN_KEY'));
  assert.equal(h.provider.calls.length, 0);
  // The positive case: the configured key, named explicitly, still verifies.
  assert.equal((await h.router.route(request({ auth_token: tokenWithKid('default', nowS) }))).outcome, 'success');
});

test('verifyToken and issueToken never read inherited properties as keys', () => {
  const nowS = Math.floor(Date.now() / 1000);
  for (const kid of ['__proto__', 'constructor', 'toString']) {
    const result = verifyToken(tokenWithKid(kid, nowS), KEYS, {
      agentId: 'AGENT-1',
      contractId: 'C',
      nowMs: nowS * 1000,
    });
    assert.deepEqual(result.ok ? 'ok' : result.code, 'AUTH_UNKNOWN_KEY', kid);
    assert.throws(
      () => issueToken({ sub: 'A', scopes: ['route:*'], iat: nowS, exp: nowS + 1, kid }, KEYS),
      /no auth key/,
    );
  }
  const emptySecret = verifyToken(
    tokenWithKid('default', nowS, ''),
    { default: '' },
    { agentId: 'AGENT-1', contractId: 'C', nowMs: nowS * 1000 },
  );
  assert.equal(emptySecret.ok ? 'ok' : emptySecret.code, 'AUTH_UNKNOWN_KEY', 'an empty secret verifies nothing');
});

test('a token has one spelling: characters outside base64url, padding or a longer mac are AUTH_MALFORMED', () => {
  const nowS = Math.floor(Date.now() / 1000);
  const token = tokenWithKid('default', nowS);
  const expect = { agentId: 'AGENT-1', contractId: 'c', nowMs: nowS * 1000 };
  assert.equal(verifyToken(token, KEYS, expect).ok, true);
  // Node's base64url decoder skips these, so each would otherwise verify as the same key with a new digest.
  for (const variant of [
    `${token};Domain=evil`,
    `${token}\r\nX: y`,
    `${token}=`,
    `${token} `,
    `${token}A`,
    `${token}.`,
  ]) {
    const result = verifyToken(variant, KEYS, expect);
    assert.equal(result.ok, false, JSON.stringify(variant));
    assert.equal(result.ok ? '' : result.code, 'AUTH_MALFORMED', JSON.stringify(variant));
  }
});
