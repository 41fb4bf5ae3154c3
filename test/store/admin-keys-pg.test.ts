// The key admin API on three gateway hosts sharing one PostgreSQL database (in this process, on the root's own code,
// one injected clock): a key issued over one host's API works at once on all three; after `rotate` with 60 s grace
// the old key works until t+60 s and is refused on every host after; every host lists both keys.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createDatabase, pgSkip, startPgServer, type PgServer } from '../../scripts/lib/pg-server.js';
import type { openGateway as OpenGateway, OpenedGateway } from '../../staging/PKG-GATEWAY-001/HOT/gateway/open.js';
import type { loadGatewayConfig as LoadGatewayConfig } from '../../staging/PKG-GATEWAY-001/HOT/gateway/settings.js';
import { bootstrapSignedRoot } from '../lib/signed-root.js';
import { AUTH_SECRET, cli, issueKey, KEYS } from '../gateway/harness.js';
import { startUpstream, type Upstream } from '../gateway/upstream.js';

const skip = pgSkip();

let server: PgServer | undefined;
let storeUrl = '';
let work = '';
let upstream: Upstream;
const hosts: { gateway: OpenedGateway; url: string }[] = [];
let now = Date.now();
let admin = '';

async function message(url: string, token: string): Promise<number> {
  const res = await fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': token,
      'anthropic-version': '2023-06-01',
      'x-cplane-session': 'SES-ADMIN-PG',
    },
    body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] }),
  });
  await res.text();
  return res.status;
}

async function admin_(url: string, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}` },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  assert.ok(res.ok, `${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

/** Every host answers `status` for the token: a revocation reaches the others within their refresh interval. */
async function onEveryHost(token: string, status: number): Promise<void> {
  for (const { url } of hosts) {
    const deadline = Date.now() + 5000;
    let got = await message(url, token);
    while (got !== status && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      got = await message(url, token);
    }
    assert.equal(got, status, `host ${url}`);
  }
}

describe('the key admin API on three PostgreSQL-backed hosts', { skip, concurrency: false }, () => {
  before(async () => {
    server = await startPgServer();
    storeUrl = await createDatabase(server, 'admin_keys');
    work = mkdtempSync(join(tmpdir(), 'cp-admin-pg-'));
    const first = join(work, 'root-0');
    bootstrapSignedRoot(join(work, 'build'), first);
    cpSync(first, join(work, 'root-1'), { recursive: true });
    cpSync(first, join(work, 'root-2'), { recursive: true });
    upstream = await startUpstream(KEYS);
    const hot = (rel: string) => import(pathToFileURL(join(first, 'HOT', rel)).href);
    const { openGateway } = (await hot('gateway/open.js')) as { openGateway: typeof OpenGateway };
    const { loadGatewayConfig } = (await hot('gateway/settings.js')) as {
      loadGatewayConfig: typeof LoadGatewayConfig;
    };
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
    for (const i of [0, 1, 2]) {
      const root = join(work, `root-${i}`);
      const settings = { ...loadGatewayConfig(root), store: storeUrl, clock: () => now };
      const gateway = await openGateway(root, env, settings, () => {});
      const address = await gateway.gateway.listen('127.0.0.1', 0);
      hosts.push({ gateway, url: `http://127.0.0.1:${address.port}` });
    }
    admin = issueKey('AGENT-OPERATOR', ['keys:admin']);
  });
  after(async () => {
    for (const { gateway } of hosts) {
      await gateway.gateway.drain();
      await gateway.close();
    }
    await upstream?.close();
    server?.stop();
    if (work !== '') rmSync(work, { recursive: true, force: true });
  });

  test('issued on one host, it works on all three; rotated with 60 s grace, the old key stops on all at t+60 s', async () => {
    const [a, b, c] = hosts.map((h) => h.url) as [string, string, string];
    const issued = await admin_(a, 'POST', '/admin/keys', { agent: 'AGENT-PG', ttl_s: 86_400 });
    const oldToken = issued.token as string;
    const oldId = issued.key_id as string;
    for (const url of [a, b, c]) assert.equal(await message(url, oldToken), 200, `issued on a, used on ${url}`);

    const t0 = now;
    const rotated = await admin_(b, 'POST', `/admin/keys/${oldId}/rotate`, { grace_s: 60 });
    const newToken = rotated.token as string;
    const newId = rotated.key_id as string;
    // Every host has read the scheduled revocation (a poll) and still serves the old key in its grace.
    await new Promise((r) => setTimeout(r, 1500));
    await onEveryHost(oldToken, 200);
    await onEveryHost(newToken, 200);
    now = t0 + 59_000;
    // Each host's copy of the list is judged stale against the jumped clock until its next poll: wait for it.
    await new Promise((r) => setTimeout(r, 1500));
    await onEveryHost(oldToken, 200);
    now = t0 + 60_000;
    await new Promise((r) => setTimeout(r, 1500));
    await onEveryHost(oldToken, 403);
    await onEveryHost(newToken, 200);

    for (const url of [a, b, c]) {
      const keys = (await admin_(url, 'GET', '/admin/keys')).keys as {
        key_id: string;
        state: string;
        rotated_to: string | null;
      }[];
      const old = keys.find((k) => k.key_id === oldId);
      assert.equal(old?.state, 'revoked', url);
      assert.equal(old?.rotated_to, newId);
      assert.equal(keys.find((k) => k.key_id === newId)?.state, 'active', url);
    }
    const verified = cli(['ledger', 'verify', '--store', storeUrl, '--json']);
    assert.equal(verified.status, 0, verified.stdout + verified.stderr);
  });
});
