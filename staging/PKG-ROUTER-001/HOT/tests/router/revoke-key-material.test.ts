// A token pasted where a key id belongs (`token revoke --key-id <token>`, the mistake the two options invite) is
// refused without the token in the message or the details: `--json` prints details to stdout and logs keep them,
// and a bearer token there is a live credential. The refusal says to pass it as --token instead.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { issueToken } from '../../router/auth.js';
import { revocationReason, revokeKey } from '../../router/revocations.js';

test('a whole token given as the key id to revoke is ERR_TOKEN_INVALID that never shows the token', (t) => {
  const root = mkdtempSync(join(tmpdir(), 'cp-revoke-material-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, 'HOT', 'registries'), { recursive: true });
  const nowS = Math.floor(Date.now() / 1000);
  const token = issueToken({ sub: 'A', scopes: ['route:*'], iat: nowS, exp: nowS + 60 }, { default: 'x'.repeat(32) });
  const signature = token.slice(token.lastIndexOf('.') + 1);
  let caught: unknown;
  try {
    revokeKey(root, token, null);
  } catch (error) {
    caught = error;
  }
  const e = caught as { code?: string; message: string; hint?: string; details?: unknown };
  assert.equal(e?.code, 'ERR_TOKEN_INVALID', String(caught));
  const shown = JSON.stringify({ message: e.message, hint: e.hint, details: e.details });
  for (const part of [token, signature, signature.slice(0, 16)])
    assert.equal(shown.includes(part), false, `the token's signature is shown: ${shown}`);
  assert.match(`${e.message} ${e.hint}`, /--token/);
  assert.deepEqual(readdirSync(join(root, 'HOT', 'registries')), [], 'nothing written');
});

test('a key id that is not one and not a token is still named in the refusal', () => {
  assert.throws(
    () => revokeKey('/nonexistent-root', 'sha256:abc', null),
    (e: { code?: string; message: string }) => {
      assert.equal(e.code, 'ERR_TOKEN_INVALID');
      assert.match(e.message, /sha256:abc/);
      return true;
    },
  );
});

test('a revocation reason holding the leaked key is recorded with the key scrubbed, before it is cut to length', () => {
  const nowS = Math.floor(Date.now() / 1000);
  const token = issueToken({ sub: 'A', scopes: ['route:*'], iat: nowS, exp: nowS + 60 }, { default: 'x'.repeat(32) });
  const provider = `sk-ant-api03-${'K'.repeat(40)}`;
  const reason = revocationReason(`sha256:${'a'.repeat(64)}`, `leaked in a log: ${token} and ${provider}`);
  assert.ok(reason !== null);
  assert.equal(reason.includes(token.slice(token.lastIndexOf('.') + 1)), false, reason);
  assert.equal(reason.includes('K'.repeat(32)), false, reason);
  assert.match(reason, /\[REDACTED:cplane_route_token\].*\[REDACTED:anthropic_api_key\]/);
  // A key straddling the length limit: scrubbed whole first, so no prefix of it survives the cut.
  const long = revocationReason(`sha256:${'a'.repeat(64)}`, `${'x'.repeat(480)}${provider}`);
  assert.equal(long?.includes('sk-ant'), false, long ?? '');
});
