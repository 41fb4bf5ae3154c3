// Routing cooldowns shared by gateway hosts on one PostgreSQL database: a 429 with retry-after one host sees rests
// that deployment on the other two within a poll, until the retry-after has passed (one injected clock).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { createDatabase, pgSkip, startPgServer, type PgServer } from '../../scripts/lib/pg-server.js';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';
import type { RoutingConfig } from '../../staging/PKG-ROUTER-001/HOT/router/routing/types.js';

const { BreakerRegistry } =
  await fromDevRoot<typeof import('../../staging/PKG-ROUTER-001/HOT/router/breaker.js')>('HOT/router/breaker.js');
const { Resolver } = await fromDevRoot<typeof import('../../staging/PKG-ROUTER-001/HOT/router/routing/resolver.js')>(
  'HOT/router/routing/resolver.js',
);
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
const deployment = (id: string) => ({
  id,
  provider: 'anthropic',
  base_url: `http://127.0.0.1/${id}`,
  credential_env: `KEY_${id.toUpperCase()}`,
  model: `model-${id}`,
  weight: 1,
  rpm: null,
  tpm: null,
  region: null,
});
const CONFIG: RoutingConfig = {
  deployments: [deployment('a'), deployment('b')],
  aliases: { m: { targets: [['a'], ['b']], strategy: 'weighted' } },
  fallback_on: ['rate_limited'],
  cooldown_ms: 5000,
};
const rateLimited = {
  kind: 'rate_limited',
  error_code: 'RATE_LIMITED',
  status: 429,
  retryable: true,
  retry_after_ms: 2000,
  message: 'rate limited',
  after_success: false,
};

function host() {
  const breakers = new BreakerRegistry({ failure_threshold: 3, reset_timeout_ms: 30_000, half_open_probes: 1 }, clock);
  return new Resolver({
    config: CONFIG,
    providers: new Map([
      ['a', 'anthropic'],
      ['b', 'anthropic'],
    ]),
    providerId: (p: string) => p,
    breakers,
    clock,
    random: Math.random,
  });
}

const firstPick = (r: ReturnType<typeof host>): string => {
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
    while (
      firstPick(hosts[1] as ReturnType<typeof host>) === 'a' ||
      firstPick(hosts[2] as ReturnType<typeof host>) === 'a'
    ) {
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
