import type pg from 'pg';
import { ignoreDropped, PgLedger, storeError } from '#kernel/ledger/pg/pg-ledger.js';
import { parseStoredMetadata } from '#kernel/ledger/rows.js';
import { loadBudgetConfigForRoot } from '../config.js';
import { BUDGET_EVENTS, foldedBudget } from '../records.js';
import {
  type CallLedger,
  type PendingReconcileOptions,
  type ReconciledReservation,
  reconcilePending,
} from '../reconcile.js';
import { PgBudgeter } from './pg-budgeter.js';

// In roots written before, the router appended a call's BUDGET_ALLOCATED and its DISPATCH in one batch, so the
// DISPATCH is the entry right after the allocation (as on SQLite). The session comes from the reservation (the
// budget tables live in the same database): the allocation is then found through the session index, never by
// scanning every allocation.
const DISPATCH_OF_REQUEST_SQL = `SELECT d.id FROM cplane_budget_reservations AS r
  JOIN cplane_entries AS a ON a.session_id = convert_to(r.session_id, 'UTF8')
    AND a.event_type = '${BUDGET_EVENTS.allocated}' AND a.submission_id = convert_to(r.request_id, 'UTF8')
  JOIN cplane_entries AS d ON d.seq = a.seq + 1 AND d.event_type = 'DISPATCH'
  WHERE r.request_id = $1 ORDER BY a.seq DESC LIMIT 1`;
// A call's DISPATCH carries its reservation folded (metadata.budget), found through the reservation's session;
// matched in the canonical JSON text (where the request id, a JSON string, is written as JSON.stringify writes it),
// then checked parsed.
const FOLDED_IN_SESSION_SQL = `SELECT e.id, e.metadata FROM cplane_entries AS e
  WHERE e.session_id = $1 AND e.event_type = $2 AND strpos(e.metadata, $3) > 0 ORDER BY e.seq DESC`;
const SESSION_OF_REQUEST_SQL = `SELECT session_id FROM cplane_budget_reservations WHERE request_id = $1`;
// Matched in the canonical JSON text, as PgLedger.hasExchange does: jsonb refuses the \u0000 an EXCHANGE may hold.
const EXCHANGE_OF_DISPATCH_SQL = `SELECT e.id FROM cplane_entries AS d
  JOIN cplane_entries AS e ON e.session_id = d.session_id AND e.seq > d.seq AND e.event_type = 'EXCHANGE'
    AND strpos(e.metadata, $2) > 0
  WHERE d.id = $1 ORDER BY e.seq LIMIT 1`;

/** The PostgreSQL chain as a CallLedger: the lookups of the SQLite reconciliation, records appended to the chain. */
export function pgCallLedger(ledger: PgLedger): CallLedger {
  /** The newest entry of the kind in the session whose folded budget names the request. */
  const folded = async (requestId: string, sessionId: string, kind: string): Promise<string | null> => {
    const r = await ledger.pool.query<{ id: string; metadata: string }>(FOLDED_IN_SESSION_SQL, [
      Buffer.from(sessionId, 'utf8'),
      kind,
      `"request_id":${JSON.stringify(requestId)}`,
    ]);
    for (const row of r.rows) if (foldedBudget(parseStoredMetadata(row))?.request_id === requestId) return row.id;
    return null;
  };
  return {
    async foldedSettlement(requestId, sessionId) {
      try {
        return (await folded(requestId, sessionId, 'EXCHANGE')) !== null;
      } catch (error) {
        throw storeError(error);
      }
    },
    async callOf(requestId) {
      try {
        const s = await ledger.pool.query<{ session_id: string }>(SESSION_OF_REQUEST_SQL, [requestId]);
        const sessionId = s.rows[0]?.session_id;
        const dispatch =
          (sessionId === undefined ? null : await folded(requestId, sessionId, 'DISPATCH')) ??
          (await ledger.pool.query<{ id: string }>(DISPATCH_OF_REQUEST_SQL, [requestId])).rows[0]?.id ??
          null;
        if (dispatch === null) return { dispatch, exchange: null };
        const e = await ledger.pool.query<{ id: string }>(EXCHANGE_OF_DISPATCH_SQL, [
          dispatch,
          `"dispatch_entry_id":${JSON.stringify(dispatch)}`,
        ]);
        return { dispatch, exchange: e.rows[0]?.id ?? null };
      } catch (error) {
        throw storeError(error);
      }
    },
    appendBatch: (records, options) => ledger.appendBatch(records, options),
  };
}

/** 'cprc': the advisory lock one host's reconciliation pass holds, so the other hosts skip theirs meanwhile. */
const PASS_LOCK = 0x63707263;

/**
 * One reconciliation pass over a shared store, by at most one host at a time: a host whose pass finds another
 * host's under way skips (null) rather than waiting to redo the same work. Correctness never depends on the lock
 * (the budgeter's step already charges a reservation once); it keeps N hosts from doing one pass N times.
 */
export async function reconcileSharedPass(
  budget: PgBudgeter,
  ledger: PgLedger,
  options: PendingReconcileOptions = {},
): Promise<ReconciledReservation[] | null> {
  let client: pg.PoolClient;
  try {
    client = await ledger.pool.connect();
  } catch (error) {
    throw storeError(error);
  }
  client.on('error', ignoreDropped);
  let broken: Error | undefined;
  try {
    // A transaction's lock, held by a transaction left open for the pass (the pass's own work runs on other
    // connections): it cannot outlive the pass, even behind a transaction-pooling proxy, where a session lock could
    // stay held on a server connection and every later pass would skip.
    await client.query('BEGIN');
    const got = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS locked', [PASS_LOCK]);
    if (got.rows[0]?.locked !== true) {
      await client.query('ROLLBACK');
      return null;
    }
    try {
      return await reconcilePending(budget, pgCallLedger(ledger), options);
    } finally {
      await client.query('ROLLBACK').catch((error: Error) => {
        // Ended meanwhile (idle_in_transaction_session_timeout, a dropped connection): the lock went with it, and the
        // pass's work is committed on its own connections; this connection is discarded.
        broken = error;
      });
    }
  } catch (error) {
    // The connection may be what failed: discarded rather than handed to the next query.
    broken ??= error as Error;
    throw storeError(error);
  } finally {
    client.off('error', ignoreDropped);
    client.release(broken ?? false);
  }
}

/**
 * The entry point `cplane ledger orphans --reconcile --store URL` discovers in a root: one pass over the shared
 * store with the root's budget config (the scopes a charge counts against). Null when another host's pass was
 * under way: it settles them.
 */
export async function reconcileStore(
  root: string,
  url: string,
  options: PendingReconcileOptions = {},
): Promise<ReconciledReservation[] | null> {
  const config = loadBudgetConfigForRoot(root);
  const ledger = await PgLedger.open(url, { poolSize: 2 });
  try {
    const budget = await PgBudgeter.open(url, { config, poolSize: 2 });
    try {
      return await reconcileSharedPass(budget, ledger, options);
    } finally {
      await budget.close();
    }
  } finally {
    await ledger.close();
  }
}
