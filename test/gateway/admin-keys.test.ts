// The key admin API on a gateway (SQLite root, the gateway in this process on the root's own code, its clock
// injected): a key issued over the API works at once; after `rotate` with 60 s grace the old key works until t+60 s
// and is refused after; the inventory lists both with their spend; KEY_ISSUED / KEY_ROTATED never hold the key.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { openGateway as OpenGateway, OpenedGateway } from '../../staging/PKG-GATEWAY-001/HOT/gateway/open.js';
import type { loadGatewayConfig as LoadGatewayConfig } from '../../staging/PKG-GATEWAY-001/HOT/gateway/settings.js';
import { bootstrapSignedRoot } from '../lib/signed-root.js';
import { AUTH_SECRET, cli, issueKey, KEYS, ledgerEntries } from './harness.js';
import { startUpstream, type Upstream } from './upstream.js';

let work: string;
let root: string;
let upstream: Upstream;
let served: OpenedGateway;
let url: string;
let now = Date.now();
let admin: string;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'cp-admin-keys-'));
  root = join(work, 'root');
  bootstrapSignedRoot(join(work, 'build'), root);
  upstream = await startUpstream(KEYS);
  // The root's own modules, as `cplane serve` loads them (one copy of each class the gateway checks against).
  const hot = (rel: string) => import(pathToFileURL(join(root, 'HOT', rel)).href);
  const { openGateway } = (await hot('gateway/open.js')) as { openGateway: typeof OpenGateway };
  const { loadGatewayConfig } = (await hot('gateway/settings.js')) as { loadGatewayConfig: typeof LoadGatewayConfig };
  const env = {
    ...process.env,
    CPLANE_AUTH_SECRET: AUTH_SECRET,
    ANTHROPIC_BASE_URL: upstream.url,
    ANTHROPIC_API_KEY: KEYS.anthropic,
    OPENAI_BASE_URL: upstream.url,
    OPENAI_API_KEY: KEYS.openai,
  };
  // The gateways' clock starts as they open: keys the harness signs with the real clock are then not from its
  // future, however long the bootstrap above took on a loaded machine.
  now = Date.now();
  served = await openGateway(root, env, { ...loadGatewayConfig(root), clock: () => now }, () => {});
  const address = await served.gateway.listen('127.0.0.1', 0);
  url = `http://127.0.0.1:${address.port}`;
  admin = issueKey('AGENT-OPERATOR', ['keys:admin']);
});
after(async () => {
  await served?.gateway.drain();
  await served?.close();
  await upstream?.close();
  rmSync(work, { recursive: true, force: true });
});

async function api(
  method: string,
  path: string,
  token: string | null,
  body?: unknown,
): Promise<{ status: number; json: Record<string, unknown>; text: string; headers: Headers }> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(token === null ? {} : { authorization: `Bearer ${token}` }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return {
    status: res.status,
    json: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>),
    text,
    headers: res.headers,
  };
}

async function message(token: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': token,
      'anthropic-version': '2023-06-01',
      'x-cplane-session': 'SES-ADMIN-KEYS',
    },
    body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] }),
  });
  return { status: res.status, text: await res.text() };
}

interface Listed {
  key_id: string;
  agent: string;
  scopes: string[];
  budget_scope: string | null;
  state: string;
  rotated_from: string | null;
  rotated_to: string | null;
  revoked_at: string | null;
  last_used_at: string | null;
  created_at: string;
  expires_at: string;
  spend: { tokens: number; cost: number } | null;
}

const listed = async (): Promise<Listed[]> => {
  const r = await api('GET', '/admin/keys', admin);
  assert.equal(r.status, 200, r.text);
  return r.json.keys as Listed[];
};

test('the key admin API needs a keys:admin key', async () => {
  assert.equal((await api('GET', '/admin/keys', null)).status, 401);
  const route = issueKey('AGENT-ROUTE');
  const refused = await api('POST', '/admin/keys', route, { agent: 'X' });
  assert.equal(refused.status, 401);
  assert.match(refused.text, /keys:admin/);
});

test('a bad request is refused with the field it names; an unknown key id is 404', async () => {
  const bad = await api('POST', '/admin/keys', admin, { agent: 'A', scopes: ['admin:*'] });
  assert.equal(bad.status, 400, bad.text);
  assert.equal((bad.json.error as { code: string }).code, 'ERR_KEY_REQUEST_INVALID');
  const ttl = await api('POST', '/admin/keys', admin, { agent: 'A', ttl_s: 0 });
  assert.equal(ttl.status, 400);
  assert.equal((await api('POST', '/admin/keys/AAAAAAAAAAAAAAAAAAAAAA/rotate', admin, { grace_s: 1 })).status, 404);
  assert.equal((await api('DELETE', '/admin/keys/AAAAAAAAAAAAAAAAAAAAAA', admin)).status, 404);
  assert.equal((await api('PUT', '/admin/keys', admin, {})).status, 405);
  assert.equal((await api('DELETE', '/admin/keys', admin)).status, 405);
  assert.equal((await api('GET', '/admin/keys/AAAAAAAAAAAAAAAAAAAAAA/rotate', admin)).status, 405);
  assert.equal((await api('GET', '/admin/keys/a%2F..%2Fb', admin)).status, 404, 'not a key id path');
  const unknownField = await api('POST', '/admin/keys', admin, { agent: 'A', admin: true });
  assert.equal(unknownField.status, 400);
  assert.match((unknownField.json.error as { message: string }).message, /unknown field "admin"/);
  const grace = await api('POST', '/admin/keys/AAAAAAAAAAAAAAAAAAAAAA/rotate', admin, { grace_s: -1 });
  assert.equal(grace.status, 400, 'the grace is checked before the key is looked up');
  const notJson = await fetch(`${url}/admin/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
    body: '{"agent":',
  });
  assert.equal(notJson.status, 400);
  const huge = await fetch(`${url}/admin/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
    body: JSON.stringify({ agent: 'x'.repeat(100_000) }),
  });
  assert.equal(huge.status, 413);
});

test('issue, use, rotate with 60 s grace (clock injected), list, delete', async () => {
  const issued = await api('POST', '/admin/keys', admin, {
    agent: 'AGENT-TEAM',
    scopes: ['route:*'],
    ttl_s: 86_400,
    budget_scope: 'team-a',
  });
  assert.equal(issued.status, 201, issued.text);
  assert.equal(issued.headers.get('cache-control'), 'no-store');
  const oldToken = issued.json.token as string;
  const oldId = issued.json.key_id as string;
  assert.equal((await message(oldToken)).status, 200, 'a key issued over the API works at once');

  const t0 = now;
  const rotated = await api('POST', `/admin/keys/${oldId}/rotate`, admin, { grace_s: 60 });
  assert.equal(rotated.status, 200, rotated.text);
  const newToken = rotated.json.token as string;
  const newId = rotated.json.key_id as string;
  assert.notEqual(newId, oldId);
  assert.equal(rotated.json.old_valid_until, new Date(t0 + 60_000).toISOString());
  assert.equal((await message(newToken)).status, 200);
  assert.equal((await message(oldToken)).status, 200, 'the old key works in its grace');
  now = t0 + 59_000;
  assert.equal((await message(oldToken)).status, 200, 'still at t+59 s');
  now = t0 + 60_000;
  const late = await message(oldToken);
  assert.equal(late.status, 403, late.text);
  assert.match(late.text, /revoked/);
  assert.equal((await message(newToken)).status, 200, 'the new key goes on');

  const keys = await listed();
  const oldView = keys.find((k) => k.key_id === oldId);
  const newView = keys.find((k) => k.key_id === newId);
  assert.ok(oldView && newView, JSON.stringify(keys));
  assert.equal(oldView.state, 'revoked');
  assert.equal(oldView.rotated_to, newId);
  assert.equal(oldView.revoked_at, new Date(t0 + 60_000).toISOString());
  assert.equal(newView.state, 'active');
  assert.equal(newView.rotated_from, oldId);
  assert.equal(newView.agent, 'AGENT-TEAM');
  assert.deepEqual(newView.scopes, ['route:*']);
  assert.equal(newView.budget_scope, 'team-a', 'the new key is charged where the old one was');
  assert.equal(newView.last_used_at, new Date(now).toISOString());
  assert.ok(newView.spend !== null && newView.spend.tokens > 0 && newView.spend.cost > 0, JSON.stringify(newView));
  assert.deepEqual(newView.spend, oldView.spend, 'one budget scope, one spend');

  const deleted = await api('DELETE', `/admin/keys/${newId}`, admin);
  assert.equal(deleted.status, 200, deleted.text);
  assert.equal((await message(newToken)).status, 403, 'deleted: refused at once');
  assert.equal((await listed()).find((k) => k.key_id === newId)?.state, 'revoked');

  // The records: KEY_ISSUED twice, KEY_ROTATED once, KEY_REVOKED for both; no record holds a key.
  const entries = ledgerEntries(root);
  const of = (type: string) => entries.filter((e) => e.event_type === type);
  assert.deepEqual(
    of('KEY_ISSUED')
      .map((e) => e.metadata.key_id)
      .filter((id) => id === oldId || id === newId),
    [oldId, newId],
  );
  const rotation = of('KEY_ROTATED').find((e) => e.metadata.key_id === oldId);
  assert.equal(rotation?.metadata.new_key_id, newId);
  assert.equal(rotation?.metadata.grace_s, 60);
  const exported = cli(['ledger', 'export', '--root', root]).stdout;
  for (const token of [oldToken, newToken, admin]) {
    assert.ok(!exported.includes(token), 'no key in the ledger');
    assert.ok(!exported.includes(token.split('.')[2] as string), 'nor its signature');
  }
  const verified = cli(['ledger', 'verify', '--root', root]);
  assert.equal(verified.status, 0, verified.stderr);
});

test('the CLI lists the same inventory, and rotates and issues into it', async () => {
  const cliList = cli(['token', 'list', '--root', root, '--json']);
  assert.equal(cliList.status, 0, cliList.stderr);
  const fromCli = (JSON.parse(cliList.stdout) as { keys: Listed[] }).keys.map((k) => k.key_id).sort();
  const fromApi = (await listed()).map((k) => k.key_id).sort();
  assert.deepEqual(fromCli, fromApi);
  const issued = cli(['token', 'issue', '--agent', 'AGENT-CLI', '--root', root, '--json'], {
    CPLANE_AUTH_SECRET: AUTH_SECRET,
  });
  assert.equal(issued.status, 0, issued.stderr);
  const { token, claims } = JSON.parse(issued.stdout) as { token: string; claims: { jti: string } };
  assert.ok(
    (await listed()).some((k) => k.key_id === claims.jti),
    'a key the CLI issues joins the inventory',
  );
  const rotated = cli(['token', 'rotate', '--key-id', claims.jti, '--grace', '0', '--root', root, '--json'], {
    CPLANE_AUTH_SECRET: AUTH_SECRET,
  });
  assert.equal(rotated.status, 0, rotated.stderr);
  const next = JSON.parse(rotated.stdout) as { token: string; key_id: string };
  assert.equal((await message(next.token)).status, 200);
  assert.equal((await message(token)).status, 403, 'grace 0: the old key is refused at once');
});
