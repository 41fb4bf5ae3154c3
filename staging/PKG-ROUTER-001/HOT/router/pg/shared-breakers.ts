import { hostname } from 'node:os';
import type pg from 'pg';
import type { BreakerRegistry, BreakerSnapshot } from '../breaker.js';
import { describeError, ensureRouterTables } from './tables.js';

/**
 * Provider health shared by the gateway hosts on one PostgreSQL database (table cplane_breakers). Admission stays
 * local and synchronous: each host's BreakerRegistry decides alone. This module only carries transitions between
 * them: a local opening or closing is queued and upserted in the background, and every pollMs the table is read and
 * changes newer than this host has seen are adopted with restore(), which announces nothing — so a state adopted is
 * never published again and hosts cannot echo each other.
 *
 * A row only moves forward: an upsert lands when its change is later than the row's (an opening wins a tie, erring
 * towards refusing calls). Times are the hosts' clocks: skew between hosts shifts which of two near-simultaneous
 * changes wins, never whether the hosts converge on one. A change is stamped later than every change its host has
 * made or adopted, so a closing outranks the opening it closes even when that opening's host runs ahead; and an
 * opening stamped further ahead of this host's clock than maxSkewMs is adopted as opened at this host's
 * now + maxSkewMs (its lease still claimed by the row's own time), so one host's bad clock cannot shut a provider on
 * every host until its time comes, nor hold a probe lease that long.
 *
 * Once an opening's reset timeout has passed, one host probes, not each: a host whose breaker would go HALF_OPEN
 * first claims the row's probe lease (probe_host, probe_until_ms) for that opening and refuses the call meanwhile.
 * The host that holds the lease probes; the others refuse until its outcome (a closing, or a later opening, which
 * clears the lease) reaches them, or until the lease runs out (one reset timeout: the prober died or has no
 * traffic) and another host claims it. An opening no row knows, or a database that is away, leaves the decision to
 * the host, as without a shared store.
 */
export interface SharedBreakersOptions {
  /** How often the table is read (and failed publishes retried); default 500 ms. */
  pollMs?: number;
  clock?: () => number;
  /** Who published a row (cplane_breakers.host), for an operator reading the table; default hostname:pid. */
  host?: string;
  /**
   * An exchange waiting longer than this for the database makes status() report it (a server that stopped answering
   * without closing the connection); default 10 × pollMs, at least 5 s. Bound the wait itself with the pool's
   * connectionTimeoutMillis and query_timeout.
   */
  stallMs?: number;
  /** How long a won probe lease lasts; default the registry's reset_timeout_ms (at least 1 s). */
  probeLeaseMs?: number;
  /** How far ahead of this host's clock another host's may run; default the registry's reset_timeout_ms (at least 5 s). */
  maxSkewMs?: number;
}

export interface SharedBreakersStatus {
  /** The last exchange with the database succeeded, and none has been waiting for a reply longer than stallMs. */
  ok: boolean;
  last_error: string | null;
  /** When the last successful read of the table was sent (ISO), null before the first. */
  last_poll_at: string | null;
  /** Local transitions not yet published. */
  pending: number;
  /** Failed exchanges since start. */
  errors: number;
}

type SharedState = 'OPEN' | 'CLOSED';

interface Change {
  key: string;
  state: SharedState;
  consecutive_failures: number;
  opened_at_ms: number | null;
  changed_at_ms: number;
}

/** Orders changes to one breaker: by time, an opening after a closing at the same millisecond. */
const rank = (state: SharedState, changedAtMs: number): number => changedAtMs * 2 + (state === 'OPEN' ? 1 : 0);
const RANK_SQL = (t: string): string => `(${t}.changed_at_ms * 2 + (${t}.state = 'OPEN')::int)`;

// A change that lands (a new opening, or a closing) ends any probe lease on the opening it replaces.
const PUBLISH_SQL = `INSERT INTO cplane_breakers AS b (key, state, consecutive_failures, opened_at_ms, changed_at_ms, host)
SELECT k, s, f, o, c, $6::text FROM unnest($1::text[], $2::text[], $3::int[], $4::bigint[], $5::bigint[]) AS u(k, s, f, o, c)
ON CONFLICT (key) DO UPDATE SET state = EXCLUDED.state, consecutive_failures = EXCLUDED.consecutive_failures,
  opened_at_ms = EXCLUDED.opened_at_ms, changed_at_ms = EXCLUDED.changed_at_ms, host = EXCLUDED.host,
  probe_host = NULL, probe_until_ms = NULL
WHERE ${RANK_SQL('EXCLUDED')} > ${RANK_SQL('b')}`;
/**
 * The lease on `key`'s opening at $4, taken when free, run out, or already this host's. `known`: whether any row
 * names the breaker (none: no other host knows of this opening, and this host decides alone).
 */
const CLAIM_SQL = `WITH claimed AS (
  UPDATE cplane_breakers SET probe_host = $2, probe_until_ms = $3
  WHERE key = $1 AND state = 'OPEN' AND opened_at_ms = $4
    AND (probe_until_ms IS NULL OR probe_until_ms <= $5 OR probe_until_ms > $6 OR probe_host = $2)
  RETURNING 1)
SELECT EXISTS (SELECT 1 FROM claimed) AS claimed, EXISTS (SELECT 1 FROM cplane_breakers WHERE key = $1) AS known`;
const POLL_SQL = 'SELECT key, state, consecutive_failures, opened_at_ms, changed_at_ms FROM cplane_breakers';

export class SharedBreakers {
  /** Per breaker, the rank of the latest change this host made or adopted: older rows are not news. */
  private readonly seen = new Map<string, number>();
  private readonly pending = new Map<string, Change>();
  /** Probe leases this host holds: per breaker, the opening it may probe and until when (this host's clock). */
  private readonly leases = new Map<string, { openedAtMs: number; untilMs: number }>();
  /** Breakers whose admission asked for the lease, with the opening it is for; claimed at the next exchange. */
  private readonly wanted = new Map<string, number>();
  private readonly claimedAtMs = new Map<string, number>();
  /** Openings adopted with a time nearer than the row's: the breaker's opened_at, and the row's it claims leases by. */
  private readonly pulledIn = new Map<string, { localMs: number; rowMs: number }>();
  private readonly unsubscribe: () => void;
  private readonly timer: NodeJS.Timeout;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  private ok = true;
  private lastError: string | null = null;
  private lastPollAtMs: number | null = null;
  private errors = 0;
  private exchangeStartedAtMs = 0;
  private readonly onPoolError = (error: Error): void => this.failed(error);

  private constructor(
    private readonly pool: pg.Pool,
    private readonly registry: BreakerRegistry,
    private readonly clock: () => number,
    private readonly host: string,
    private readonly pollMs: number,
    private readonly stallMs: number,
    private readonly leaseMs: number,
    private readonly maxSkewMs: number,
  ) {
    this.unsubscribe = registry.onTransition((snapshot) => this.queue(snapshot));
    registry.setProbeGate((key, openedAtMs) => this.mayProbe(key, openedAtMs));
    // An idle connection the server dropped must not crash the gateway; the next tick reconnects.
    pool.on('error', this.onPoolError);
    this.timer = setInterval(() => this.kick(), pollMs);
    this.timer.unref();
  }

  /**
   * Create the table when absent (throws ERR_STORE_UNAVAILABLE when the database cannot be reached), read it once so
   * the host starts refusing what is open elsewhere, then keep in step every pollMs until stop().
   */
  static async start(
    pool: pg.Pool,
    registry: BreakerRegistry,
    options: SharedBreakersOptions = {},
  ): Promise<SharedBreakers> {
    await ensureRouterTables(pool);
    const shared = new SharedBreakers(
      pool,
      registry,
      options.clock ?? Date.now,
      options.host ?? `${hostname()}:${process.pid}`,
      options.pollMs ?? 500,
      options.stallMs ?? Math.max(10 * (options.pollMs ?? 500), 5000),
      options.probeLeaseMs ?? Math.max(registry.config.reset_timeout_ms, 1000),
      options.maxSkewMs ?? Math.max(registry.config.reset_timeout_ms, 5000),
    );
    shared.kick();
    await shared.running;
    return shared;
  }

  status(): SharedBreakersStatus {
    const waited = this.running === null ? 0 : this.clock() - this.exchangeStartedAtMs;
    const stalled = waited > this.stallMs;
    return {
      ok: this.ok && !stalled,
      last_error: stalled ? `ERR_STORE_UNAVAILABLE: no reply from PostgreSQL for ${waited} ms` : this.lastError,
      last_poll_at: this.lastPollAtMs === null ? null : new Date(this.lastPollAtMs).toISOString(),
      pending: this.pending.size,
      errors: this.errors,
    };
  }

  /** Stop publishing and polling; waits for an exchange in flight so the caller may then end the pool. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    this.unsubscribe();
    this.registry.setProbeGate(null);
    await this.running;
    this.pool.off('error', this.onPoolError);
  }

  /**
   * The probe gate (hot path, synchronous): yes while this host holds the lease on this opening, or when the database
   * is away; otherwise the lease is asked for (at most once per poll interval per breaker) and the call refused.
   */
  private mayProbe(key: string, localOpenedAtMs: number): boolean {
    const pulled = this.pulledIn.get(key);
    const openedAtMs = pulled?.localMs === localOpenedAtMs ? pulled.rowMs : localOpenedAtMs;
    const lease = this.leases.get(key);
    const now = this.clock();
    if (lease !== undefined && lease.openedAtMs === openedAtMs && lease.untilMs > now) return true;
    if (!this.status().ok) return true;
    this.wanted.set(key, openedAtMs);
    if (now - (this.claimedAtMs.get(key) ?? Number.NEGATIVE_INFINITY) >= this.pollMs) this.kick();
    return false;
  }

  /** The hot path's only cost: queue the change and start an exchange that the call never waits for. */
  private queue(snapshot: BreakerSnapshot): void {
    // Later than every change seen: the closing of an opening stamped by a clock ahead of this one must outrank it.
    const after = Math.floor((this.seen.get(snapshot.key) ?? -1) / 2) + 1;
    const change: Change =
      snapshot.state === 'CLOSED'
        ? {
            key: snapshot.key,
            state: 'CLOSED',
            consecutive_failures: 0,
            opened_at_ms: null,
            changed_at_ms: Math.max(this.clock(), after),
          }
        : {
            key: snapshot.key,
            state: 'OPEN',
            consecutive_failures: snapshot.consecutive_failures,
            opened_at_ms: Date.parse(snapshot.opened_at ?? ''),
            changed_at_ms: Math.max(Date.parse(snapshot.opened_at ?? ''), after),
          };
    if (!Number.isFinite(change.changed_at_ms)) return;
    this.seen.set(change.key, Math.max(this.seen.get(change.key) ?? -1, rank(change.state, change.changed_at_ms)));
    this.pending.set(change.key, change);
    this.kick();
  }

  /** One exchange at a time; a kick during one runs another right after it. */
  private kick(): void {
    if (this.stopped) return;
    if (this.running !== null) {
      this.again = true;
      return;
    }
    this.running = (async () => {
      do {
        this.again = false;
        await this.exchange();
      } while (this.again && !this.stopped);
    })().finally(() => {
      this.running = null;
    });
  }

  private async exchange(): Promise<void> {
    this.exchangeStartedAtMs = this.clock();
    try {
      await this.flush();
      if (this.stopped) return;
      await this.claim();
      await this.poll();
      this.ok = true;
      this.lastError = null;
      // As of when the exchange began: a reply that came late is no fresher for it.
      this.lastPollAtMs = this.exchangeStartedAtMs;
    } catch (error) {
      this.failed(error);
    }
  }

  private failed(error: unknown): void {
    this.ok = false;
    this.errors += 1;
    this.lastError = describeError(error);
  }

  private async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const changes = [...this.pending.values()];
    await this.pool.query(PUBLISH_SQL, [
      changes.map((c) => c.key),
      changes.map((c) => c.state),
      changes.map((c) => c.consecutive_failures),
      changes.map((c) => c.opened_at_ms),
      changes.map((c) => c.changed_at_ms),
      this.host,
    ]);
    // A change queued while the statement ran is newer than the one sent: it stays for the next exchange.
    for (const change of changes) if (this.pending.get(change.key) === change) this.pending.delete(change.key);
  }

  private async claim(): Promise<void> {
    for (const [key, openedAtMs] of [...this.wanted]) {
      const now = this.clock();
      this.claimedAtMs.set(key, now);
      const result = await this.pool.query<{ claimed: boolean; known: boolean }>(CLAIM_SQL, [
        key,
        this.host,
        now + this.leaseMs,
        openedAtMs,
        now,
        now + this.leaseMs + this.maxSkewMs,
      ]);
      if (this.wanted.get(key) === openedAtMs) this.wanted.delete(key);
      const { claimed, known } = result.rows[0] ?? { claimed: false, known: true };
      if (claimed || !known) this.leases.set(key, { openedAtMs, untilMs: now + this.leaseMs });
    }
  }

  private async poll(): Promise<void> {
    const result = await this.pool.query<{
      key: string;
      state: SharedState;
      consecutive_failures: number;
      opened_at_ms: string | null;
      changed_at_ms: string;
    }>(POLL_SQL);
    for (const row of result.rows) {
      const changedAtMs = Number(row.changed_at_ms);
      const r = rank(row.state, changedAtMs);
      if (r <= (this.seen.get(row.key) ?? -1)) continue;
      this.seen.set(row.key, r);
      this.adopt({
        key: row.key,
        state: row.state,
        consecutive_failures: row.consecutive_failures,
        opened_at_ms: row.opened_at_ms === null ? null : Number(row.opened_at_ms),
        changed_at_ms: changedAtMs,
      });
    }
  }

  /** A remote opening later than the local one opens it; a remote closing later than the local opening closes it. */
  private adopt(change: Change): void {
    const breaker = this.registry.byKey(change.key);
    const local = breaker.snapshot();
    const localOpenedMs = local.opened_at === null ? null : Date.parse(local.opened_at);
    if (change.state === 'OPEN') {
      const rowMs = change.opened_at_ms ?? change.changed_at_ms;
      const openedAtMs = Math.min(rowMs, this.clock() + this.maxSkewMs);
      if (localOpenedMs !== null && localOpenedMs >= openedAtMs) return;
      if (openedAtMs === rowMs) this.pulledIn.delete(change.key);
      else this.pulledIn.set(change.key, { localMs: openedAtMs, rowMs });
      breaker.restore({
        key: change.key,
        state: 'OPEN',
        consecutive_failures: change.consecutive_failures,
        opened_at: new Date(openedAtMs).toISOString(),
        probes_in_flight: 0,
      });
    } else if (local.state !== 'CLOSED' && (localOpenedMs ?? 0) < change.changed_at_ms) {
      breaker.restore({
        key: change.key,
        state: 'CLOSED',
        consecutive_failures: 0,
        opened_at: null,
        probes_in_flight: 0,
      });
    }
  }
}
