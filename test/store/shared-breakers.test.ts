// Provider health shared by gateway hosts on one PostgreSQL database: a breaker opened by failures on one host
// refuses calls on the others within a poll, a probe success anywhere closes it everywhere, and a database that goes
// away leaves every host's breakers working on their own until it is back.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { createDatabase, pgSkip, startPgServer, type PgServer } from '../../scripts/lib/pg-server.js';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';
import type { BreakerRegistry as BreakerRegistryT } from '../../staging/PKG-ROUTER-001/HOT/router/breaker.js';
import type { SharedBreakers as SharedBreakersT } from '../../staging/PKG-ROUTER-001/HOT/router/pg/shared-breakers.js';

// From the dev root, as the root runs them (and as coverage counts them).
const { BreakerRegistry } =
  await fromDevRoot<typeof import('../../staging/PKG-ROUTER-001/HOT/router/breaker.js')>('HOT/router/breaker.js');
const { SharedBreakers } = await fromDevRoot<
  typeof import('../../staging/PKG-ROUTER-001/HOT/router/pg/shared-breakers.js')
>('HOT/router/pg/shared-breakers.js');

const skip = pgSkip();
const havePg = skip === false;

let server: PgServer | undefined;
let databases = 0;
before(async () => {
  if (havePg) server = await startPgServer();
});
after(() => server?.stop());

const CONFIG = { failure_threshold: 3, reset_timeout_ms: 30_000, half_open_probes: 1 };
const POLL_MS = 50;
/** For tests whose clock jumps: far beyond any jump, so only a real failure counts against the database. */
const NO_STALL_MS = 3_600_000;

/** One clock for every host: the reset timeout passes when the test says so, and hosts have no skew. */
const now = { ms: 1_800_000_000_000 };
const clock = (): number => now.ms;

interface Host {
  name: string;
  pool: pg.Pool;
  registry: BreakerRegistryT;
  shared: SharedBreakersT;
}

async function hosts(
  names: string[],
  skewMs: Record<string, number> = {},
  stallMs?: number,
): Promise<{ url: string; hosts: Host[]; close: () => Promise<void> }> {
  const url = await createDatabase(server as PgServer, `breakers_${(databases += 1)}`);
  const out: Host[] = [];
  for (const name of names) {
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    const own = (): number => clock() + (skewMs[name] ?? 0);
    const registry = new BreakerRegistry(CONFIG, own);
    const shared = await SharedBreakers.start(pool, registry, {
      pollMs: POLL_MS,
      clock: own,
      host: name,
      ...(stallMs === undefined ? {} : { stallMs }),
    });
    out.push({ name, pool, registry, shared });
  }
  return {
    url,
    hosts: out,
    async close() {
      for (const h of out) {
        await h.shared.stop();
        await h.pool.end();
      }
    },
  };
}

/** Poll for a condition (never a fixed sleep): fails with `what` when it does not hold within the bound. */
async function until(what: string, condition: () => boolean, boundMs = 10_000): Promise<void> {
  const deadline = Date.now() + boundMs;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`not within ${boundMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const state = (h: Host): string => h.registry.for('anthropic', 'claude').snapshot().state;
const fail = (h: Host, times: number): void => {
  const breaker = h.registry.for('anthropic', 'claude');
  for (let i = 0; i < times; i += 1) {
    assert.ok(breaker.admit());
    breaker.recordFailure();
  }
};

async function row(url: string): Promise<Record<string, unknown> | undefined> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query("SELECT * FROM cplane_breakers WHERE key = 'anthropic/claude'")).rows[0];
  } finally {
    await client.end();
  }
}

test('failures on one host open the breaker on every host; a probe success on another closes it everywhere', {
  skip,
}, async () => {
  // The clock jumps by a reset timeout here: with a poll in flight that would read as a stalled database.
  const { url, hosts: [a, b, c] = [], close } = await hosts(['A', 'B', 'C'], {}, NO_STALL_MS);
  assert.ok(a && b && c);
  try {
    const openedAt = now.ms;
    fail(a, 3);
    assert.equal(state(a), 'OPEN');
    await until('B and C refuse calls', () => state(b) === 'OPEN' && state(c) === 'OPEN');
    for (const h of [b, c]) {
      const breaker = h.registry.for('anthropic', 'claude');
      assert.equal(breaker.admit(), false, `${h.name} refuses`);
      assert.equal(breaker.snapshot().opened_at, new Date(openedAt).toISOString(), 'with the opening host’s time');
    }
    assert.deepEqual(await row(url), {
      key: 'anthropic/claude',
      state: 'OPEN',
      consecutive_failures: 3,
      opened_at_ms: String(openedAt),
      changed_at_ms: String(openedAt),
      host: 'A',
      probe_host: null,
      probe_until_ms: null,
    });

    now.ms += CONFIG.reset_timeout_ms;
    const probe = b.registry.for('anthropic', 'claude');
    assert.equal(probe.admit(), false, 'the reset timeout passed: B asks for the probe first');
    await until('B wins the probe', () => probe.admit());
    probe.recordSuccess();
    // Later than B's closing from here on: a host that re-published what it adopted would now win the row.
    now.ms += 1;
    await until('A and C close after B’s probe', () => state(a) === 'CLOSED' && state(c) === 'CLOSED');
    assert.ok(a.registry.for('anthropic', 'claude').admit());
    assert.ok(c.registry.for('anthropic', 'claude').admit());
    // Two more exchanges on every host (each reads the table after publishing what it queued): had A or C
    // published what it adopted, the row would name it.
    for (let round = 0; round < 2; round += 1) {
      now.ms += 1;
      const at = new Date(now.ms).toISOString();
      await until('every host polls again', () => [a, b, c].every((h) => h.shared.status().last_poll_at === at));
    }
    const closed = await row(url);
    assert.equal(closed?.state, 'CLOSED');
    assert.equal(closed?.host, 'B', 'the hosts that followed did not publish it again');
    assert.equal(closed?.changed_at_ms, String(openedAt + CONFIG.reset_timeout_ms), 'when B closed it');

    // A later opening wins over the earlier closing: C fails, A and B follow.
    now.ms += 1000;
    fail(c, 3);
    await until('A and B refuse after C opens', () => state(a) === 'OPEN' && state(b) === 'OPEN');
    assert.equal((await row(url))?.host, 'C');
    for (const h of [a, b, c]) assert.equal(h.shared.status().ok, true, JSON.stringify(h.shared.status()));
  } finally {
    await close();
  }
});

test('once the reset timeout passes one host probes, not each; a failed probe re-opens everywhere; a lease left unused runs out', {
  skip,
}, async () => {
  const { url, hosts: all, close } = await hosts(['A', 'B', 'C'], {}, NO_STALL_MS);
  const [a] = all as [Host];
  try {
    fail(a, 3);
    await until('every host refuses', () => all.every((h) => state(h) === 'OPEN'));
    now.ms += CONFIG.reset_timeout_ms;
    // Every host's traffic asks at once; exactly one wins, and the others keep refusing while its lease holds.
    const admitted = new Set<string>();
    const ask = (): void => {
      for (const h of all) if (h.registry.for('anthropic', 'claude').admit()) admitted.add(h.name);
    };
    await until('a host wins the probe', () => {
      ask();
      return admitted.size > 0;
    });
    for (let round = 0; round < 5; round += 1) {
      now.ms += 1;
      const at = new Date(now.ms).toISOString();
      await until('every host polls again', () => all.every((h) => h.shared.status().last_poll_at === at));
      ask();
    }
    assert.equal(admitted.size, 1, `probing hosts: ${[...admitted].join(', ')}`);
    const [winner] = [...admitted];
    const prober = all.find((h) => h.name === winner) as Host;
    assert.equal((await row(url))?.probe_host, winner);
    assert.equal(state(prober), 'HALF_OPEN');
    for (const h of all) if (h !== prober) assert.equal(state(h), 'OPEN', `${h.name} still refuses`);

    // The probe fails: a later opening, adopted by the others, and its lease is free again.
    const reopenedAt = now.ms;
    prober.registry.for('anthropic', 'claude').recordFailure();
    await until('the others adopt the later opening', () =>
      all.every(
        (h) => h.registry.for('anthropic', 'claude').snapshot().opened_at === new Date(reopenedAt).toISOString(),
      ),
    );
    const reopened = await row(url);
    assert.equal(reopened?.probe_host, null, 'a new opening ends the lease on the old one');

    // Only one host has traffic after the next timeout: it wins, probes, then goes quiet (it died mid-probe).
    now.ms += CONFIG.reset_timeout_ms;
    const quiet = all.find((h) => h !== prober) as Host;
    await until(`${quiet.name} wins the probe`, () => quiet.registry.for('anthropic', 'claude').admit());
    const others = all.filter((h) => h !== quiet);
    for (let round = 0; round < 3; round += 1) {
      now.ms += 1;
      const at = new Date(now.ms).toISOString();
      await until('every host polls again', () => all.every((h) => h.shared.status().last_poll_at === at));
      for (const h of others) assert.equal(h.registry.for('anthropic', 'claude').admit(), false, `${h.name} waits`);
    }
    // The claims those refusals asked for are made (and refused) before the clock moves on: made after it, one would
    // win the lease for a host that has no more traffic.
    now.ms += 1;
    const drained = new Date(now.ms).toISOString();
    await until('every host polls again', () => all.every((h) => h.shared.status().last_poll_at === drained));
    // Its lease runs out after one reset timeout: another host claims it and probes; its success closes every host.
    now.ms += CONFIG.reset_timeout_ms;
    const next = others[0] as Host;
    await until(`${next.name} claims the lease that ran out`, () => next.registry.for('anthropic', 'claude').admit());
    next.registry.for('anthropic', 'claude').recordSuccess();
    now.ms += 1;
    await until('every host closes', () => all.every((h) => state(h) === 'CLOSED'));
    assert.equal((await row(url))?.probe_host, null);
  } finally {
    await close();
  }
});

test('with the database away a host probes on its own once the reset timeout passes', { skip }, async () => {
  const s = server as PgServer;
  const { hosts: [a] = [], close } = await hosts(['A']);
  assert.ok(a);
  let halted = false;
  try {
    fail(a, 3);
    await until('published', () => a.shared.status().pending === 0);
    s.halt();
    halted = true;
    await until('A knows the database is away', () => a.shared.status().ok === false);
    now.ms += CONFIG.reset_timeout_ms;
    assert.equal(a.registry.for('anthropic', 'claude').admit(), true, 'no lease to be had: the host decides');
    assert.equal(state(a), 'HALF_OPEN');
  } finally {
    if (halted) s.start();
    await close();
  }
});

test('two hosts opening at once converge on the later opening; the earlier one is never published over it', {
  skip,
}, async () => {
  // B's clock runs 5 s ahead of A's: whichever upsert lands first, the row and both hosts end with B's opening.
  const { url, hosts: [a, b] = [], close } = await hosts(['A', 'B'], { B: 5000 });
  assert.ok(a && b);
  try {
    const later = new Date(now.ms + 5000).toISOString();
    fail(a, 3);
    fail(b, 3);
    await until(
      'A adopted the later opening',
      () => a.registry.for('anthropic', 'claude').snapshot().opened_at === later,
    );
    await until('both published', () => a.shared.status().pending === 0 && b.shared.status().pending === 0);
    const kept = await row(url);
    assert.equal(kept?.host, 'B');
    assert.equal(kept?.opened_at_ms, String(Date.parse(later)));
    assert.equal(b.registry.for('anthropic', 'claude').snapshot().opened_at, later, 'B kept its own');
  } finally {
    await close();
  }
});

test('the database unreachable: each host’s breakers keep working, status says why, and sync resumes when it is back', {
  skip,
}, async () => {
  const s = server as PgServer;
  const { hosts: [a, b] = [], close } = await hosts(['A', 'B']);
  assert.ok(a && b);
  let halted = false;
  try {
    s.halt();
    halted = true;
    now.ms += 1000;
    fail(a, 3);
    assert.equal(state(a), 'OPEN', 'opened locally with the database gone');
    assert.equal(a.registry.for('anthropic', 'claude').admit(), false);
    assert.ok(b.registry.for('anthropic', 'claude').admit(), 'B decides on its own meanwhile');
    await until('A reports the failure', () => a.shared.status().ok === false);
    const down = a.shared.status();
    assert.match(down.last_error ?? '', /^ERR_STORE_UNAVAILABLE: /);
    assert.equal(down.pending, 1, 'the opening waits to be published');
    assert.ok(down.errors >= 1);
    await until('B reports the failure', () => b.shared.status().ok === false);

    s.start();
    halted = false;
    await until('B refuses after the database is back', () => state(b) === 'OPEN', 30_000);
    await until('A published and reports healthy', () => a.shared.status().ok && a.shared.status().pending === 0);
    assert.equal(a.shared.status().last_error, null);
    assert.equal(b.registry.for('anthropic', 'claude').admit(), false);
  } finally {
    if (halted) s.start();
    await close();
  }
});

test('a database that stops answering without closing the connection: status says so, calls are never held up', {
  skip,
}, async () => {
  const { hosts: [a] = [], close } = await hosts(['A']);
  assert.ok(a);
  const pool = a.pool as unknown as { query: (...args: unknown[]) => Promise<unknown> };
  const real = pool.query.bind(pool);
  let answer: () => void = () => undefined;
  const held = new Promise<void>((resolve) => {
    answer = resolve;
  });
  let asked = 0;
  pool.query = async (...args: unknown[]) => {
    asked += 1;
    await held;
    return real(...args);
  };
  try {
    await until('an exchange is waiting', () => asked > 0);
    fail(a, 3);
    assert.equal(state(a), 'OPEN', 'the breaker opened while the database hangs');
    assert.equal(a.shared.status().ok, true, 'a wait shorter than stallMs is not yet a fault');
    now.ms += 5001;
    const stalled = a.shared.status();
    assert.equal(stalled.ok, false);
    assert.match(stalled.last_error ?? '', /^ERR_STORE_UNAVAILABLE: no reply from PostgreSQL for \d+ ms$/);
    assert.equal(stalled.pending, 1);
    pool.query = real;
    answer();
    await until('published once the database answers', () => a.shared.status().ok && a.shared.status().pending === 0);
    assert.equal(a.shared.status().last_error, null);
  } finally {
    pool.query = real;
    answer();
    await close();
  }
});

test('one host whose clock runs an hour ahead cannot keep a provider shut on the others: its opening waits at most the skew allowance, a closing outranks it, its lease runs out', {
  skip,
}, async () => {
  const hour = 3_600_000;
  const { url, hosts: [a, b, c] = [], close } = await hosts(['A', 'B', 'C'], { B: hour }, NO_STALL_MS);
  assert.ok(a && b && c);
  const allowance = CONFIG.reset_timeout_ms; // the default maxSkewMs
  try {
    fail(b, 3);
    await until('A and C refuse', () => state(a) === 'OPEN' && state(c) === 'OPEN');
    assert.equal(
      a.registry.for('anthropic', 'claude').snapshot().opened_at,
      new Date(now.ms + allowance).toISOString(),
      'adopted as opened no later than the skew allowance ahead of A',
    );
    now.ms += allowance + CONFIG.reset_timeout_ms;
    const probe = a.registry.for('anthropic', 'claude');
    await until('A wins the lease on B’s opening', () => probe.admit());
    assert.equal((await row(url))?.probe_host, 'A');
    probe.recordSuccess();
    await until('every host closes on A’s probe', () => [a, b, c].every((h) => state(h) === 'CLOSED'));
    assert.equal((await row(url))?.host, 'A', 'A’s closing outranked B’s opening stamped an hour ahead');

    // A later opening by A; B (an hour ahead) takes the lease and goes quiet: its lease ends by A's and C's clocks.
    now.ms += 1000;
    fail(a, 3);
    await until('B and C refuse', () => state(b) === 'OPEN' && state(c) === 'OPEN');
    now.ms += CONFIG.reset_timeout_ms;
    await until('B wins the lease', () => b.registry.for('anthropic', 'claude').admit());
    assert.equal((await row(url))?.probe_host, 'B');
    now.ms += CONFIG.reset_timeout_ms;
    const next = c.registry.for('anthropic', 'claude');
    await until('C claims the lease B stamped an hour ahead', () => next.admit());
    next.recordSuccess();
    await until('every host closes on C’s probe', () => [a, b, c].every((h) => state(h) === 'CLOSED'));
  } finally {
    await close();
  }
});
