import type pg from 'pg';
import { storeError } from '#kernel/ledger/pg/pg-ledger.js';
import type { BreakerSnapshot } from '../breaker.js';

/**
 * The breaker states the hosts share (cplane_breakers, written by SharedBreakers), as `cplane status` shows the
 * root's breakers.json: only what has tripped at least once has a row. A database no gateway has served from
 * yet has no table: nothing has tripped. Read only: status never lays out tables.
 */
export async function readSharedBreakers(pool: pg.Pool): Promise<BreakerSnapshot[]> {
  try {
    const present = await pool.query("SELECT to_regclass('cplane_breakers') IS NOT NULL AS present");
    if ((present.rows[0] as { present?: boolean } | undefined)?.present !== true) return [];
    const r = await pool.query(
      'SELECT key, state, consecutive_failures, opened_at_ms FROM cplane_breakers ORDER BY key COLLATE "C"',
    );
    return (
      r.rows as { key: string; state: 'OPEN' | 'CLOSED'; consecutive_failures: number; opened_at_ms: string | null }[]
    ).map((row) => ({
      key: row.key,
      state: row.state,
      consecutive_failures: row.consecutive_failures,
      opened_at: row.opened_at_ms === null ? null : new Date(Number(row.opened_at_ms)).toISOString(),
      probes_in_flight: 0,
    }));
  } catch (error) {
    throw storeError(error);
  }
}
