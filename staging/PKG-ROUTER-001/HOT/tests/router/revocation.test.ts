// Revocation and model scopes inside the router's authentication: a revoked key (by jti, or by digest for a
// token minted before ids existed) is a PROMPT_REJECTED AUTH_REVOKED while other keys still route; a token naming
// models cannot reach another one; and a revocation list that cannot be trusted refuses every key, never allows all.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { issueToken, tokenDigest, tokenKeyId, type TokenClaims } from '../../router/auth.js';
import { revocationList } from '../../router/revocations.js';
import { harness, request } from './harness.js';

const KEYS = { default: 'revocation-test-secret' };

function mkfifoSync(path: string): void {
  assert.equal(spawnSync('mkfifo', [path]).status, 0, `mkfifo ${path}`);
}

function setup(t: { after: (fn: () => void) => void }) {
  const root = mkdtempSync(join(tmpdir(), 'cp-revocation-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, 'HOT', 'registries'), { recursive: true });
  const h = harness(t, { router: { devMode: false, authKeys: KEYS, revocations: revocationList(root) } });
  const nowS = Math.floor(h.now.ms / 1000);
  const claims = (extra: Partial<TokenClaims> = {}): TokenClaims => ({
    sub: 'AGENT-1',
    scopes: ['route:*'],
    iat: nowS,
    exp: nowS + 600,
    ...extra,
  });
  const list = join(root, 'HOT', 'registries', 'revoked-keys.json');
  const writeList = (ids: string[]): void =>
    writeFileSync(
      list,
      JSON.stringify({
        schema_version: '1',
        revoked: ids.map((key_id) => ({ key_id, revoked_at: '2026-03-01T12:00:00.000Z', reason: null })),
      }),
    );
  return { h, root, list, claims, writeList };
}

test('a revoked key is refused with PROMPT_REJECTED AUTH_REVOKED; an unrevoked key still routes', async (t) => {
  const { h, claims, writeList } = setup(t);
  const revoked = issueToken(claims({ jti: 'AAAAAAAAAAAAAAAAAAAAAA' }), KEYS);
  const kept = issueToken(claims({ jti: 'BBBBBBBBBBBBBBBBBBBBBB' }), KEYS);
  assert.equal((await h.router.route(request({ auth_token: revoked }))).outcome, 'success');
  writeList(['AAAAAAAAAAAAAAAAAAAAAA']);
  // The same router process sees the change at its next authentication.
  const refused = await h.router.route(request({ auth_token: revoked }));
  assert.equal(refused.outcome, 'rejected');
  assert.equal(refused.error_code, 'AUTH_REVOKED');
  const record = h.ledger.get(refused.exchange_entry_id);
  assert.equal(record?.event_type, 'PROMPT_REJECTED');
  assert.equal(record?.metadata.error_code, 'AUTH_REVOKED');
  assert.equal((await h.router.route(request({ auth_token: kept }))).outcome, 'success');
  assert.equal(h.provider.calls.length, 2);
});

test('a token minted without a jti keeps working and is revoked by its digest', async (t) => {
  const { h, writeList } = setup(t);
  const nowS = Math.floor(h.now.ms / 1000);
  const old = issueToken({ sub: 'AGENT-1', scopes: ['route:*'], iat: nowS, exp: nowS + 600 }, KEYS);
  assert.equal((await h.router.route(request({ auth_token: old }))).outcome, 'success');
  assert.equal(tokenKeyId(old), tokenDigest(old));
  writeList([tokenDigest(old)]);
  assert.equal((await h.router.route(request({ auth_token: old }))).error_code, 'AUTH_REVOKED');
  // A token with a jti is also named by its digest: revoking either id cuts it off.
  const withId = issueToken(
    { sub: 'AGENT-1', scopes: ['route:*'], iat: nowS, exp: nowS + 600, jti: 'CCCCCCCCCCCCCCCCCCCCCC' },
    KEYS,
  );
  assert.equal(tokenKeyId(withId), 'CCCCCCCCCCCCCCCCCCCCCC');
  writeList([tokenDigest(withId)]);
  assert.equal((await h.router.route(request({ auth_token: withId }))).error_code, 'AUTH_REVOKED');
  assert.equal((await h.router.route(request({ auth_token: old }))).outcome, 'success');
});

/** The other spellings of a token whose mac's last character differs only in the two bits the decoder drops. */
function respellings(token: string): string[] {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const last = alphabet.indexOf(token.slice(-1));
  return [0, 1, 2, 3]
    .map((low) => (last & ~3) | low)
    .filter((i) => i !== last)
    .map((i) => `${token.slice(0, -1)}${alphabet[i]}`);
}

test('a revoked token without a jti cannot come back under another spelling of its mac', async (t) => {
  const { h, writeList, claims } = setup(t);
  const old = issueToken(claims(), KEYS);
  const others = respellings(old);
  assert.equal(others.length, 3);
  for (const other of others)
    assert.deepEqual(
      Buffer.from(other.split('.')[2] as string, 'base64url'),
      Buffer.from(old.split('.')[2] as string, 'base64url'),
    );
  writeList([tokenDigest(old)]);
  assert.equal((await h.router.route(request({ auth_token: old }))).error_code, 'AUTH_REVOKED');
  for (const other of others) {
    const response = await h.router.route(request({ auth_token: other }));
    assert.equal(response.outcome === 'success' ? 'success' : response.error_code, 'AUTH_MALFORMED', other);
  }
  assert.equal(h.provider.calls.length, 0);
});

test('model scope: a key naming models is refused for any other model; model:* and route-only keys are not limited', async (t) => {
  const { h, claims } = setup(t);
  const scoped = issueToken(claims({ scopes: ['route:*', 'model:mock-model-1'] }), KEYS);
  assert.equal((await h.router.route(request({ auth_token: scoped }))).outcome, 'success');
  const other = await h.router.route(request({ auth_token: scoped, model_id: 'mock-model-2' }));
  assert.equal(other.error_code, 'AUTH_MODEL_SCOPE');
  assert.match(other.error_message ?? '', /mock-model-2/);
  assert.equal(h.ledger.get(other.exchange_entry_id)?.event_type, 'PROMPT_REJECTED');
  assert.equal(
    (
      await h.router.route(
        request({ auth_token: issueToken(claims({ scopes: ['route:*', 'model:*'] }), KEYS), model_id: 'mock-model-2' }),
      )
    ).outcome,
    'success',
  );
  assert.equal(
    (await h.router.route(request({ auth_token: issueToken(claims(), KEYS), model_id: 'mock-model-2' }))).outcome,
    'success',
  );
  // A model scope never stands in for a contract scope.
  assert.equal(
    (await h.router.route(request({ auth_token: issueToken(claims({ scopes: ['model:*'] }), KEYS) }))).error_code,
    'AUTH_SCOPE',
  );
});

test('a revocation list that cannot be trusted refuses every key (AUTH_REVOCATION_LIST_INVALID), and recovers when fixed', async (t) => {
  const { h, list, root, claims, writeList } = setup(t);
  const token = issueToken(claims({ jti: 'DDDDDDDDDDDDDDDDDDDDDD' }), KEYS);
  const tampered: Array<[string, () => void]> = [
    ['not JSON', () => writeFileSync(list, '{"schema_version": "1", "revoked": [')],
    ['an empty file', () => writeFileSync(list, '')],
    ['the wrong shape', () => writeFileSync(list, JSON.stringify({ schema_version: '1', revoked: 'all' }))],
    [
      'an entry that is not a key id',
      () =>
        writeFileSync(
          list,
          JSON.stringify({ schema_version: '1', revoked: [{ key_id: '*', revoked_at: 'x', reason: null }] }),
        ),
    ],
    ['an unknown version', () => writeFileSync(list, JSON.stringify({ schema_version: '2', revoked: [] }))],
    [
      'a symlink',
      () => {
        rmSync(list, { force: true });
        writeFileSync(join(root, 'elsewhere.json'), JSON.stringify({ schema_version: '1', revoked: [] }));
        symlinkSync(join(root, 'elsewhere.json'), list);
      },
    ],
    [
      'a directory',
      () => {
        rmSync(list, { force: true });
        mkdirSync(list);
      },
    ],
    [
      'a FIFO',
      () => {
        rmSync(list, { recursive: true, force: true });
        mkfifoSync(list);
      },
    ],
  ];
  for (const [what, tamper] of tampered) {
    rmSync(list, { recursive: true, force: true });
    tamper();
    const res = await h.router.route(request({ auth_token: token }));
    assert.equal(res.error_code, 'AUTH_REVOCATION_LIST_INVALID', what);
    assert.equal(h.ledger.get(res.exchange_entry_id)?.event_type, 'PROMPT_REJECTED', what);
  }
  rmSync(list, { recursive: true, force: true });
  writeList([]);
  assert.equal((await h.router.route(request({ auth_token: token }))).outcome, 'success');
  assert.equal(h.provider.calls.length, 1);
});
