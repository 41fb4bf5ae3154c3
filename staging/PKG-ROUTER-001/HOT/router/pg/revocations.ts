import type pg from 'pg';
import { CpError } from '#kernel/errors.js';
import type { AppendInput, LedgerEntry } from '#kernel/ledger/index.js';
import { ignoreDropped, storeError } from '#kernel/ledger/pg/pg-ledger.js';
import {
  keyRevokedRecord,
  readRevocations,
  type RevocationCheck,
  type RevokeResult,
  revocationMap,
  revocationReason,
  revokedIn,
} from '../revocations.js';
import { describeError, ensureRouterTables } from './tables.js';

/**
 * Revoked route keys on PostgreSQL (table cplane_revoked_keys), shared by every gateway host on the database. The
 * check runs on every authentication, so it reads a copy kept in memory and refreshed in the background; it fails
 * closed: a copy older than maxStaleMs refuses every key, since a revocation made meanwhile would not be in it.
 */
export interface PgRevocationsOptions {
  /** How often the list is read; default 1000 ms. */
  pollMs?: number;
  /** How old the last successful read may be before every authentication is refused; default 10 s. */
  maxStaleMs?: number;
  clock?: () => number;
}

export interface PgRevocationsStatus {
  /** The last read succeeded and the copy is fresh enough to be trusted (isRevoked answers rather than throws). */
  ok: boolean;
  last_error: string | null;
  /** When the list was last read successfully (ISO). */
  last_refresh_at: string;
  revoked: number;
}

const READ_SQL = 'SELECT key_id, effective_at_ms FROM cplane_revoked_keys';

export class PgRevocations implements RevocationCheck {
  private revoked: ReadonlyMap<string, number>;
  private refreshedAtMs: number;
  private lastError: string | null = null;
  private refreshing: Promise<void> | null = null;
  private stopped = false;
  private readonly timer: NodeJS.Timeout;
  private readonly onPoolError = (error: Error): void => {
    this.lastError = describeError(error);
  };

  private constructor(
    private readonly pool: pg.Pool,
    private readonly clock: () => number,
    private readonly maxStaleMs: number,
    pollMs: number,
    initial: ReadonlyMap<string, number>,
    readAtMs: number,
  ) {
    this.revoked = initial;
    this.refreshedAtMs = readAtMs;
    // An idle connection the server dropped must not crash the gateway; the next read reconnects.
    pool.on('error', this.onPoolError);
    this.timer = setInterval(() => {
      if (this.refreshing === null) this.refreshing = this.refresh().finally(() => (this.refreshing = null));
    }, pollMs);
    this.timer.unref();
  }

  /** Create the table when absent and read the list once (ERR_STORE_UNAVAILABLE when the database cannot be reached). */
  static async open(pool: pg.Pool, options: PgRevocationsOptions = {}): Promise<PgRevocations> {
    await ensureRouterTables(pool);
    const clock = options.clock ?? Date.now;
    const readAtMs = clock();
    const initial = await readRevoked(pool).catch((error: unknown) => {
      throw storeError(error);
    });
    return new PgRevocations(pool, clock, options.maxStaleMs ?? 10_000, options.pollMs ?? 1000, initial, readAtMs);
  }

  isRevoked(keyIds: readonly string[], nowMs = this.clock()): boolean {
    const age = this.clock() - this.refreshedAtMs;
    if (age > this.maxStaleMs) {
      throw new CpError(
        'ERR_REVOCATION_LIST_STALE',
        `the revoked keys were last read from PostgreSQL ${age} ms ago (more than ${this.maxStaleMs} ms): a key revoked since may be missing`,
        {
          hint: 'every authentication is refused until the list is read again: bring the database back or fix the connection',
          details: { age_ms: age, max_stale_ms: this.maxStaleMs, last_error: this.lastError },
        },
      );
    }
    return revokedIn(this.revoked, keyIds, nowMs);
  }

  /** Read the list now (the timer does this every pollMs); a failure is kept in status(), never thrown. */
  async refresh(): Promise<void> {
    if (this.stopped) return;
    // A copy is as old as the moment its query was sent: a reply that took long is not fresher for it.
    const readAtMs = this.clock();
    try {
      const revoked = await readRevoked(this.pool);
      if (readAtMs < this.refreshedAtMs) return;
      this.revoked = revoked;
      this.refreshedAtMs = readAtMs;
      this.lastError = null;
    } catch (error) {
      this.lastError = describeError(error);
    }
  }

  status(): PgRevocationsStatus {
    return {
      ok: this.lastError === null && this.clock() - this.refreshedAtMs <= this.maxStaleMs,
      last_error: this.lastError,
      last_refresh_at: new Date(this.refreshedAtMs).toISOString(),
      revoked: this.revoked.size,
    };
  }

  /** Stop refreshing; waits for a read in flight so the caller may then end the pool. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.refreshing;
    this.pool.off('error', this.onPoolError);
  }
}

async function readRevoked(pool: pg.Pool): Promise<Map<string, number>> {
  const result = await pool.query<{ key_id: string; effective_at_ms: string | null }>(READ_SQL);
  return revocationMap(
    result.rows.map((row) => ({
      key_id: row.key_id,
      effective_ms: row.effective_at_ms === null ? Number.NEGATIVE_INFINITY : Number(row.effective_at_ms),
    })),
  );
}

/** Where KEY_REVOKED goes: a ledger store (PgLedger on the same database, in a gateway). */
export interface RevocationLedger {
  appendBatch(inputs: readonly AppendInput[]): Promise<LedgerEntry[]>;
}

/**
 * Revoke a key id on PostgreSQL and record KEY_REVOKED. The row is inserted in a transaction that commits only after
 * the record is appended, so no host ever sees a revocation without its record: a ledger that refuses rolls the
 * row back and its error is rethrown. An id already revoked is left as it was (changed: false); two hosts revoking
 * the same id at once wait on its key and one of them records it. The transaction holds one of the pool's connections
 * while the ledger appends: a ledger on the same pool needs it to allow two.
 */
export async function revokeKeyPg(
  pool: pg.Pool,
  ledger: RevocationLedger,
  keyId: string,
  reason: string | null,
  clock: () => number = Date.now,
  /** When the revocation takes effect (a rotation's grace end); absent: at once. */
  effectiveAtMs?: number,
): Promise<RevokeResult> {
  const why = revocationReason(keyId, reason);
  await ensureRouterTables(pool);
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw storeError(error);
  }
  client.on('error', ignoreDropped);
  let broken: Error | undefined;
  try {
    const revokedAt = new Date(clock()).toISOString();
    let inserted: number;
    let count: number;
    try {
      await client.query('BEGIN');
      // A key already revoked stays as it is, unless this revocation takes effect sooner (a rotated key deleted).
      inserted =
        (
          await client.query(
            `INSERT INTO cplane_revoked_keys AS r (key_id, revoked_at, reason, effective_at_ms) VALUES ($1, $2, $3, $4)
             ON CONFLICT (key_id) DO UPDATE SET revoked_at = EXCLUDED.revoked_at, reason = EXCLUDED.reason,
               effective_at_ms = EXCLUDED.effective_at_ms
             WHERE r.effective_at_ms IS NOT NULL
               AND (EXCLUDED.effective_at_ms IS NULL OR EXCLUDED.effective_at_ms < r.effective_at_ms)`,
            [keyId, revokedAt, why, effectiveAtMs ?? null],
          )
        ).rowCount ?? 0;
      if (inserted === 0) {
        const existing = await client.query<{ revoked_at: string }>(
          'SELECT revoked_at FROM cplane_revoked_keys WHERE key_id = $1',
          [keyId],
        );
        await client.query('ROLLBACK');
        return { key_id: keyId, changed: false, entry_id: null, revoked_at: existing.rows[0]?.revoked_at ?? revokedAt };
      }
      count = Number((await client.query<{ n: string }>('SELECT count(*) AS n FROM cplane_revoked_keys')).rows[0]?.n);
    } catch (error) {
      broken = error as Error;
      throw storeError(error);
    }
    let entry: LedgerEntry | undefined;
    try {
      [entry] = await ledger.appendBatch([
        keyRevokedRecord(keyId, revokedAt, why, {
          ...(effectiveAtMs === undefined ? {} : { effective_at: new Date(effectiveAtMs).toISOString() }),
          revoked_count: count,
          store: 'postgres',
        }),
      ]);
    } catch (error) {
      await client.query('ROLLBACK').catch((rollback: Error) => {
        broken = rollback;
      });
      throw error;
    }
    try {
      await client.query('COMMIT');
    } catch (error) {
      // The record is in the ledger but the row is not: retrying the revocation writes both.
      broken = error as Error;
      throw storeError(error);
    }
    return { key_id: keyId, changed: true, entry_id: entry?.id ?? null, revoked_at: revokedAt };
  } finally {
    // A connection left mid-transaction by a failure is dropped, not handed to the next query.
    client.off('error', ignoreDropped);
    client.release(broken);
  }
}

/** Copy a root's revoked-keys.json into the table (for `ledger migrate`); ids already there are kept. Returns how many were added. */
export async function copyRevocations(root: string, pool: pg.Pool): Promise<number> {
  const { entries } = readRevocations(root);
  await ensureRouterTables(pool);
  if (entries.length === 0) return 0;
  try {
    const result = await pool.query(
      `INSERT INTO cplane_revoked_keys (key_id, revoked_at, reason)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) ON CONFLICT (key_id) DO NOTHING`,
      [entries.map((e) => e.key_id), entries.map((e) => e.revoked_at), entries.map((e) => e.reason)],
    );
    return result.rowCount ?? 0;
  } catch (error) {
    throw storeError(error);
  }
}
