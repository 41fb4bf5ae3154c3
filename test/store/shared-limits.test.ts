// Routing RPM/TPM counted once across gateway hosts on one PostgreSQL database: three hosts' picks of a deployment
// with an RPM of 3 take it three times in all, the fourth pick on any host goes to the next deployment; tokens one
// host's call used count against the TPM on the others; the sliding minute frees the deployment again (one
// injected clock).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { createDatabase, pgSkip, startPgServer, type PgServer } from '../../scripts/lib/pg-server.js';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';
import type { RoutingConfig } from '../../staging/PKG-ROUTER-001/HOT/router/routing/types.js';
import { aliasConfig, deployment, resolverHost, type ResolverHost } from './resolver-hosts.js';

const { SharedRateCounts } = await fromDevRoot<
  typeof import('../../staging/PKG-ROUTER-001/HOT/router/pg/shared-limits.js')
>('HOT/router/pg/shared-limits.js');

const skip = pgSkip();
let server: PgServer | undefined;
before(async () => {
  if (skip === false) server = await startPgServer();
});
after(() => server?.stop());

const now = { ms: 1_800_000_000_000 };
const clock = (): number => now.ms;
type Host = ResolverHost;

/** One call on a host: the deployment it went to ('' when refused), ending with `tokens` used. */
async function call(r: Host, tokens = 0): Promise<string> {
  const plan = r.plan('m', () => true);
  assert.ok(plan);
  if ((await plan.start()) !== null) return '';
  const picked = plan.target.deployment;
  plan.finish(tokens);
  return picked;
}

async function threeHosts(
  name: string,
  config: RoutingConfig,
  run: (hosts: Host[], pools: pg.Pool[]) => Promise<void>,
) {
  const url = await createDatabase(server as PgServer, name);
  const hosts = [resolverHost(config, clock), resolverHost(config, clock), resolverHost(config, clock)];
  const pools = hosts.map(() => new pg.Pool({ connectionString: url, max: 2 }));
  const shared = await Promise.all(hosts.map((r, i) => SharedRateCounts.start(pools[i] as pg.Pool, r, { clock })));
  try {
    await run(hosts, pools);
  } finally {
    for (const [i, s] of shared.entries()) await s.stop(hosts[i] as Host);
    for (const p of pools) await p.end();
  }
}

test('an RPM of 3 across three hosts: the 4th pick on any host goes to B; the next minute frees A', {
  skip,
}, async () => {
  const config = aliasConfig([deployment('a', { rpm: 3 }), deployment('b', {})]);
  await threeHosts('limits_rpm', config, async (hosts) => {
    const [h0, h1, h2] = hosts as [Host, Host, Host];
    // Each host alone is far below 3: only the shared count can send the 4th call elsewhere.
    assert.deepEqual([await call(h0), await call(h1), await call(h2)], ['a', 'a', 'a']);
    assert.equal(await call(h0), 'b', 'the 4th call across hosts goes to the next deployment');
    assert.equal(await call(h1), 'b');
    assert.equal(await call(h2), 'b');
    // At once, from every host: still none for A.
    const burst = await Promise.all(hosts.flatMap((h) => [call(h), call(h)]));
    assert.deepEqual(burst, ['b', 'b', 'b', 'b', 'b', 'b']);
    now.ms += 120_000;
    const after = await Promise.all(hosts.flatMap((h) => [call(h), call(h)]));
    assert.equal(after.filter((d) => d === 'a').length, 3, 'a new minute: A takes exactly its RPM again, across hosts');
  });
});

test('calls at once on three hosts never take more than the RPM between them', { skip }, async () => {
  const config = aliasConfig([deployment('a', { rpm: 5 }), deployment('b', {})]);
  await threeHosts('limits_race', config, async (hosts) => {
    const served = await Promise.all(hosts.flatMap((h) => Array.from({ length: 6 }, () => call(h))));
    assert.equal(served.filter((d) => d === 'a').length, 5);
    assert.equal(served.filter((d) => d === 'b').length, 13);
  });
});

test("tokens one host's call used count against the TPM on the others; without a fallback the call is refused", {
  skip,
}, async () => {
  const config = aliasConfig([deployment('a', { tpm: 1000 })]);
  await threeHosts('limits_tpm', config, async (hosts, pools) => {
    const [h0, h1, h2] = hosts as [Host, Host, Host];
    assert.equal(await call(h0, 600), 'a');
    assert.equal(await call(h1, 600), 'a', 'the tokens are not yet known to the store (flushed off the path)');
    // The flush (every 250 ms) carries both calls' tokens: a bounded wait for the row, never a fixed sleep.
    for (let i = 0; ; i += 1) {
      const { rows } = await (pools[0] as pg.Pool).query<{ tokens: string }>(
        "SELECT tokens FROM cplane_rate_counts WHERE key = 'a'",
      );
      if (Number(rows[0]?.tokens) === 1200) break;
      assert.ok(i < 250, 'the tokens reached the store');
      await new Promise((r) => setTimeout(r, 20));
    }
    const plan = h2.plan('m', () => true);
    const refused = await plan?.start();
    assert.equal(refused?.code, 'RATE_LIMITED', 'host 2 made no call, yet A is past its TPM');
    assert.equal(refused?.retryAfterMs, 1000);
  });
});
