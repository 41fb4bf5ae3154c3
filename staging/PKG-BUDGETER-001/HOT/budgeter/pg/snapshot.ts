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

/** What a step changed, for the PostgreSQL transaction to write before it commits. */
export interface SnapshotWrites {
  inserted: ReservationRow | null;
  finished: FinishedReservation | null;
  /** Per scope, the sum of the deltas the step added (written as deltas: the row is locked, but adding is exact anyway). */
  totals: Map<string, { key: ScopeKey; delta: Required<TotalsDelta> }>;
  windows: Map<string, { key: ScopeKey; row: WindowRow }>;
}

/**
 * The rows one PostgreSQL step locked and read, as the BudgetState the shared decision logic runs on. Only what
 * was loaded can be read: a read of anything else means the step's lock set was wrong, which is a bug, so it
 * throws rather than decide on state no lock protects.
 */
export class SnapshotState implements BudgetState {
  readonly writes: SnapshotWrites = { inserted: null, finished: null, totals: new Map(), windows: new Map() };
  private reservation: ReservationRow | undefined;
  private readonly current = new Map<string, TotalsRow>();
  private readonly windowRows = new Map<string, WindowRow | undefined>();

  constructor(
    private readonly requestId: string,
    reservation: ReservationRow | undefined,
    keys: readonly ScopeKey[],
    totals: readonly TotalsRow[],
    windows: ReadonlyMap<string, WindowRow>,
  ) {
    this.reservation = reservation;
    for (const key of keys) {
      this.current.set(key.scope, zeroTotals(key));
      this.windowRows.set(key.scope, windows.get(key.scope));
    }
    for (const row of totals) if (this.current.has(row.scope)) this.current.set(row.scope, row);
  }

  getReservation(requestId: string): ReservationRow | undefined {
    if (requestId !== this.requestId) throw notLoaded(`reservation ${requestId}`);
    return this.reservation;
  }

  insertReservation(row: NewReservation): void {
    if (this.reservation !== undefined) throw notLoaded(`a second reservation ${row.request_id}`);
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
    this.reservation = full;
    this.writes.inserted = full;
  }

  finishReservation(row: FinishedReservation): void {
    const now = this.getReservation(row.request_id);
    // As the SQLite UPDATE: only a pending reservation changes.
    if (now === undefined || now.state !== 'reserved') return;
    this.reservation = { ...now, ...row };
    if (this.writes.inserted !== null) this.writes.inserted = this.reservation;
    else this.writes.finished = row;
  }

  totals(keys: readonly ScopeKey[]): TotalsRow[] {
    return keys.map((key) => ({ ...this.row(key) }));
  }

  addTotals(keys: readonly ScopeKey[], delta: TotalsDelta): void {
    for (const key of keys) {
      const row = { ...this.row(key) };
      const sum = this.writes.totals.get(key.scope) ?? {
        key,
        delta: {
          reserved_tokens: 0,
          reserved_cost: 0,
          settled_tokens: 0,
          settled_cost: 0,
          requests: 0,
          unknown_cost_requests: 0,
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
