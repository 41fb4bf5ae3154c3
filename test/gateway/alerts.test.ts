// Alerts through `cplane serve`: the webhook is down (connection refused) while a session's budget passes its warn
// fraction and is exhausted; calls are answered meanwhile. Once it is up it gets each alert once, signed, and each
// delivery is an ALERT_SENT record in the ledger.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { configSet, issueKey, ledgerEntries, startServed, type Served } from './harness.js';

const SECRET = 'webhook-secret-0123456789abcdef';
let served: Served;
let port: number;
let server: Server | undefined;
const got: { id: string; body: string; signature: string }[] = [];

before(async () => {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  port = (probe.address() as AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
  served = await startServed(
    [],
    (root) => {
      configSet(
        root,
        'gateway.alerts',
        JSON.stringify({
          url: `http://127.0.0.1:${port}/hooks/cplane`,
          secret_env: 'CPLANE_ALERT_SECRET',
          retry_min_ms: 50,
          retry_max_ms: 400,
        }),
      );
      configSet(root, 'budget.limits.session', '{"default": {"max_tokens": 2500}}');
    },
    { CPLANE_ALERT_SECRET: SECRET },
  );
});
after(async () => {
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  await served.cleanup();
});

async function ask(key: string, maxTokens: number): Promise<{ status: number; text: string }> {
  const res = await fetch(`${served.url}/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': key,
      'anthropic-version': '2023-06-01',
      'x-cplane-session': 'SES-ALERT',
    },
    body: JSON.stringify({
      model: 'claude-sonnet-4-5',
      max_tokens: maxTokens,
      messages: [{ role: 'user', content: 'Hi' }],
    }),
  });
  return { status: res.status, text: await res.text() };
}

async function until(what: string, check: () => boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('a webhook down while a budget crosses its marks gets each alert once when it is up; calls are served', async () => {
  const key = issueKey('AGENT-ALERT');
  // ~2,150 of 2,500 reserved: past the warn fraction (0.8) while in flight.
  assert.equal((await ask(key, 2100)).status, 200);
  const refused = await ask(key, 3000);
  assert.notEqual(refused.status, 200);
  assert.match(refused.text, /BUDGET_EXHAUSTED/);
  assert.notEqual((await ask(key, 3000)).status, 200, 'exhausted again: the same alert');
  assert.equal((await ask(key, 2100)).status, 200, 'past the warn fraction again: the same alert');
  // The webhook has refused every connection so far; it comes up now.
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(got.length, 0);
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      got.push({
        id: String(req.headers['x-cplane-alert-id']),
        body: Buffer.concat(chunks).toString('utf8'),
        signature: String(req.headers['x-cplane-signature']),
      });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server?.listen(port, '127.0.0.1', resolve));
  await until('both alerts', () => got.length >= 2);
  await new Promise((r) => setTimeout(r, 1000));
  assert.deepEqual(got.map((g) => g.id).sort(), [
    'budget_exhausted/session/SES-ALERT//',
    'budget_warn/session/SES-ALERT//',
  ]);
  for (const g of got) {
    assert.equal(g.signature, `sha256=${createHmac('sha256', SECRET).update(g.body).digest('hex')}`);
    const body = JSON.parse(g.body) as { type: string; detail: { scope: string; scope_id: string } };
    assert.deepEqual([body.detail.scope, body.detail.scope_id], ['session', 'SES-ALERT']);
  }
  let sent: ReturnType<typeof ledgerEntries> = [];
  await until('ALERT_SENT records', () => {
    sent = ledgerEntries(served.root).filter((e) => e.event_type === 'ALERT_SENT');
    return sent.length >= 2;
  });
  assert.deepEqual(sent.map((e) => e.metadata.alert_id).sort(), got.map((g) => g.id).sort());
  assert.ok(!served.stderr().includes(SECRET) && !JSON.stringify(sent).includes(SECRET));
  // The scrape says the same: two sent, none waiting, none lost.
  const metrics = await fetch(`${served.url}/metrics`, {
    headers: { authorization: `Bearer ${issueKey('AGENT-ALERT-SCRAPER', ['metrics:read'])}` },
  }).then((r) => r.text());
  const sample = (name: string): string | undefined => new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics)?.[1];
  assert.equal(sample('cplane_alerts_sent_total'), '2');
  assert.equal(sample('cplane_alerts_pending'), '0');
  assert.equal(sample('cplane_alerts_dropped_total\\{reason="queue_full"\\}'), '0');
  // And the console's alerts view lists both deliveries, newest first, from the same records.
  const view = (await fetch(`${served.url}/console/api/alerts`, {
    headers: { authorization: `Bearer ${issueKey('AGENT-ALERT-CONSOLE', ['console:read'])}` },
  }).then((r) => r.json())) as { recent_alerts: { id: string; type: string; alert_id: string; attempts: number }[] };
  assert.deepEqual(
    view.recent_alerts.map((a) => [a.id, a.alert_id, a.type]),
    [...sent].reverse().map((e) => [e.id, e.metadata.alert_id, e.metadata.type]),
  );
  assert.ok(view.recent_alerts.every((a) => a.attempts >= 1));
});
