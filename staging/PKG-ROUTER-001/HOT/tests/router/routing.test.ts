// The routing resolver on its own: the picker's weights with a seeded random, cooldowns on an injected clock,
// breakers and limits skipped, fallback across groups only on the classes the config names.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BreakerRegistry } from '../../router/breaker.js';
import { pick } from '../../router/routing/pick.js';
import { Resolver, type Unroutable } from '../../router/routing/resolver.js';
import type { DeploymentSpec, RoutingConfig } from '../../router/routing/types.js';
import { FALLBACK_CLASSES } from '../../router/routing/types.js';
import { MinuteWindow } from '../../router/routing/window.js';
import type { SendFailure } from '../../router/send.js';

/** A plan's start on a host counting its own limits: synchronous (only shared counts make it a promise). */
const started = (u: Unroutable | null | Promise<Unroutable | null> | undefined) => u as Unroutable | null | undefined;

/** Mulberry32: a seeded random in [0, 1), so a split is the same on every run. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function deployment(id: string, extra: Partial<DeploymentSpec> = {}): DeploymentSpec {
  return {
    id,
    provider: 'anthropic',
    base_url: `http://127.0.0.1/${id}`,
    credential_env: `KEY_${id.toUpperCase()}`,
    model: `model-${id}`,
    weight: 1,
    rpm: null,
    tpm: null,
    region: null,
    ...extra,
  };
}

function resolver(
  config: Partial<RoutingConfig> & Pick<RoutingConfig, 'deployments' | 'aliases'>,
  clock: { now: number },
  random = seeded(7),
) {
  const breakers = new BreakerRegistry(
    { failure_threshold: 3, reset_timeout_ms: 30_000, half_open_probes: 1 },
    () => clock.now,
  );
  const full: RoutingConfig = { fallback_on: [...FALLBACK_CLASSES], cooldown_ms: 5000, ...config };
  const providers = new Map(full.deployments.map((d) => [d.id, { id: d.provider }]));
  return {
    breakers,
    resolver: new Resolver({
      config: full,
      providers,
      providerId: (p) => p.id,
      breakers,
      clock: () => clock.now,
      random,
    }),
  };
}

const failure = (kind: string, retryAfterMs: number | null = null): SendFailure => ({
  kind,
  error_code: kind.toUpperCase(),
  status: kind === 'overloaded' ? 529 : kind === 'rate_limited' ? 429 : 500,
  retryable: true,
  retry_after_ms: retryAfterMs,
  message: kind,
  after_success: false,
});

const everyone = (): boolean => true;

test('the picker splits 4,000 picks 3:1 by weight (3,000 ± 150) with a seeded random', () => {
  const group = [
    { weight: 3, inFlight: 0 },
    { weight: 1, inFlight: 0 },
  ];
  const random = seeded(42);
  const counts = [0, 0];
  for (let i = 0; i < 4000; i += 1) {
    const index = pick(group, () => true, 'weighted', random);
    counts[index] = (counts[index] ?? 0) + 1;
  }
  assert.ok(Math.abs((counts[0] ?? 0) - 3000) <= 150, `split ${counts.join(':')}`);
  assert.equal((counts[0] ?? 0) + (counts[1] ?? 0), 4000);
});

test('the picker skips ineligible deployments and, least_in_flight, takes the one with fewest calls', () => {
  const group = [
    { weight: 100, inFlight: 5 },
    { weight: 1, inFlight: 2 },
    { weight: 1, inFlight: 2 },
  ];
  const random = seeded(1);
  const seen = new Set<number>();
  for (let i = 0; i < 200; i += 1) seen.add(pick(group, () => true, 'least_in_flight', random));
  assert.deepEqual([...seen].sort(), [1, 2], 'the heavy but busy one is never picked');
  assert.equal(
    pick(group, (_, i) => i === 0, 'weighted', random),
    0,
  );
  assert.equal(
    pick(group, () => false, 'weighted', random),
    -1,
  );
  // random() at its top end still lands on an eligible candidate.
  assert.equal(
    pick(
      group,
      (_, i) => i !== 2,
      'weighted',
      () => 0.999999999,
    ),
    1,
  );
});

test('end to end through plans: 4,000 calls over weights 3:1 split 3,000 ± 150', () => {
  const clock = { now: 1_000_000 };
  const { resolver: r } = resolver(
    {
      deployments: [deployment('a', { weight: 3 }), deployment('b', { weight: 1 })],
      aliases: { fast: { targets: [['a', 'b']], strategy: 'weighted' } },
    },
    clock,
    seeded(99),
  );
  const counts: Record<string, number> = { a: 0, b: 0 };
  for (let i = 0; i < 4000; i += 1) {
    const plan = r.plan('fast', everyone);
    assert.ok(plan);
    assert.equal(plan.start(), null);
    counts[plan.target.deployment] = (counts[plan.target.deployment] ?? 0) + 1;
    plan.finish(10);
  }
  assert.ok(Math.abs((counts.a ?? 0) - 3000) <= 150, JSON.stringify(counts));
  assert.equal(r.deployments.get('a')?.inFlight, 0, 'every slot given back');
});

test('a 429 with retry-after 2 s: the deployment gets nothing for 2 s, then traffic again (injected clock)', () => {
  const clock = { now: 5_000_000 };
  const { resolver: r } = resolver(
    {
      deployments: [deployment('a'), deployment('b')],
      aliases: { m: { targets: [['a', 'b']], strategy: 'weighted' } },
    },
    clock,
  );
  // Find a plan that starts on A, fail it with a 429.
  let plan = r.plan('m', everyone);
  while (plan !== null) {
    assert.equal(plan.start(), null);
    if (plan.target.deployment === 'a') break;
    plan.finish(0);
    plan = r.plan('m', everyone);
  }
  assert.ok(plan);
  assert.equal(plan.next(failure('rate_limited', 2000)), true, 'the call moves to B');
  assert.equal(plan.target.deployment, 'b');
  plan.finish(0);
  const served = (): string[] => {
    const names: string[] = [];
    for (let i = 0; i < 50; i += 1) {
      const p = r.plan('m', everyone);
      assert.ok(p);
      assert.equal(p.start(), null);
      names.push(p.target.deployment);
      p.finish(0);
    }
    return names;
  };
  assert.ok(!served().includes('a'), 'nothing for A during its cooldown');
  clock.now += 1999;
  assert.ok(!served().includes('a'), 'still nothing at 1.999 s');
  clock.now += 1;
  assert.ok(served().includes('a'), 'A takes traffic again at 2 s');
});

test('a 429 without retry-after rests the deployment for cooldown_ms', () => {
  const clock = { now: 0 };
  const { resolver: r } = resolver(
    { deployments: [deployment('a')], aliases: { m: { targets: [['a']], strategy: 'weighted' } }, cooldown_ms: 700 },
    clock,
  );
  const plan = r.plan('m', everyone);
  assert.ok(plan);
  assert.equal(plan.start(), null);
  assert.equal(plan.next(failure('rate_limited')), false, 'nowhere to go');
  plan.finish(0);
  const refused = started(r.plan('m', everyone)?.start());
  assert.equal(refused?.code, 'RATE_LIMITED');
  assert.equal(refused?.retryAfterMs, 1000, 'at least a second');
  clock.now += 700;
  assert.equal(r.plan('m', everyone)?.start(), null);
});

test('an open breaker is skipped until its probe; a group whose breakers are all open falls to the next', () => {
  const clock = { now: 0 };
  const { resolver: r, breakers } = resolver(
    {
      deployments: [deployment('a'), deployment('b')],
      aliases: { m: { targets: ['a', 'b'].map((id) => [id]), strategy: 'weighted' } },
    },
    clock,
  );
  const breaker = breakers.byKey('deployment:a/model-a');
  for (let i = 0; i < 3; i += 1) breaker.recordFailure();
  for (let i = 0; i < 20; i += 1) {
    const plan = r.plan('m', everyone);
    assert.equal(plan?.start(), null);
    assert.equal(plan?.target.deployment, 'b');
    plan?.finish(0);
  }
  clock.now += 30_000;
  const probe = r.plan('m', everyone);
  assert.equal(probe?.start(), null);
  assert.equal(probe?.target.deployment, 'a', 'the probe goes to A');
  // Half-open with its one probe out: the next call goes to B.
  const other = r.plan('m', everyone);
  assert.equal(other?.start(), null);
  assert.equal(other?.target.deployment, 'b');
});

test('fallback only on the classes named; a 400 or an unnamed class stays (the retry loop decides)', () => {
  const clock = { now: 0 };
  const { resolver: r } = resolver(
    {
      deployments: [deployment('a'), deployment('b')],
      aliases: { m: { targets: [['a'], ['b']], strategy: 'weighted' } },
      fallback_on: ['overloaded'],
    },
    clock,
  );
  const plan = r.plan('m', everyone);
  assert.equal(plan?.start(), null);
  assert.equal(plan?.target.deployment, 'a');
  assert.equal(plan?.next(failure('server_error')), false);
  assert.equal(plan?.next({ ...failure('invalid_request'), status: 400 }), false);
  assert.equal(plan?.target.deployment, 'a');
  assert.equal(plan?.next(failure('overloaded')), true);
  assert.equal(plan?.target.deployment, 'b');
  assert.equal(plan?.next(failure('overloaded')), false, 'each deployment once per call');
});

test("a prompt over one model's window (a 400 saying so) moves to the next target; any other 400 stays", () => {
  const clock = { now: 0 };
  const { resolver: r } = resolver(
    {
      deployments: [deployment('small'), deployment('large')],
      aliases: { m: { targets: [['small'], ['large']], strategy: 'weighted' } },
    },
    clock,
  );
  const tooLong = {
    ...failure('invalid_request'),
    status: 400,
    retryable: false,
    message: 'provider "anthropic" answered HTTP 400: prompt is too long: 210000 tokens > 200000 maximum',
  };
  const plan = r.plan('m', everyone);
  assert.equal(plan?.start(), null);
  assert.equal(plan?.next({ ...tooLong, message: 'messages: roles must alternate' }), false);
  assert.equal(plan?.next({ ...tooLong, after_success: true }), false, 'never after a 2xx');
  assert.equal(plan?.next(tooLong), true);
  assert.equal(plan?.target.deployment, 'large');
});

test('the key scope on upstream models: a target the key may not use is skipped; none left: AUTH_SCOPE', () => {
  const clock = { now: 0 };
  const { resolver: r } = resolver(
    {
      deployments: [deployment('a'), deployment('b')],
      aliases: { m: { targets: [['a', 'b']], strategy: 'weighted' } },
    },
    clock,
  );
  for (let i = 0; i < 20; i += 1) {
    const plan = r.plan('m', (model) => model === 'model-b');
    assert.equal(plan?.start(), null);
    assert.equal(plan?.target.model, 'model-b');
    plan?.finish(0);
  }
  assert.equal(started(r.plan('m', () => false)?.start())?.code, 'AUTH_SCOPE');
});

test('an excluded deployment (a request its format cannot carry) is never picked, counted or named as blocked', () => {
  const clock = { now: 0 };
  const { resolver: r, breakers } = resolver(
    {
      deployments: [deployment('a', { weight: 1000 }), deployment('b'), deployment('c')],
      aliases: { m: { targets: [['a', 'b'], ['c']], strategy: 'weighted' } },
    },
    clock,
  );
  for (let i = 0; i < 20; i += 1) {
    const plan = r.plan('m', everyone);
    plan?.exclude(['a']);
    assert.deepEqual(
      plan?.candidates().map((c) => [c.deployment, c.model]),
      [
        ['b', 'model-b'],
        ['c', 'model-c'],
      ],
    );
    assert.equal(plan?.start(), null);
    assert.equal(plan?.target.deployment, 'b', 'a outweighs b 1000:1, and is never picked');
    assert.equal(plan?.next(failure('overloaded')), true);
    assert.equal(plan?.target.deployment, 'c', 'the fallback skips it too');
    plan?.finish(0);
  }
  // With b's and c's breakers open the call is refused until they reopen: the excluded a (free now) sets no retry-after.
  for (const id of ['b', 'c'])
    for (let i = 0; i < 3; i += 1) breakers.byKey(`deployment:${id}/model-${id}`).recordFailure();
  const plan = r.plan('m', everyone);
  plan?.exclude(['a']);
  const refused = started(plan?.start());
  assert.equal(refused?.code, 'CIRCUIT_OPEN');
  assert.equal(refused?.retryAfterMs, 30_000);
  // A host naming the surface of each attempt gets it in the attempt's record.
  const named = r.plan('m', everyone);
  assert.ok(named);
  named.surfaceOf = (id) => (id === 'a' ? 'openai.chat' : null);
  assert.equal(named.start(), null);
  assert.equal(named.attempted().upstream_surface, 'openai.chat');
});

test('RPM and TPM limits: a deployment at its limit is skipped until the minute frees it', () => {
  const clock = { now: 0 };
  const { resolver: r } = resolver(
    {
      deployments: [deployment('a', { rpm: 2, weight: 1000 }), deployment('b', { tpm: 100 })],
      aliases: { m: { targets: [['a', 'b']], strategy: 'weighted' } },
    },
    clock,
  );
  const names: string[] = [];
  for (let i = 0; i < 4; i += 1) {
    const plan = r.plan('m', everyone);
    assert.equal(plan?.start(), null);
    names.push(plan?.target.deployment ?? '');
    plan?.finish(60);
  }
  assert.deepEqual(names, ['a', 'a', 'b', 'b']);
  assert.equal(started(r.plan('m', everyone)?.start())?.code, 'RATE_LIMITED', 'A at its RPM, B past its TPM');
  clock.now += 60_000;
  assert.equal(r.plan('m', everyone)?.start(), null);
});

test('the minute window forgets what is older than 60 s, and a clock step clears it', () => {
  const w = new MinuteWindow();
  w.add(0, 5);
  w.add(30_000, 7);
  assert.equal(w.sum(59_999), 12);
  assert.equal(w.sum(60_000), 7);
  assert.equal(w.sum(10_000_000), 0);
});

test('the reservation is made under the dearest target', () => {
  const clock = { now: 0 };
  const breakers = new BreakerRegistry({ failure_threshold: 3, reset_timeout_ms: 1, half_open_probes: 1 }, () => 0);
  const config: RoutingConfig = {
    deployments: [deployment('a'), deployment('b'), deployment('c')],
    aliases: { m: { targets: [['a'], ['b', 'c']], strategy: 'weighted' } },
    fallback_on: [...FALLBACK_CLASSES],
    cooldown_ms: 0,
  };
  const prices: Record<string, number> = { 'model-a': 3, 'model-b': 18, 'model-c': 1 };
  const r = new Resolver({
    config,
    providers: new Map(config.deployments.map((d) => [d.id, d.provider])),
    providerId: (p) => p,
    breakers,
    clock: () => clock.now,
    random: seeded(3),
    price: (model) => prices[model] ?? null,
  });
  assert.equal(r.plan('m', everyone)?.reserveModel, 'model-b');
  assert.equal(r.plan('nope', everyone), null, 'not an alias: not routed');
});
