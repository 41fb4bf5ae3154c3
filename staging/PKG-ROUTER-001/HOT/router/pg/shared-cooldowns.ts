import { hostname } from 'node:os';
import type pg from 'pg';
import type { CooldownListener } from '../routing/resolver.js';
import { describeError, ensureRouterTables } from './tables.js';

/** What the shared cooldowns feed: a routing resolver's (router/routing/resolver.ts). */
export interface CooldownTarget {
  onCooldown(listener: CooldownListener | null): void;
  adoptCooldown(deploymentId: string, untilMs: number): void;
}

// A row only moves later: a host's shorter rest never cuts another's longer one.
const PUBLISH_SQL = `INSERT INTO cplane_cooldowns AS c (key, until_ms, host)
SELECT k, u, $3::text FROM unnest($1::text[], $2::bigint[]) AS x(k, u)
ON CONFLICT (key) DO UPDATE SET until_ms = EXCLUDED.until_ms, host = EXCLUDED.host
WHERE EXCLUDED.until_ms > c.until_ms`;
const READ_SQL = 'SELECT key, until_ms FROM cplane_cooldowns WHERE until_ms > $1';

/**
 * Deployment cooldowns shared by the gateway hosts on one PostgreSQL database (table cplane_cooldowns): a 429 one host
 * sees rests the deployment on every host within a poll. Picking stays local and synchronous; this module carries
 * cooldowns between hosts: a local one is upserted in the background (a failed upsert is tried again at the next
 * poll), and every pollMs the rows still in force are read and adopted, which announces nothing (no echo). A database
 * that is away leaves each host its own cooldowns, as without a shared store. One row per deployment: bounded by
 * the config, never by traffic.
 */
export class SharedCooldowns {
  private readonly pending = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | null = null;
  private stopped = false;
  lastError: string | null = null;

  private constructor(
    private readonly pool: pg.Pool,
    private readonly target: CooldownTarget,
    private readonly clock: () => number,
    private readonly host: string,
  ) {}

  static async start(
    pool: pg.Pool,
    target: CooldownTarget,
    options: { pollMs?: number; clock?: () => number; host?: string } = {},
  ): Promise<SharedCooldowns> {
    await ensureRouterTables(pool);
    const shared = new SharedCooldowns(
      pool,
      target,
      options.clock ?? Date.now,
      options.host ?? `${hostname()}:${process.pid}`,
    );
    target.onCooldown((deployment, untilMs) => shared.publish(deployment, untilMs));
    await shared.sync();
    shared.timer = setInterval(() => void shared.sync(), options.pollMs ?? 500);
    shared.timer.unref();
    return shared;
  }

  private publish(deployment: string, untilMs: number): void {
    this.pending.set(deployment, Math.max(untilMs, this.pending.get(deployment) ?? 0));
    void this.sync();
  }

  /** One exchange at a time: publish what is pending, then adopt what is in force. */
  sync(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.running ??= this.exchange().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async exchange(): Promise<void> {
    const batch = [...this.pending];
    this.pending.clear();
    try {
      if (batch.length > 0)
        await this.pool.query(PUBLISH_SQL, [batch.map(([k]) => k), batch.map(([, u]) => u), this.host]);
      const rows = (await this.pool.query<{ key: string; until_ms: string }>(READ_SQL, [this.clock()])).rows;
      for (const row of rows) this.target.adoptCooldown(row.key, Number(row.until_ms));
      this.lastError = null;
    } catch (error) {
      for (const [k, u] of batch) this.pending.set(k, Math.max(u, this.pending.get(k) ?? 0));
      this.lastError = describeError(error);
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
    this.stopped = true;
    this.target.onCooldown(null);
  }
}
