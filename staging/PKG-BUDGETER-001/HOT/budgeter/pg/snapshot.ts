import { CpError } from '#kernel/errors.js';
import {
  type BudgetState,
  type FinishedReservation,
  type NewReservation,
  type ReservationRow,
  type ScopeKey,
  type TotalsDelta,
  type TotalsRow,
  type WindowRow,
  zeroTotals,
} from '../store.js';
import { TOTALS_COUNTERS } from './schema.js';

/** What the steps of a group changed, for the PostgreSQL transaction to write before it commits. */
export interface SnapshotWrites {
  /** Reservations made in this group, as they stand after it (one also finished in it is written finished). */
  inserted: Map<string, ReservationRow>;
  finished: Map<string, FinishedReservation>;
  /** Per scope, the sum of the deltas the steps added (written as deltas: the row is locked, but adding is exact anyway). */
  totals: Map<string, { key: ScopeKey; delta: Required<TotalsDelta> }>;
  windows: Map<string, { key: ScopeKey; row: WindowRow }>;
}

/**
 * The rows a group of PostgreSQL steps locked and read, as the BudgetState the shared decision logic runs on, one
 * step after the other. Only what was loaded can be read: a read of anything else means the lock set was wrong,
 * which is a bug, so it throws rather than decide on state no lock protects. `save()` before a step and `restore`
 * after one that threw, so a refused step leaves nothing behind for the others.
 */
export class SnapshotState implements BudgetState {
  writes: SnapshotWrites = { inserted: new Map(), finished: new Map(), totals: new Map(), windows: new Map() };
  private reservations: Map<string, ReservationRow | undefined>;
  private current = new Map<string, TotalsRow>();
  private windowRows = new Map<string, WindowRow | undefined>();

  constructor(
    reservations: ReadonlyMap<string, ReservationRow | undefined>,
    keys: readonly ScopeKey[],
    totals: readonly TotalsRow[],
    windows: ReadonlyMap<string, WindowRow>,
  ) {
    this.reservations = new Map(reservations);
    for (const key of keys) {
      this.current.set(key.scope, zeroTotals(key));
      this.windowRows.set(key.scope, windows.get(key.scope));
    }
    for (const row of totals) if (this.current.has(row.scope)) this.current.set(row.scope, row);
  }

  /** The state as it is now; `restore(saved)` puts it back (rows are replaced, never changed in place). */
  save(): () => void {
    const reservations = new Map(this.reservations);
    const current = new Map(this.current);
    const windowRows = new Map(this.windowRows);
    const writes: SnapshotWrites = {
      inserted: new Map(this.writes.inserted),
      finished: new Map(this.writes.finished),
      totals: new Map([...this.writes.totals].map(([k, v]) => [k, { key: v.key, delta: { ...v.delta } }])),
      windows: new Map(this.writes.windows),
    };
    return () => {
      this.reservations = reservations;
      this.current = current;
      this.windowRows = windowRows;
      this.writes = writes;
    };
  }

  getReservation(requestId: string): ReservationRow | undefined {
    if (!this.reservations.has(requestId)) throw notLoaded(`reservation ${requestId}`);
    return this.reservations.get(requestId);
  }

  insertReservation(row: NewReservation): void {
    if (this.getReservation(row.request_id) !== undefined) throw notLoaded(`a second reservation ${row.request_id}`);
    const full: ReservationRow = {
      ...row,
      state: 'reserved',
      charged_tokens: null,
      charged_cost: null,
      actual_tokens: null,
      actual_cost: null,
      usage: null,
      usage_key: null,
      finished_at: null,
      allocation_entry_id: null,
      settlement_entry_id: null,
    };
    this.reservations.set(row.request_id, full);
    this.writes.inserted.set(row.request_id, full);
  }

  finishReservation(row: FinishedReservation): void {
    const now = this.getReservation(row.request_id);
    // As the SQLite UPDATE: only a pending reservation changes.
    if (now === undefined || now.state !== 'reserved') return;
    const finished = { ...now, ...row };
    this.reservations.set(row.request_id, finished);
    if (this.writes.inserted.has(row.request_id)) this.writes.inserted.set(row.request_id, finished);
    else this.writes.finished.set(row.request_id, row);
  }

  totals(keys: readonly ScopeKey[]): TotalsRow[] {
    return keys.map((key) => ({ ...this.row(key) }));
  }

  addTotals(keys: readonly ScopeKey[], delta: TotalsDelta): void {
    for (const key of keys) {
      const row = { ...this.row(key) };
      const before = this.writes.totals.get(key.scope);
      const sum = {
        key,
        delta: {
          reserved_tokens: before?.delta.reserved_tokens ?? 0,
          reserved_cost: before?.delta.reserved_cost ?? 0,
          settled_tokens: before?.delta.settled_tokens ?? 0,
          settled_cost: before?.delta.settled_cost ?? 0,
          requests: before?.delta.requests ?? 0,
          unknown_cost_requests: before?.delta.unknown_cost_requests ?? 0,
        },
      };
      for (const counter of TOTALS_COUNTERS) {
        row[counter] += delta[counter] ?? 0;
        sum.delta[counter] += delta[counter] ?? 0;
      }
      this.current.set(key.scope, row);
      this.writes.totals.set(key.scope, sum);
    }
  }

  window(key: ScopeKey): WindowRow | undefined {
    if (!this.windowRows.has(key.scope)) throw notLoaded(`rate window ${key.scope}`);
    const row = this.windowRows.get(key.scope);
    return row === undefined ? undefined : { ...row };
  }

  putWindow(key: ScopeKey, row: WindowRow): void {
    if (!this.windowRows.has(key.scope)) throw notLoaded(`rate window ${key.scope}`);
    this.windowRows.set(key.scope, { ...row });
    this.writes.windows.set(key.scope, { key, row: { ...row } });
  }

  private row(key: ScopeKey): TotalsRow {
    const row = this.current.get(key.scope);
    if (row === undefined) throw notLoaded(`totals of ${key.scope}`);
    return row;
  }
}

function notLoaded(what: string): CpError {
  return new CpError('ERR_INTERNAL', `a PostgreSQL budget step touched ${what}, which it had not locked and read`, {
    hint: 'a bug in the PostgreSQL budgeter: the step must lock every scope its decision reads; report it',
    details: { what: what.replaceAll('\u001f', '/') },
  });
}
