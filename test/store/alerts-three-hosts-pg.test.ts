// Alerts on three gateway hosts sharing one PostgreSQL database (in this process, on the root's own code): one
// session's budget is exhausted on all three and one breaker opens on each (three openings, three opened_at), while
// the webhook is down; once it is up it gets each condition once — one budget_warn, one budget_exhausted, one
// breaker_opened — not once per host, and the shared ledger holds one ALERT_SENT for each. Every host's outbox ends
// with nothing pending (the hosts that did not send learned from the claims that it was sent).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { createDatabase, pgSkip, startPgServer, type PgServer } from '../../scripts/lib/pg-server.js';
import { entriesFromExport } from '../../scripts/lib/export-entries.js';
import type { openGateway as OpenGateway, OpenedGateway } from '../../staging/PKG-GATEWAY-001/HOT/gateway/open.js';
import type { loadGatewayConfig as LoadGatewayConfig } from '../../staging/PKG-GATEWAY-001/HOT/gateway/settings.js';
import { bootstrapSignedRoot } from '../lib/signed-root.js';
import { AUTH_SECRET, cli, configSet, issueKey, KEYS } from '../gateway/harness.js';
import { startUpstream, type Upstream } from '../gateway/upstream.js';

const skip = pgSkip();
const SECRET = 'webhook-secret-0123456789abcdef';

let server: PgServer | undefined;
let storeUrl = '';
let work = '';
let upstream: Upstream;
let webhook: Server | undefined;
let port = 0;
const hosts: { gateway: OpenedGateway; url: string; root: string }[] = [];
const got: { id: string; type: string }[] = [];

async function ask(url: string, key: string, maxTokens: number): Promise<{ status: number; text: string }> {
  const res = await fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': key,
      'anthropic-version': '2023-06-01',
      'x-cplane-session': 'SES-ALERT-PG',
    },
    body: JSON.stringify({
      model: 'claude-sonnet-4-5',
      max_tokens: maxTokens,
      messages: [{ role: 'user', content: 'Hi' }],
    }),
  });
  return { status: res.status, text: await res.text() };
}

async function until(what: string, check: () => boolean, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Alerts a host's outbox still holds undelivered (HOT/registries/alerts.sqlite). */
function pendingIn(root: string): number {
  const db = new Database(join(root, 'HOT', 'registries', 'alerts.sqlite'), { readonly: true });
  try {
    return db.prepare('SELECT COUNT(*) FROM alert_outbox WHERE sent_at IS NULL').pluck().get() as number;
  } finally {
    db.close();
  }
}

describe('alerts on three PostgreSQL-backed hosts', { skip, concurrency: false }, () => {
  before(async () => {
    server = await startPgServer();
    storeUrl = await createDatabase(server, 'alerts_hosts');
    work = mkdtempSync(join(tmpdir(), 'cp-alerts-pg-'));
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    port = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    const first = join(work, 'root-0');
    bootstrapSignedRoot(join(work, 'build'), first);
    const alerts = {
      url: `http://127.0.0.1:${port}/hooks/cplane`,
      secret_env: 'CPLANE_ALERT_SECRET',
      timeout_ms: 1000,
      retry_min_ms: 50,
      retry_max_ms: 400,
    };
    configSet(first, 'gateway.alerts', JSON.stringify(alerts));
    configSet(first, 'budget.limits.session', '{"default": {"max_tokens": 2500}}');
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
      CPLANE_ALERT_SECRET: SECRET,
      ANTHROPIC_BASE_URL: upstream.url,
      ANTHROPIC_API_KEY: KEYS.anthropic,
      OPENAI_BASE_URL: upstream.url,
      OPENAI_API_KEY: KEYS.openai,
    };
    for (const i of [0, 1, 2]) {
      const root = join(work, `root-${i}`);
      // Each host's clock a second apart: each one's breaker opening is its own (a different opened_at, alert id).
      const settings = { ...loadGatewayConfig(root), store: storeUrl, clock: () => Date.now() + i * 1000 };
      const gateway = await openGateway(root, env, settings, () => {});
      const address = await gateway.gateway.listen('127.0.0.1', 0);
      hosts.push({ gateway, url: `http://127.0.0.1:${address.port}`, root });
    }
  });
  after(async () => {
    for (const { gateway } of hosts) {
      await gateway.gateway.drain();
      await gateway.close();
    }
    await new Promise((resolve) => (webhook ? webhook.close(resolve) : resolve(undefined)));
    await upstream?.close();
    server?.stop();
    if (work !== '') rmSync(work, { recursive: true, force: true });
  });

  test('each condition reaches the webhook once, whichever hosts saw it', async () => {
    const [a, b, c] = hosts as [(typeof hosts)[0], (typeof hosts)[0], (typeof hosts)[0]];
    const key = issueKey('AGENT-ALERT-PG');
    // ~2,150 of 2,500 reserved on host a: past the warn fraction (0.8).
    assert.equal((await ask(a.url, key, 2100)).status, 200);
    // Exhausted, as every host finds it: each queues the same budget_exhausted.
    for (const host of [a, b, c]) {
      const refused = await ask(host.url, key, 3000);
      assert.notEqual(refused.status, 200, host.url);
      assert.match(refused.text, /BUDGET_EXHAUSTED/);
    }
    // One upstream model fails on every host before any has heard of the others' opening: three openings.
    for (const host of hosts) {
      const breaker = host.gateway.opened.router.breakers.for('anthropic', 'claude-sonnet-4-5');
      for (let i = 0; i < 3; i++) breaker.recordFailure();
      assert.equal(breaker.snapshot().state, 'OPEN');
    }
    // The webhook has refused every connection so far (each host tried and let go of its claims); up now.
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(got.length, 0);
    webhook = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string; type: string };
        got.push({ id: body.id, type: body.type });
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((resolve) => webhook?.listen(port, '127.0.0.1', resolve));
    await until('every host done with its alerts', () => hosts.every((h) => pendingIn(h.root) === 0));
    // Anything still on its way would have arrived by now.
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(got.map((g) => g.type).sort(), ['breaker_opened', 'budget_exhausted', 'budget_warn']);
    assert.equal(new Set(got.map((g) => g.id)).size, 3);
    const exported = cli(['ledger', 'export', '--store', storeUrl]);
    assert.equal(exported.status, 0, exported.stderr);
    const sent = entriesFromExport(exported.stdout).filter((e) => e.event_type === 'ALERT_SENT');
    assert.deepEqual(sent.map((e) => e.metadata.alert_id).sort(), got.map((g) => g.id).sort());
  });
});
