import { existsSync } from 'node:fs';
import { CpError, show } from '#kernel/errors.js';
import {
  type AppendInput,
  type AppendOptions,
  DEFAULT_ORPHAN_TIMEOUT_MS,
  exchangeOfDispatch,
  type Ledger,
} from '#kernel/ledger/index.js';
import { Budgeter } from './budgeter.js';
import { budgetDbPathForRoot } from './config.js';
import type { BudgetPort } from './port.js';
import { BUDGET_EVENTS, DELIVERED_ONCE, foldsInto } from './records.js';
import type { OutboxRow } from './kept-records.js';

export interface ReconcileOptions {
  /** How long a call may stay pending: the ledger's orphan timeout unless given. */
  timeoutMs?: number;
  /** Epoch milliseconds; defaults to the wall clock. */
  now?: number;
}

/** One pending reservation charged as unknown, with what the ledger says about its call. */
export interface ReconciledReservation {
  request_id: string;
  /** The call's DISPATCH marker, when the ledger has one (null: the call never reached the DISPATCH). */
  dispatch_entry_id: string | null;
  /** Its EXCHANGE when one exists (the call answered but its settlement never happened). */
  exchange_entry_id: string | null;
  reason: string;
  charged_tokens: number;
  charged_cost: number | null;
  ledger_entry_ids: string[];
}

// A call's DISPATCH carries its reservation folded (metadata.budget), found through the session's index. In roots
// written before, the router appended a call's BUDGET_ALLOCATED and its DISPATCH in one appendBatch (one
// transaction), so the DISPATCH is the entry right after the allocation.
const DISPATCH_OF_REQUEST_SQL = `SELECT d.id FROM entries AS a JOIN entries AS d ON d.seq = a.seq + 1
  WHERE a.submission_id = ? AND a.event_type = '${BUDGET_EVENTS.allocated}' AND d.event_type = 'DISPATCH'
  ORDER BY a.seq DESC LIMIT 1`;
const FOLDED_IN_SESSION_SQL = (kind: string): string =>
  `SELECT id FROM entries WHERE session_id = ? AND event_type = '${kind}'
  AND json_extract(metadata, '$.budget.request_id') = ? ORDER BY seq DESC LIMIT 1`;
// A reservation whose session the budget no longer knows: every DISPATCH is read (reconciliation only, never a call).
const FOLDED_DISPATCH_ANY_SQL = `SELECT id FROM entries WHERE event_type = 'DISPATCH'
  AND json_extract(metadata, '$.budget.request_id') = ? ORDER BY seq DESC LIMIT 1`;

/** The SQLite chain's DISPATCH of a request (folded or after its BUDGET_ALLOCATED) and its EXCHANGE. */
function sqliteCallOf(ledger: Ledger, requestId: string, sessionId: string | null): CallEntries {
  const folded =
    sessionId === null
      ? ledger.statement(FOLDED_DISPATCH_ANY_SQL).pluck().get(requestId)
      : ledger.statement(FOLDED_IN_SESSION_SQL('DISPATCH')).pluck().get(sessionId, requestId);
  const dispatch =
    (folded as string | undefined) ??
    (ledger.statement(DISPATCH_OF_REQUEST_SQL).pluck().get(requestId) as string | undefined) ??
    null;
  const exchange = dispatch === null ? null : (exchangeOfDispatch(ledger, dispatch) ?? null);
  return { dispatch, exchange };
}

/** Whether an EXCHANGE of the session carries this request's settlement (or release) folded. */
function sqliteFoldedSettlement(ledger: Ledger, requestId: string, sessionId: string): boolean {
  return ledger.statement(FOLDED_IN_SESSION_SQL('EXCHANGE')).pluck().get(sessionId, requestId) !== undefined;
}

export interface CallEntries {
  dispatch: string | null;
  exchange: string | null;
}

/** The settlement (or release) a kept row holds, with its session: what a call's EXCHANGE may carry folded. */
function keptSettlement(row: OutboxRow): { record: AppendInput; sessionId: string } | null {
  const record = row.records.find((r) => foldsInto(r) === 'EXCHANGE');
  const sessionId = record?.metadata?.session_id;
  return record === undefined || typeof sessionId !== 'string' ? null : { record, sessionId };
}

/**
 * A kept row's records less the settlement (or release) the chain already holds folded into the call's EXCHANGE
 * (its caller appended the EXCHANGE and died before reporting it): never settled twice in the chain.
 */
function withoutFolded(row: OutboxRow, kept: { record: AppendInput } | null, folded: boolean): OutboxRow {
  return kept === null || !folded ? row : { ...row, records: row.records.filter((r) => r !== kept.record) };
}

/** The orphan timeout and the reference time, checked: a bad one is the caller's usage error. */
function reconcileWindow(options: ReconcileOptions): { timeoutMs: number; now: number } {
  const timeoutMs = options.timeoutMs ?? DEFAULT_ORPHAN_TIMEOUT_MS;
  const now = options.now ?? Date.now();
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 0 || !Number.isFinite(now)) {
    throw new CpError(
      'ERR_USAGE',
      `orphan timeout must be a non-negative integer of milliseconds, got ${show(timeoutMs)}`,
      {
        hint: 'pass --timeout-ms N with N >= 0',
        details: { timeout_ms: timeoutMs },
      },
    );
  }
  return { timeoutMs, now };
}

function reconciled(
  requestId: string,
  dispatch: string | null,
  exchange: string | null,
  reason: string,
  reservation: { charged_tokens: number | null; charged_cost: number | null },
  ledgerEntryIds: string[],
): ReconciledReservation {
  return {
    request_id: requestId,
    dispatch_entry_id: dispatch,
    exchange_entry_id: exchange,
    reason,
    charged_tokens: reservation.charged_tokens as number,
    charged_cost: reservation.charged_cost,
    ledger_entry_ids: ledgerEntryIds,
  };
}

/** A step's kept records delivered to the chain by a reconciliation pass, or refused (row.problem). */
function delivered(row: OutboxRow, entries: readonly { id: string }[], timeoutMs: number): ReconciledReservation {
  const settled = row.records.find((r) => r.event_type === BUDGET_EVENTS.settled)?.metadata ?? {};
  return {
    request_id: row.request_id,
    dispatch_entry_id: null,
    exchange_entry_id: null,
    reason:
      row.problem ??
      `its ${row.records.map((r) => r.event_type).join(' + ')} record(s) were not in the ledger after the orphan timeout (${timeoutMs} ms): the process that made them died before appending them; appended now`,
    charged_tokens: typeof settled.charged_tokens === 'number' ? settled.charged_tokens : 0,
    charged_cost: typeof settled.charged_cost === 'number' ? settled.charged_cost : null,
    ledger_entry_ids: entries.map((e) => e.id),
  };
}

function describe(dispatch: string | null, exchange: string | null, timeoutMs: number): string {
  if (dispatch === null)
    return `reservation pending beyond the orphan timeout (${timeoutMs} ms) with no DISPATCH in the ledger; usage unknown`;
  if (exchange === null)
    return `call orphaned: DISPATCH ${dispatch} has no EXCHANGE after the orphan timeout (${timeoutMs} ms), its process died; usage unknown`;
  return `EXCHANGE ${exchange} was recorded but its reservation never settled within the orphan timeout (${timeoutMs} ms); usage unknown`;
}

/**
 * Reservations never stay pending forever: every reservation still pending after the orphan timeout (its
 * process died mid-call, leaving an orphaned DISPATCH, or its settlement failed) is settled as unknown usage —
 * kept charged at its upper bound, never released — with a BUDGET_SETTLED record in `ledger` naming the request
 * and its DISPATCH. Idempotent: a reservation settled meanwhile is left alone.
 */
export function reconcileStaleReservations(
  budgeter: Budgeter,
  ledger: Ledger,
  options: ReconcileOptions = {},
): ReconciledReservation[] {
  const { timeoutMs, now } = reconcileWindow(options);
  const out: ReconciledReservation[] = [];
  for (const row of budgeter.recordsDue(now - timeoutMs)) {
    if (row.problem !== undefined) {
      out.push(delivered(row, [], timeoutMs));
      continue;
    }
    const kept = keptSettlement(row);
    const due = withoutFolded(
      row,
      kept,
      kept !== null && sqliteFoldedSettlement(ledger, row.request_id, kept.sessionId),
    );
    const entries = due.records.length === 0 ? [] : ledger.appendBatch(due.records, { once: DELIVERED_ONCE });
    budgeter.forgetRecords([row.request_id]);
    if (entries.length > 0) out.push(delivered(due, entries, timeoutMs));
  }
  for (const requestId of budgeter.stalePending(now - timeoutMs)) {
    const { dispatch, exchange } = sqliteCallOf(ledger, requestId, budgeter.sessionOf(requestId));
    const reason = describe(dispatch, exchange, timeoutMs);
    const settled = budgeter.chargeUnknown(
      requestId,
      reason,
      { dispatch_entry_id: dispatch, reconciled: true },
      ledger,
    );
    if (!settled) continue;
    out.push(reconciled(requestId, dispatch, exchange, reason, settled.reservation, settled.ledger_entry_ids));
  }
  return out;
}

/**
 * What reconciling needs of a ledger on any store: the call a request made (its DISPATCH, carrying the reservation
 * or, in older roots, the entry right after its BUDGET_ALLOCATED; that DISPATCH's EXCHANGE), whether that EXCHANGE
 * carries the settlement, and a place to append the settlement record.
 */
export interface CallLedger {
  callOf(requestId: string): Promise<CallEntries>;
  /** Whether an EXCHANGE of the session carries the request's settlement (or release) folded (budget.records.ts). */
  foldedSettlement(requestId: string, sessionId: string): Promise<boolean>;
  appendBatch(records: readonly AppendInput[], options?: AppendOptions): Promise<readonly { id: string }[]>;
}

/**
 * The SQLite ledger as a CallLedger (the same lookups reconcileStaleReservations makes); `sessionOf` names a
 * reservation's session, so its folded DISPATCH is found through the session's index.
 */
export function sqliteCallLedger(
  ledger: Ledger,
  sessionOf: (requestId: string) => string | null = () => null,
): CallLedger {
  return {
    callOf: async (requestId) => sqliteCallOf(ledger, requestId, sessionOf(requestId)),
    foldedSettlement: async (requestId, sessionId) => sqliteFoldedSettlement(ledger, requestId, sessionId),
    appendBatch: async (records, options) => ledger.appendBatch(records, options),
  };
}

export interface PendingReconcileOptions extends ReconcileOptions {
  /** Reservations settled in one pass at most (oldest first); the rest wait for the next pass. */
  limit?: number;
  /** Reservations whose call the reconciling process itself still has in flight: alive, not orphans. */
  inFlight?: ReadonlySet<string>;
}

/**
 * reconcileStaleReservations through the async ports, for a budget and a ledger that are not one SQLite
 * transaction (PostgreSQL, shared by several hosts): the same decision and the same record. The charge is the
 * budgeter's step, which is idempotent per request id and serialised by its request lock, so when two hosts
 * reconcile one reservation at the same moment exactly one charges it and gets the record to append; the other
 * finds it no longer pending and appends nothing. The record is appended after the charge committed; the charge
 * kept it in the budget's outbox, so a host that dies between the two leaves it for the next pass, which first
 * delivers every record kept longer than the orphan timeout (appended with `once`: never twice).
 */
export async function reconcilePending(
  budget: BudgetPort,
  ledger: CallLedger,
  options: PendingReconcileOptions = {},
): Promise<ReconciledReservation[]> {
  const { timeoutMs, now } = reconcileWindow(options);
  const out: ReconciledReservation[] = [];
  for (const row of await budget.recordsDue(now - timeoutMs, options.limit)) {
    if (row.problem !== undefined) {
      out.push(delivered(row, [], timeoutMs));
      continue;
    }
    const kept = keptSettlement(row);
    const folded = kept !== null && (await ledger.foldedSettlement(row.request_id, kept.sessionId));
    const due = withoutFolded(row, kept, folded);
    const entries = due.records.length === 0 ? [] : await ledger.appendBatch(due.records, { once: DELIVERED_ONCE });
    await budget.forgetRecords([row.request_id]);
    if (entries.length > 0) out.push(delivered(due, entries, timeoutMs));
  }
  const alive = options.inFlight ?? new Set<string>();
  // Asked for as many more as are alive, so calls in flight never crowd the orphans out of a pass.
  const stale = await budget.stalePending(
    now - timeoutMs,
    options.limit === undefined ? undefined : options.limit + alive.size,
  );
  for (const requestId of stale.filter((id) => !alive.has(id)).slice(0, options.limit)) {
    const { dispatch, exchange } = await ledger.callOf(requestId);
    const reason = describe(dispatch, exchange, timeoutMs);
    const settled = await budget.chargeUnknown(requestId, reason, { dispatch_entry_id: dispatch, reconciled: true });
    if (!settled) continue;
    const entries = await ledger.appendBatch(settled.records);
    await budget.forgetRecords([requestId]);
    out.push(
      reconciled(
        requestId,
        dispatch,
        exchange,
        reason,
        settled.reservation,
        entries.map((e) => e.id),
      ),
    );
  }
  return out;
}

/**
 * The entry point `cplane ledger orphans --reconcile` discovers in a root (the kernel cannot depend on the
 * budgeter): reconcile the root's budget against the given ledger. A root where nobody has spent has nothing to do.
 */
export function reconcileRoot(root: string, ledger: Ledger, options: ReconcileOptions = {}): ReconciledReservation[] {
  if (!existsSync(budgetDbPathForRoot(root))) return [];
  const budgeter = Budgeter.open({ root });
  try {
    return reconcileStaleReservations(budgeter, ledger, options);
  } finally {
    budgeter.close();
  }
}
