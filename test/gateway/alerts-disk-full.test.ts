// The alert outbox on a disk that fills: an alert that could not be written is kept in memory and written once
// space is back, then delivered — not lost for the life of the process (its id is remembered, so the next crossing
// of the same condition would not queue it again).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statfsSync, unlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AlertDispatcher } from '../../staging/PKG-GATEWAY-001/HOT/gateway/alerts/dispatcher.js';
import { AlertOutbox } from '../../staging/PKG-GATEWAY-001/HOT/gateway/alerts/outbox.js';

async function until(what: string, check: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('an alert the full disk refused is written and delivered once space is back', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-alerts-full-'));
  const mount = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir], { encoding: 'utf8' });
  const cleanup: (() => unknown)[] = [];
  // One hook, in order: the outbox's file must be closed before the tmpfs can be unmounted.
  t.after(async () => {
    for (const step of cleanup.reverse()) await step();
    spawnSync('umount', [dir]);
    rmSync(dir, { recursive: true, force: true });
  });
  if (mount.status !== 0) {
    t.skip(`cannot mount a tmpfs here (${`${mount.stderr || mount.error?.message || ''}`.trim()})`);
    return;
  }
  const got: string[] = [];
  const server = createServer((req, res) => {
    got.push(String(req.headers['x-cplane-alert-id']));
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.push(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  const outbox = new AlertOutbox(join(dir, 'alerts.sqlite'), 100);
  const dispatcher = new AlertDispatcher({
    outbox,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    secret: 'alert-secret-0123456789abcdef',
    record: async () => undefined,
    retryMinMs: 50,
    retryMaxMs: 200,
  });
  cleanup.push(() => {
    dispatcher.close();
    outbox.close();
  });
  dispatcher.start();
  const filler = join(dir, 'filler');
  const stat = statfsSync(dir);
  writeFileSync(filler, Buffer.alloc(stat.bavail * stat.bsize));
  const id = 'budget_exhausted/key///team-full/2026-01-01';
  dispatcher.enqueue({ id, type: 'budget_exhausted', occurred_at: '2026-01-01T00:00:00.000Z', detail: {} });
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(outbox.pending(), 0, 'the full disk refused the outbox write');
  assert.deepEqual(got, []);
  unlinkSync(filler);
  await until('the alert delivered', () => dispatcher.sent > 0);
  assert.deepEqual(got, [id]);
  assert.equal(dispatcher.sent, 1);
});
