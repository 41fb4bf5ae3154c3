// Routing cooldowns shared by gateway hosts on one PostgreSQL database: a 429 with retry-after one host sees rests
// that deployment on the other two within a poll, until the retry-after has passed (one injected clock).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { createDatabase, pgSkip, startPgServer, type PgServer } from '../../scripts/lib/pg-server.js';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';
import { aliasConfig, deployment, resolverHost, type ResolverHost } from './resolver-hosts.js';

const { SharedCooldowns } = await fromDevRoot<
  typeof import('../../staging/PKG-ROUTER-001/HOT/router/pg/shared-cooldowns.js')
>('HOT/router/pg/shared-cooldowns.js');

const skip = pgSkip();
let server: PgServer | undefined;
before(async () => {
  if (skip === false) server = await startPgServer();
});
after(() => server?.stop());

const now = { ms: 1_800_000_000_000 };
const clock = (): number => now.ms;
const CONFIG = aliasConfig([deployment('a'), deployment('b')]);
const rateLimited = {
  kind: 'rate_limited',
  error_code: 'RATE_LIMITED',
  status: 429,
  retryable: true,
  retry_after_ms: 2000,
  message: 'rate limited',
  after_success: false,
};

const host = () => resolverHost(CONFIG, clock);

const firstPick = (r: ResolverHost): string => {
  const plan = r.plan('m', () => true);
  assert.ok(plan);
  assert.equal(plan.start(), null);
  const picked = plan.target.deployment;
  plan.finish(0);
  return picked;
};

test('three hosts: A answers one host 429 (retry-after 2 s); the other two stop using A, then take it again', {
  skip,
}, async () => {
  const url = await createDatabase(server as PgServer, 'cooldowns_1');
  const hosts = [host(), host(), host()];
  const pools = hosts.map(() => new pg.Pool({ connectionString: url, max: 2 }));
  const shared = await Promise.all(
    hosts.map((r, i) => SharedCooldowns.start(pools[i] as pg.Pool, r, { pollMs: 50, clock, host: `h${i}` })),
  );
  try {
    for (const r of hosts) assert.equal(firstPick(r), 'a', 'A first everywhere');
    const plan = hosts[0]?.plan('m', () => true);
    assert.equal(plan?.start(), null);
    assert.equal(plan?.next(rateLimited), true, 'host 0 falls back to B');
    assert.equal(plan?.target.deployment, 'b');
    plan?.finish(0);
    // Within a poll the other hosts have adopted the cooldown (a bounded wait, never a fixed sleep).
    const deadline = Date.now() + 10_000;
    while (firstPick(hosts[1] as ResolverHost) === 'a' || firstPick(hosts[2] as ResolverHost) === 'a') {
      assert.ok(Date.now() < deadline, 'the cooldown reached the other hosts');
      await new Promise((r) => setTimeout(r, 20));
    }
    for (const r of hosts) for (let i = 0; i < 10; i += 1) assert.equal(firstPick(r), 'b', 'A rests on every host');
    const rows = await pools[0]?.query<{ key: string; host: string }>('SELECT key, host FROM cplane_cooldowns');
    assert.deepEqual(rows?.rows, [{ key: 'a', host: 'h0' }]);
    now.ms += 2000;
    for (const r of hosts) assert.equal(firstPick(r), 'a', 'after the retry-after, A again on every host');
  } finally {
    for (const s of shared) await s.stop();
    for (const p of pools) await p.end();
  }
});
