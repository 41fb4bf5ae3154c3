import type Database from 'better-sqlite3';
import type { ScopeKey, TotalsDelta, TotalsRow, WindowRow } from './store.js';
import { TOTALS_COUNTERS } from './pg/schema.js';
import { totalsOf } from './store-statements.js';

/**
 * A scope's row of scope_rows as one step sees it: the counters and window read at its first use, what the step
 * added to its totals since, and the window it put. A step reads its rows once and writes each once, before its
 * records leave (StepRows.flush): on the hot path a reserve and a settle each read their scopes' rows (totals and
 * rate window) in one statement and write each row by one UPDATE, where reading totals and window apart, adding to
 * the totals and putting the window each cost statements of their own.
 */
interface StepRow {
  key: ScopeKey;
  /** reserved_tokens, reserved_cost, settled_tokens, settled_cost, requests, unknown_cost_requests: as read + added. */
  counters: number[];
  /** What the step added to the counters (null: nothing; the row's totals are left as they are, `counted` too). */
  added: number[] | null;
  window: WindowRow | undefined;
  windowPut: boolean;
  /** Whether the file holds the row (read and found, or written in this step): written by an UPDATE of its own. */
  found: boolean;
}

const COUNTERS = TOTALS_COUNTERS.length;
const ROW_COLUMNS = [...TOTALS_COUNTERS, 'window_start', 'window_requests', 'window_tokens'];
const WIDTH = ROW_COLUMNS.length;

/**
 * The rows of `n` scopes in one statement and one value: a primary-key search each (a LEFT JOIN, so a scope without
 * a row reads as nulls in its place; an IN list would build an ephemeral table of its values first), as one JSON
 * array, since the driver hands each value of a row to JavaScript through a call of its own (store-statements.ts).
 * Callgrind, the three scopes of a call: three reads of their totals 40K instructions (and the window a fourth), this 31K.
 */
function readStatement(db: Database.Database, n: number): Database.Statement {
  const values = Array.from({ length: n }, (_, i) => ROW_COLUMNS.map((c) => `r${i}.${c}`).join(', '));
  const joins = Array.from({ length: n }, (_, i) => `LEFT JOIN scope_rows r${i} ON r${i}.scope = ?`);
  return db.prepare(`SELECT json_array(${values.join(', ')}) FROM (SELECT 1) ${joins.join(' ')}`).pluck();
}

/**
 * Writing `n` rows in one statement: the counters added (a new row starts from zero), `counted` set when the step
 * added to its totals (a row holding only a window stays uncounted), the window replaced when the step put one.
 */
function writeStatement(db: Database.Database, n: number): Database.Statement {
  const rows = Array.from({ length: n }, () => '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)');
  return db.prepare(`INSERT INTO scope_rows (scope, kind, session_id, work_order_id, agent_id, reserved_tokens,
    reserved_cost, settled_tokens, settled_cost, requests, unknown_cost_requests, counted, window_start,
    window_requests, window_tokens) VALUES ${rows.join(', ')}
    ON CONFLICT (scope) DO UPDATE SET counted = max(counted, excluded.counted),
      reserved_tokens = reserved_tokens + excluded.reserved_tokens, reserved_cost = reserved_cost + excluded.reserved_cost,
      settled_tokens = settled_tokens + excluded.settled_tokens, settled_cost = settled_cost + excluded.settled_cost,
      requests = requests + excluded.requests, unknown_cost_requests = unknown_cost_requests + excluded.unknown_cost_requests,
      window_start = coalesce(excluded.window_start, window_start),
      window_requests = coalesce(excluded.window_requests, window_requests),
      window_tokens = coalesce(excluded.window_tokens, window_tokens)`);
}

/**
 * A row the file holds, written by its key alone: three of these cost less than the three rows' upsert (callgrind,
 * a step's three scopes: 47K instructions against 57K; a statement that may write several rows keeps a statement
 * journal, and an upsert binds the key's four columns a new row needs).
 */
function updateStatement(db: Database.Database): Database.Statement {
  return db.prepare(`UPDATE scope_rows SET counted = max(counted, ?), reserved_tokens = reserved_tokens + ?,
    reserved_cost = reserved_cost + ?, settled_tokens = settled_tokens + ?, settled_cost = settled_cost + ?,
    requests = requests + ?, unknown_cost_requests = unknown_cost_requests + ?, window_start = coalesce(?, window_start),
    window_requests = coalesce(?, window_requests), window_tokens = coalesce(?, window_tokens) WHERE scope = ?`);
}

/**
 * The scope rows of the step in progress (between begin and end, inside its BEGIN IMMEDIATE transaction, so no
 * other process changes them meanwhile). Outside a step every read goes to the file and every write is made at
 * once, as a statement of its own.
 */
export class StepRows {
  private readonly rows = new Map<string, StepRow>();
  private inStep = false;
  private readonly reads: (Database.Statement | undefined)[] = [];
  private readonly writes: (Database.Statement | undefined)[] = [];
  private update: Database.Statement | undefined;

  constructor(private readonly db: Database.Database) {}

  begin(): void {
    this.rows.clear();
    this.inStep = true;
  }

  /** Forgets the step's rows (written by flush, or rolled back with its transaction). */
  end(): void {
    this.rows.clear();
    this.inStep = false;
  }

  totals(keys: readonly ScopeKey[]): TotalsRow[] {
    this.load(keys);
    const out = keys.map((key) => totalsOf(key, (this.rows.get(key.scope) as StepRow).counters));
    this.outsideStep();
    return out;
  }

  addTotals(keys: readonly ScopeKey[], delta: TotalsDelta): void {
    const d = [
      delta.reserved_tokens ?? 0,
      delta.reserved_cost ?? 0,
      delta.settled_tokens ?? 0,
      delta.settled_cost ?? 0,
      delta.requests ?? 0,
      delta.unknown_cost_requests ?? 0,
    ];
    for (const key of keys) {
      // Adding needs no read: a row not read yet is added to as it stands in the file.
      const row = this.rows.get(key.scope) ?? this.unread(key);
      row.added ??= [0, 0, 0, 0, 0, 0];
      const read = row.counters.length > 0;
      for (let i = 0; i < COUNTERS; i += 1) {
        if (read) (row.counters[i] as number) += d[i] as number;
        (row.added[i] as number) += d[i] as number;
      }
    }
    this.outsideStep();
  }

  window(key: ScopeKey): WindowRow | undefined {
    this.load([key]);
    const window = (this.rows.get(key.scope) as StepRow).window;
    this.outsideStep();
    return window === undefined ? undefined : { ...window };
  }

  putWindow(key: ScopeKey, row: WindowRow): void {
    const held = this.rows.get(key.scope) ?? this.unread(key);
    held.window = { window_start: row.window_start, requests: row.requests, tokens: row.tokens };
    held.windowPut = true;
    this.outsideStep();
  }

  /**
   * Writes what the step added and put: each row the file holds by an UPDATE, the others in one upsert. The rows
   * stay known to the rest of the step.
   */
  flush(): void {
    const params: (string | number | null)[] = [];
    let n = 0;
    for (const row of this.rows.values()) {
      if (row.added === null && !row.windowPut) continue;
      const k = row.key;
      const a = row.added ?? [0, 0, 0, 0, 0, 0];
      const w = row.windowPut ? (row.window as WindowRow) : null;
      const counted = row.added === null ? 0 : 1;
      const ws = w === null ? null : w.window_start;
      const wr = w === null ? null : w.requests;
      const wt = w === null ? null : w.tokens;
      if (row.found) {
        this.update ??= updateStatement(this.db);
        this.update.run(counted, a[0], a[1], a[2], a[3], a[4], a[5], ws, wr, wt, k.scope);
      } else {
        params.push(k.scope, k.kind, k.session_id, k.work_order_id, k.agent_id, a[0] as number, a[1] as number);
        params.push(a[2] as number, a[3] as number, a[4] as number, a[5] as number, counted, ws, wr, wt);
        n += 1;
      }
      row.added = null;
      row.windowPut = false;
      row.found = true;
    }
    if (n === 0) return;
    let statement = this.writes[n];
    if (statement === undefined) {
      statement = writeStatement(this.db, n);
      this.writes[n] = statement;
    }
    statement.run(...params);
  }

  /** A row written to before it was read: its counters (empty) are read, under what was added, when first asked for. */
  private unread(key: ScopeKey): StepRow {
    const row: StepRow = { key, counters: [], added: null, window: undefined, windowPut: false, found: false };
    this.rows.set(key.scope, row);
    return row;
  }

  /** Reads the rows of the keys not read yet, in one statement. */
  private load(keys: readonly ScopeKey[]): void {
    const missing: ScopeKey[] = [];
    for (const key of keys) {
      const held = this.rows.get(key.scope);
      if (held === undefined || held.counters.length === 0) {
        if (!missing.some((m) => m.scope === key.scope)) missing.push(key);
      }
    }
    if (missing.length === 0) return;
    let statement = this.reads[missing.length];
    if (statement === undefined) {
      statement = readStatement(this.db, missing.length);
      this.reads[missing.length] = statement;
    }
    const found = JSON.parse(statement.get(...missing.map((k) => k.scope)) as string) as (number | null)[];
    for (let i = 0; i < missing.length; i += 1) this.fill(missing[i] as ScopeKey, found, i * WIDTH);
  }

  /** A row as read (its counters null: the scope has none yet) under what the step already added and put. */
  private fill(key: ScopeKey, r: (number | null)[], at: number): void {
    const counters = r[at] === null ? [0, 0, 0, 0, 0, 0] : (r.slice(at, at + COUNTERS) as number[]);
    const held = this.rows.get(key.scope);
    const read =
      r[at + 6] === null || r[at + 6] === undefined
        ? undefined
        : { window_start: r[at + 6] as number, requests: r[at + 7] as number, tokens: r[at + 8] as number };
    if (held === undefined) {
      this.rows.set(key.scope, { key, counters, added: null, window: read, windowPut: false, found: r[at] !== null });
      return;
    }
    held.counters = counters;
    held.found = r[at] !== null;
    if (held.added !== null) for (let i = 0; i < COUNTERS; i += 1) (counters[i] as number) += held.added[i] as number;
    if (!held.windowPut) held.window = read;
  }

  /** Outside a step, each call stands alone: its write is made now and nothing read is kept. */
  private outsideStep(): void {
    if (this.inStep) return;
    this.flush();
    this.rows.clear();
  }
}
