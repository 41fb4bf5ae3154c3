import { existsSync } from 'node:fs';
import { storeError } from '#kernel/ledger/pg/pg-ledger.js';
import { budgetDbPathForRoot, loadBudgetConfigForRoot } from '../config.js';
import { scopeIds } from '../operations.js';
import { scopesFor } from '../scopes.js';
import { BudgetStore, type ReservationRow, type ScopeKey, type TotalsRow, zeroTotals } from '../store.js';
import { ignoreDropped } from '#kernel/ledger/pg/pg-ledger.js';
import { PgBudgeter } from './pg-budgeter.js';
import { PG_BUDGET_LOCK, RESERVATION_COLUMNS, TOTALS_COUNTERS } from './schema.js';

export interface BudgetCopy {
  /** Reservations written to PostgreSQL by this run, and those it found already there (left as they are). */
  reservations: number;
  reservations_present: number;
  /** Scopes whose PostgreSQL totals this run added to. */
  scopes: number;
  rate_windows: number;
  /** Scopes of the SQLite file whose totals are not the sum of its reservations (0 for a file cplane wrote). */
  scopes_differing: number;
  /** Records kept in the file's outbox (a crash before they reached the ledger), now kept in PostgreSQL's. */
  kept_records: number;
}

const CHUNK = 1000;
const RESERVATION_TYPES: Record<string, string> = {
  reserved_tokens: 'bigint',
  reserved_cost: 'bigint',
  charged_tokens: 'bigint',
  charged_cost: 'bigint',
  actual_tokens: 'bigint',
  actual_cost: 'bigint',
  over_budget: 'int',
};
const INSERT_RESERVATIONS_SQL = `INSERT INTO cplane_budget_reservations (${RESERVATION_COLUMNS.join(', ')})
  SELECT * FROM unnest(${RESERVATION_COLUMNS.map((c, i) => `$${i + 1}::${RESERVATION_TYPES[c] ?? 'text'}[]`).join(', ')})
  ON CONFLICT (request_id) DO NOTHING RETURNING request_id`;
const ADD_TOTALS_SQL = `INSERT INTO cplane_budget_scope_totals AS t (scope, kind, session_id, work_order_id, agent_id,
  ${TOTALS_COUNTERS.join(', ')})
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[],
    $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[])
  ON CONFLICT (scope) DO UPDATE SET ${TOTALS_COUNTERS.map((c) => `${c} = t.${c} + excluded.${c}`).join(', ')}`;
const INSERT_KEPT_SQL = `INSERT INTO cplane_budget_outbox (request_id, finished_at, records)
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) ON CONFLICT (request_id) DO NOTHING`;
const INSERT_WINDOWS_SQL = `INSERT INTO cplane_budget_rate_windows (scope, window_start, requests, tokens)
  SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[]) ON CONFLICT (scope) DO NOTHING`;

/**
 * Copy a SQLite budget (budget.sqlite) into PostgreSQL, in one PostgreSQL transaction: all of it lands or none.
 *
 * Totals are not copied as numbers: each reservation this run writes adds its own share to its scopes (what
 * reserve/settle/release added for it on SQLite), and a reservation already in PostgreSQL is left as it is and
 * adds nothing. So however many times it runs, and even with gateways charging PostgreSQL meanwhile, every
 * reservation there is counted in its scopes' totals exactly once: a rerun copies only reservations made on
 * SQLite since, and a reservation that was pending when first copied and finished on SQLite afterwards stays
 * pending in PostgreSQL (the orphan reconciliation then charges it in full: over, never under). The SQLite
 * totals are checked against that sum (`scopes_differing`). Rate windows are copied where PostgreSQL has none.
 */
export async function copyBudgetState(sqlitePath: string, target: PgBudgeter): Promise<BudgetCopy> {
  const source = BudgetStore.open(sqlitePath, { synchronous: 'NORMAL', busyTimeoutMs: 10_000, readonly: true });
  const client = await target.pool.connect().catch((error: unknown) => {
    source.close();
    throw storeError(error);
  });
  client.on('error', ignoreDropped);
  let broken: Error | undefined;
  try {
    // One read transaction: a consistent copy while gateways may still write the file.
    source.db.exec('BEGIN');
    await client.query('BEGIN');
    await client.query(`SELECT pg_advisory_xact_lock(${PG_BUDGET_LOCK})`);
    const shares = new Map<string, TotalsRow>();
    const sums = new Map<string, TotalsRow>();
    const page = source.db.prepare('SELECT * FROM reservations WHERE request_id > ? ORDER BY request_id LIMIT ?');
    let reservations = 0;
    let present = 0;
    for (let after = ''; ; ) {
      const rows = (page.all(after, CHUNK) as Partial<ReservationRow>[]).map(
        (r) => ({ ...r, budget_scope: r.budget_scope ?? '' }) as ReservationRow,
      );
      if (rows.length === 0) break;
      const written = await client.query<{ request_id: string }>(
        INSERT_RESERVATIONS_SQL,
        RESERVATION_COLUMNS.map((c) => rows.map((r) => r[c])),
      );
      const fresh = new Set(written.rows.map((r) => r.request_id));
      reservations += fresh.size;
      present += rows.length - fresh.size;
      for (const row of rows) {
        const keys = scopesFor(target.config, scopeIds(row), Date.parse(row.created_at)).map((s) => s.totals);
        addShare(sums, keys, row);
        if (fresh.has(row.request_id)) addShare(shares, keys, row);
      }
      after = (rows[rows.length - 1] as ReservationRow).request_id;
    }
    const totals = [...shares.values()];
    if (totals.length > 0)
      await client.query(ADD_TOTALS_SQL, [
        totals.map((t) => t.scope),
        totals.map((t) => t.kind),
        totals.map((t) => t.session_id),
        totals.map((t) => t.work_order_id),
        totals.map((t) => t.agent_id),
        ...TOTALS_COUNTERS.map((c) => totals.map((t) => t[c])),
      ]);
    const stored = source.db.prepare('SELECT * FROM scope_totals').all() as TotalsRow[];
    const differing = stored.filter((row) => {
      const sum = sums.get(row.scope);
      return TOTALS_COUNTERS.some((c) => row[c] !== (sum?.[c] ?? 0));
    }).length;
    // From version 4 a window is kept in its scope's row (scope_rows; scope_totals is a view of their totals).
    const merged =
      source.db
        .prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'rate_windows'")
        .pluck()
        .get() === 0;
    const windows = source.db
      .prepare(
        merged
          ? `SELECT scope, window_start, window_requests AS requests, window_tokens AS tokens FROM scope_rows
             WHERE window_start IS NOT NULL`
          : 'SELECT scope, window_start, requests, tokens FROM rate_windows',
      )
      .all() as {
      scope: string;
      window_start: number;
      requests: number;
      tokens: number;
    }[];
    const copied = await client.query(INSERT_WINDOWS_SQL, [
      windows.map((w) => w.scope),
      windows.map((w) => w.window_start),
      windows.map((w) => w.requests),
      windows.map((w) => w.tokens),
    ]);
    // Delivered to the chain the ledger was migrated into by the store's reconciliation passes (only if the chain
    // does not hold them already). A file laid out before the outbox has none; from version 3 it is a view of the
    // open requests' kept rows.
    const hasOutbox =
      source.db
        .prepare("SELECT count(*) FROM sqlite_master WHERE type IN ('table', 'view') AND name = 'record_outbox'")
        .pluck()
        .get() !== 0;
    const kept = hasOutbox
      ? (source.db.prepare('SELECT request_id, finished_at, records FROM record_outbox').all() as {
          request_id: string;
          finished_at: string;
          records: string;
        }[])
      : [];
    const keptCopied =
      kept.length === 0
        ? 0
        : ((
            await client.query(INSERT_KEPT_SQL, [
              kept.map((k) => k.request_id),
              kept.map((k) => k.finished_at),
              kept.map((k) => k.records),
            ])
          ).rowCount ?? 0);
    await client.query('COMMIT');
    return {
      reservations,
      reservations_present: present,
      scopes: totals.length,
      rate_windows: copied.rowCount ?? 0,
      scopes_differing: differing,
      kept_records: keptCopied,
    };
  } catch (error) {
    try {
      await client.query('ROLLBACK');
    } catch (rollbackError) {
      broken = rollbackError as Error;
    }
    throw storeError(error);
  } finally {
    client.off('error', ignoreDropped);
    client.release(broken);
    if (source.db.inTransaction) source.db.exec('ROLLBACK');
    source.close();
  }
}

/** What one reservation added to its scopes' totals on SQLite (release takes back all that reserve added). */
function addShare(into: Map<string, TotalsRow>, keys: readonly ScopeKey[], row: ReservationRow): void {
  if (row.state === 'released') return;
  const settled = row.state === 'settled';
  for (const key of keys) {
    const t = into.get(key.scope) ?? zeroTotals(key);
    t.requests += 1;
    if (settled) {
      t.settled_tokens += row.charged_tokens ?? 0;
      t.settled_cost += row.charged_cost ?? 0;
      t.unknown_cost_requests += row.actual_cost === null ? 1 : 0;
    } else {
      t.reserved_tokens += row.reserved_tokens;
      t.reserved_cost += row.reserved_cost ?? 0;
    }
    into.set(key.scope, t);
  }
}

/**
 * The entry point `cplane ledger migrate` discovers in a root (the kernel cannot depend on the budgeter): copy
 * the root's budget to the PostgreSQL at `url`. Null when the root has no budget database (nobody has spent).
 */
export async function migrateRootBudget(root: string, url: string): Promise<BudgetCopy | null> {
  const path = budgetDbPathForRoot(root);
  if (!existsSync(path)) return null;
  const target = await PgBudgeter.open(url, { config: loadBudgetConfigForRoot(root), create: true });
  try {
    return await copyBudgetState(path, target);
  } finally {
    await target.close();
  }
}
