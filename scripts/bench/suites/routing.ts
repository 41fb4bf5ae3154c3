// Routing's cost on a call: picking a deployment among 50 (balance_pick_p50), and what a fallback adds to a call
// beyond the failed attempt's own time (fallback_added_p50), through the governed pipeline's one retry loop.
import type { GovernedCall, GovernedHost } from '../../../staging/PKG-ROUTER-001/HOT/router/governed.js';
import type { RoutingConfig } from '../../../staging/PKG-ROUTER-001/HOT/router/routing/types.js';
import { fromDevRoot } from '../../lib/dev-root.js';
import { defineSuite, percentile, type BenchRow } from '../row.js';

const governed =
  await fromDevRoot<typeof import('../../../staging/PKG-ROUTER-001/HOT/router/governed.js')>('HOT/router/governed.js');
const resolverModule = await fromDevRoot<
  typeof import('../../../staging/PKG-ROUTER-001/HOT/router/routing/resolver.js')
>('HOT/router/routing/resolver.js');
const breakerModule =
  await fromDevRoot<typeof import('../../../staging/PKG-ROUTER-001/HOT/router/breaker.js')>('HOT/router/breaker.js');
const typesModule =
  await fromDevRoot<typeof import('../../../staging/PKG-ROUTER-001/HOT/router/routing/types.js')>(
    'HOT/router/routing/types.js',
  );
const configModule =
  await fromDevRoot<typeof import('../../../staging/PKG-ROUTER-001/HOT/router/config.js')>('HOT/router/config.js');
const errorsModule =
  await fromDevRoot<typeof import('../../../staging/PKG-PROVIDER-SPEC-001/HOT/providers/errors.js')>(
    'HOT/providers/errors.js',
  );

function resolver(count: number, groups: 'one' | 'each') {
  const deployments = Array.from({ length: count }, (_, i) => ({
    id: `d${i}`,
    provider: 'anthropic',
    base_url: `http://127.0.0.1/${i}`,
    credential_env: `KEY_${i}`,
    model: `model-${i}`,
    weight: 1 + (i % 5),
    rpm: 1_000_000_000,
    tpm: 1_000_000_000_000,
    region: null,
  }));
  const ids = deployments.map((d) => d.id);
  const config: RoutingConfig = {
    deployments,
    aliases: { m: { targets: groups === 'one' ? [ids] : ids.map((id) => [id]), strategy: 'weighted' } },
    fallback_on: [...typesModule.FALLBACK_CLASSES],
    cooldown_ms: 5000,
  };
  const breakers = new breakerModule.BreakerRegistry(
    { failure_threshold: 1_000_000, reset_timeout_ms: 30_000, half_open_probes: 1 },
    Date.now,
  );
  return new resolverModule.Resolver({
    config,
    providers: new Map(ids.map((id) => [id, 'anthropic'])),
    providerId: (p: string) => p,
    breakers,
    clock: Date.now,
    random: Math.random,
  });
}

/** p50 of per-call microseconds, each sample the mean over a batch (the timer's own cost stays out of it). */
function pickMicros(batches: number, batch: number): number {
  const r = resolver(50, 'one');
  const everyone = (): boolean => true;
  const samples: number[] = [];
  for (let b = 0; b < batches; b += 1) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < batch; i += 1) {
      const plan = r.plan('m', everyone);
      plan?.start();
      plan?.finish(10);
    }
    samples.push(Number(process.hrtime.bigint() - start) / 1e3 / batch);
  }
  return percentile(samples, 50);
}

/** A host with what the retry loop reads: the router config, a clock, randomness and a sleep. */
function host(): GovernedHost {
  return {
    config: configModule.loadRouterConfig(),
    clock: Date.now,
    random: Math.random,
    sleep: async () => {},
  } as unknown as GovernedHost;
}

function routedCall(r: ReturnType<typeof resolver>): { call: GovernedCall; on: () => string } {
  const plan = r.plan('m', () => true);
  if (plan === null || plan.start() !== null) throw new Error('bench: the plan did not start');
  const call = { route: plan, breaker: plan.breaker, breakerPass: plan.pass } as unknown as GovernedCall;
  return { call, on: () => plan.target.deployment };
}

const overloaded = (): Error =>
  new errorsModule.ProviderError({ kind: 'overloaded', providerId: 'anthropic', message: 'Overloaded', status: 529 });

/**
 * ms per call: a call whose first deployment fails (529) and second answers, less a call answered at once and less
 * the failed attempt alone (building and throwing its error): what the fallback itself adds.
 */
async function fallbackAddedMs(rounds: number): Promise<number> {
  const h = host();
  const twoGroups = resolver(2, 'each');
  const oneGroup = resolver(1, 'each');
  const fellBack: number[] = [];
  const direct: number[] = [];
  const failedOwn: number[] = [];
  for (let i = 0; i < rounds; i += 1) {
    const routed = routedCall(twoGroups);
    let call = routed.call;
    let start = process.hrtime.bigint();
    const sent = await governed.attempts(h, call, async () => {
      if (routed.on() === 'd0') throw overloaded();
      return 'ok';
    });
    fellBack.push(Number(process.hrtime.bigint() - start) / 1e6);
    if (!sent.ok || sent.attempts.length !== 2) throw new Error('bench: the call did not fall back');
    call.route?.finish(0);
    call = routedCall(oneGroup).call;
    start = process.hrtime.bigint();
    await governed.attempts(h, call, async () => 'ok');
    direct.push(Number(process.hrtime.bigint() - start) / 1e6);
    call.route?.finish(0);
    start = process.hrtime.bigint();
    await (async () => {
      throw overloaded();
    })().catch(() => {});
    failedOwn.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return Math.max(0, percentile(fellBack, 50) - percentile(direct, 50) - percentile(failedOwn, 50));
}

export default defineSuite({
  name: 'routing',
  async run({ quick }) {
    const rows: BenchRow[] = [];
    const pick = pickMicros(quick ? 50 : 200, 100);
    rows.push({
      name: 'balance_pick_p50',
      value: pick,
      unit: 'µs',
      baseline: null,
      ratio: null,
      target: '<= 20 µs (50 deployments)',
      ok: pick <= 20,
    });
    const added = await fallbackAddedMs(quick ? 300 : 2000);
    rows.push({
      name: 'fallback_added_p50',
      value: added,
      unit: 'ms',
      baseline: null,
      ratio: null,
      target: '<= 1 ms beyond the failed attempt',
      ok: added <= 1,
    });
    return rows;
  },
});
