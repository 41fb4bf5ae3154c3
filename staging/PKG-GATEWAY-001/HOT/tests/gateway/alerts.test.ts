// The alert webhook: a receiver on 127.0.0.1 that refuses connections for a while, across a restart of the sender,
// then answers, gets every alert once, signed with HMAC-SHA256 over the raw body; each delivery is recorded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AppendInput } from '#kernel/ledger/index.js';
import { AlertDispatcher } from '../../gateway/alerts/dispatcher.js';
import { type Alert, AlertOutbox } from '../../gateway/alerts/outbox.js';
import { openAlerts } from '../../gateway/alerts/open-alerts.js';
import { conditionOf, judge } from '../../gateway/alerts/pg-claims.js';
import { BreakerRegistry } from '#router/breaker.js';

const SECRET = 'alert-secret-0123456789abcdef';

interface Received {
  id: string;
  body: string;
  signature: string;
}

function receiver(port: number, into: Received[]): Promise<Server> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      into.push({
        id: String(req.headers['x-cplane-alert-id']),
        body: Buffer.concat(chunks).toString('utf8'),
        signature: String(req.headers['x-cplane-signature']),
      });
      res.writeHead(204).end();
    });
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

/** A port nothing listens on (connection refused) until the receiver is started on it. */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

const alert = (id: string, type: Alert['type'] = 'budget_warn'): Alert => ({
  id,
  type,
  occurred_at: '2026-01-31T23:59:00.000Z',
  detail: { scope: 'key', scope_id: 'team-a' },
});

async function until(what: string, check: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('a webhook down (connection refused) across a restart gets every alert once when it is up, signed', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-alerts-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'alerts.sqlite');
  const port = await freePort();
  const records: AppendInput[] = [];
  const open = () => {
    const outbox = new AlertOutbox(path, 100);
    const dispatcher = new AlertDispatcher({
      outbox,
      url: `http://127.0.0.1:${port}/hook?token=t0ps3cret`,
      secret: SECRET,
      record: async (r) => records.push(...r),
      retryMinMs: 20,
      retryMaxMs: 100,
      timeoutMs: 2000,
    });
    dispatcher.start();
    return { outbox, dispatcher };
  };
  let sender = open();
  const started = performance.now();
  for (let i = 0; i < 3; i += 1) sender.dispatcher.enqueue(alert(`budget_warn/key///team-${i}/2026-01-01`));
  sender.dispatcher.enqueue(alert('budget_warn/key///team-0/2026-01-01'));
  sender.dispatcher.enqueue(alert('breaker_opened/mock/m1/2026-01-31T23:59:00.000Z', 'breaker_opened'));
  // enqueue is the call path's part: it only queues.
  assert.ok(performance.now() - started < 1000);
  await until('failed attempts', () => sender.outbox.due(Date.now() + 1e9, 100).some((p) => p.attempts >= 2));
  assert.equal(sender.dispatcher.sent, 0);
  // A restart while the webhook is still down: the outbox file keeps what is owed.
  sender.dispatcher.close();
  sender.outbox.close();
  sender = open();
  sender.dispatcher.enqueue(alert('budget_warn/key///team-1/2026-01-01'));
  sender.dispatcher.enqueue(alert('budget_exhausted/key///team-1/2026-01-01', 'budget_exhausted'));
  await new Promise((r) => setTimeout(r, 200));
  const got: Received[] = [];
  const server = await receiver(port, got);
  t.after(() => new Promise((resolve) => server.close(resolve)));
  await until('every alert delivered', () => sender.outbox.pending() === 0 && got.length >= 5);
  await new Promise((r) => setTimeout(r, 300));
  assert.deepEqual(got.map((g) => g.id).sort(), [
    'breaker_opened/mock/m1/2026-01-31T23:59:00.000Z',
    'budget_exhausted/key///team-1/2026-01-01',
    'budget_warn/key///team-0/2026-01-01',
    'budget_warn/key///team-1/2026-01-01',
    'budget_warn/key///team-2/2026-01-01',
  ]);
  for (const g of got) {
    assert.equal(g.signature, `sha256=${createHmac('sha256', SECRET).update(g.body).digest('hex')}`);
    assert.equal((JSON.parse(g.body) as Alert).id, g.id);
  }
  assert.deepEqual(
    records.map((r) => [r.event_type, r.submission_id]).sort(),
    got.map((g) => ['ALERT_SENT', g.id]).sort(),
  );
  const sent = records.find((r) => r.submission_id.startsWith('breaker_opened'))?.metadata ?? {};
  assert.ok(Number(sent.attempts) >= 2, 'delivered after retries');
  assert.equal(sent.webhook, `http://127.0.0.1:${port}`, 'no path or query');
  assert.ok(!JSON.stringify(records).includes('t0ps3cret') && !JSON.stringify(records).includes(SECRET));
  // Sent once: the same alert enqueued again after delivery (another process, the same period) is not sent again.
  sender.dispatcher.close();
  sender.outbox.close();
  sender = open();
  sender.dispatcher.enqueue(alert('budget_warn/key///team-0/2026-01-01'));
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(got.length, 5);
  sender.dispatcher.close();
  sender.outbox.close();
});

test('a full outbox drops new alerts and counts them', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-alerts-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const outbox = new AlertOutbox(join(dir, 'alerts.sqlite'), 2);
  outbox.add([alert('a'), alert('b'), alert('c')], Date.now());
  assert.equal(outbox.pending(), 2);
  assert.equal(outbox.dropped, 1);
  outbox.close();
});

test('a breaker opening and closing and a quarantined spool entry are alerts; a missing secret refuses to start', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'cp-alerts-root-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const port = await freePort();
  const settings = { url: `http://127.0.0.1:${port}/`, secret_env: 'ALERT_SECRET', retry_min_ms: 20 };
  assert.throws(() => openAlerts(root, settings, {}, Date.now), { code: 'ERR_GATEWAY_CONFIG_INVALID' });
  const got: Received[] = [];
  const server = await receiver(port, got);
  t.after(() => new Promise((resolve) => server.close(resolve)));
  let now = Date.UTC(2026, 0, 31, 12);
  const alerts = openAlerts(root, settings, { ALERT_SECRET: SECRET }, () => now);
  assert.ok(alerts);
  const records: AppendInput[] = [];
  alerts.recordTo(async (r) => records.push(...r));
  const breakers = new BreakerRegistry(
    { failure_threshold: 2, reset_timeout_ms: 1000, half_open_probes: 1 },
    () => now,
  );
  breakers.onTransition(alerts.breakerWatch);
  const breaker = breakers.for('mock', 'm1');
  breaker.recordFailure();
  breaker.recordFailure();
  now += 2000;
  const pass = breaker.pass();
  assert.ok(pass);
  breaker.recordSuccess(pass);
  alerts.quarantineWatch(['/somewhere/HOT/registries/router-spool-quarantine/ex-1.json']);
  await until('three alerts', () => got.length >= 3);
  assert.deepEqual(got.map((g) => (JSON.parse(g.body) as Alert).type).sort(), [
    'breaker_closed',
    'breaker_opened',
    'spool_quarantined',
  ]);
  assert.ok(!got.some((g) => g.body.includes('/somewhere')), 'the root path stays local');
  await until('three records', () => records.length >= 3);
  alerts.close();
});

test('shared claims: one condition per budget alert and per breaker; who sends is judged on the condition row', () => {
  const opened = (at: string): Alert => ({
    id: `breaker_opened/anthropic/m/${at}`,
    type: 'breaker_opened',
    occurred_at: at,
    detail: { breaker: 'anthropic/m', state: 'OPEN', consecutive_failures: 3 },
  });
  const warn: Alert = { id: 'budget_warn/session/S//', type: 'budget_warn', occurred_at: 't', detail: {} };
  assert.equal(conditionOf(warn), warn.id);
  assert.equal(conditionOf(opened('1')), conditionOf(opened('2')), "two hosts' openings: one condition");
  assert.equal(conditionOf({ ...opened('3'), type: 'breaker_closed' }), 'breaker/anthropic/m');
  const row = (type: string, host: string, lease: number, sent: number | null) => ({
    alert_id: 'x',
    type,
    host,
    lease_until_ms: String(lease),
    sent_at_ms: sent === null ? null : String(sent),
  });
  const now = 10_000;
  // The same type: done once sent; held while another host's lease runs; taken over once it ran out.
  assert.deepEqual(judge(row('breaker_opened', 'A', 0, 5), opened('2'), 'B', now), { kind: 'done' });
  assert.deepEqual(judge(row('breaker_opened', 'A', 20_000, null), opened('2'), 'B', now), {
    kind: 'held',
    retryAt: 20_000,
  });
  assert.deepEqual(judge(row('breaker_opened', 'A', 9_000, null), opened('2'), 'B', now), { kind: 'mine' });
  assert.deepEqual(judge(row('breaker_opened', 'B', 20_000, null), opened('2'), 'B', now), { kind: 'mine' });
  // The breaker moved on (closed after an opening was sent): the closing is new; not while the opening is in flight.
  const closed = { ...opened('4'), type: 'breaker_closed' as const };
  assert.deepEqual(judge(row('breaker_opened', 'A', 20_000, 5), closed, 'B', now), { kind: 'mine' });
  assert.deepEqual(judge(row('breaker_opened', 'A', 20_000, null), closed, 'B', now), {
    kind: 'held',
    retryAt: 20_000,
  });
});
