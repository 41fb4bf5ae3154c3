import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type pg from 'pg';
import { storeError } from '#kernel/ledger/pg/pg-ledger.js';
import { committedTransaction } from '#kernel/ledger/pg/pg-transaction.js';
import type { Alert } from './outbox.js';

/** What a host may do with an alert it holds, as the shared claims say. */
export type ClaimVerdict =
  /** This host delivers it now (it holds the claim until `leaseMs` from now). */
  | { kind: 'mine' }
  /** Another host delivered it (or the same condition's alert): nothing to send. */
  | { kind: 'done' }
  /** Another host is delivering it: ask again at `retryAt` (it may die before it is done). */
  | { kind: 'held'; retryAt: number };

/** The hosts' agreement on who sends an alert (a shared store's; a lone host needs none). */
export interface AlertClaims {
  claim(alert: Alert, now: number, leaseMs: number): Promise<ClaimVerdict>;
  /** The claimed alert reached the webhook: the condition is done for every host. */
  sent(alert: Alert, now: number): Promise<void>;
  /** The claimed delivery failed: any host (this one included) may claim it again at once. */
  release(alert: Alert): Promise<void>;
}

export const ALERT_CLAIMS_DDL = `CREATE TABLE IF NOT EXISTS cplane_alert_claims (
  condition TEXT PRIMARY KEY,
  alert_id TEXT NOT NULL,
  type TEXT NOT NULL,
  host TEXT NOT NULL,
  lease_until_ms BIGINT NOT NULL,
  sent_at_ms BIGINT
)`;

/** 'cpal': its own advisory lock, so two hosts starting at once do not race on CREATE TABLE IF NOT EXISTS. */
const DDL_LOCK = 0x6370616c;

const INSERT_SQL = `INSERT INTO cplane_alert_claims (condition, alert_id, type, host, lease_until_ms)
VALUES ($1, $2, $3, $4, $5) ON CONFLICT (condition) DO NOTHING`;
const LOCK_SQL =
  'SELECT alert_id, type, host, lease_until_ms, sent_at_ms FROM cplane_alert_claims WHERE condition = $1 FOR UPDATE';
const TAKE_SQL = `UPDATE cplane_alert_claims SET alert_id = $2, type = $3, host = $4, lease_until_ms = $5, sent_at_ms = NULL
WHERE condition = $1`;
const SENT_SQL = 'UPDATE cplane_alert_claims SET sent_at_ms = $3 WHERE condition = $1 AND alert_id = $2';
const RELEASE_SQL = `UPDATE cplane_alert_claims SET lease_until_ms = 0
WHERE condition = $1 AND alert_id = $2 AND host = $3 AND sent_at_ms IS NULL`;

/**
 * The condition an alert reports, shared by the hosts that see it. A budget alert's id already names its scope and
 * period. A breaker's names its opening's time, which differs between hosts that each opened their copy of one
 * shared breaker: the condition is the breaker, and an alert of the type its row last holds repeats that one.
 */
export function conditionOf(alert: Alert): string {
  if (alert.type === 'breaker_opened' || alert.type === 'breaker_closed')
    return `breaker/${String(alert.detail.breaker)}`;
  return alert.id;
}

interface ClaimRow {
  alert_id: string;
  type: string;
  host: string;
  lease_until_ms: string;
  sent_at_ms: string | null;
}

/**
 * The verdict on a condition's row for an alert: the same type (the same alert, or the same breaker state another
 * host reported) is done once sent and held while another host's lease runs; a different type (the breaker moved
 * on) takes the row once the previous alert is sent or its host's lease ran out.
 */
export function judge(row: ClaimRow, alert: Alert, host: string, now: number): ClaimVerdict {
  const leaseUntil = Number(row.lease_until_ms);
  const free = row.sent_at_ms === null && (leaseUntil <= now || row.host === host);
  if (row.type === alert.type) {
    if (row.sent_at_ms !== null) return { kind: 'done' };
    return free ? { kind: 'mine' } : { kind: 'held', retryAt: leaseUntil };
  }
  if (row.sent_at_ms !== null || free) return { kind: 'mine' };
  return { kind: 'held', retryAt: leaseUntil };
}

/**
 * Alert claims in the shared PostgreSQL store (table cplane_alert_claims, one row per condition: bounded by scopes,
 * periods and breakers, never by calls). A host claims a condition in one transaction (insert, else lock the row
 * and judge it) before it delivers, and marks it sent after: one delivery per condition across the hosts, while
 * each host's outbox keeps the alert until the claims say it is done, so a host that dies holding a claim loses
 * nothing (its lease runs out and another host delivers).
 */
export class PgAlertClaims implements AlertClaims {
  private constructor(
    private readonly pool: pg.Pool,
    readonly host: string,
  ) {}

  static async open(pool: pg.Pool, host = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`) {
    await committedTransaction(pool, async (client) => {
      await client.query(`SELECT pg_advisory_xact_lock(${DDL_LOCK})`);
      await client.query(ALERT_CLAIMS_DDL);
    });
    return new PgAlertClaims(pool, host);
  }

  claim(alert: Alert, now: number, leaseMs: number): Promise<ClaimVerdict> {
    const condition = conditionOf(alert);
    const values = [condition, alert.id, alert.type, this.host, now + leaseMs];
    return committedTransaction(this.pool, async (client) => {
      if ((await client.query(INSERT_SQL, values)).rowCount === 1) return { kind: 'mine' } as const;
      const row = (await client.query<ClaimRow>(LOCK_SQL, [condition])).rows[0];
      if (row === undefined) return { kind: 'held', retryAt: now } as const;
      const verdict = judge(row, alert, this.host, now);
      if (verdict.kind === 'mine') await client.query(TAKE_SQL, values);
      return verdict;
    });
  }

  async sent(alert: Alert, now: number): Promise<void> {
    await this.pool.query(SENT_SQL, [conditionOf(alert), alert.id, now]).catch((e: unknown) => {
      throw storeError(e);
    });
  }

  async release(alert: Alert): Promise<void> {
    await this.pool.query(RELEASE_SQL, [conditionOf(alert), alert.id, this.host]).catch((e: unknown) => {
      throw storeError(e);
    });
  }
}
