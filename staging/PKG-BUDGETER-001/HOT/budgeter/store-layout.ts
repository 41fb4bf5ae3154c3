import type Database from 'better-sqlite3';
import { CpError, show } from '#kernel/errors.js';
import { hasBudgetScope, writeStatements } from './store-statements.js';

// The budget database's layout (SQLite) and how each older version's file is brought to it.

export const BUDGET_DB_FORMAT = 'cplane-budget';
export const BUDGET_DB_VERSION = '4';

/**
 * The requests still open in the budget: a reservation pending (`records` null, `since` its created_at), or a
 * finished step's records whose caller appends them to the ledger after the transaction commits (the router batches
 * them with its EXCHANGE), kept here in the same transaction until the caller reports them appended (`since` the
 * step's finished_at), so a process that dies in between leaves them to be delivered (reconcile.ts), not lost.
 *
 * One small table for both, keyed by request id: a settlement turns the request's pending row into its kept row, one
 * b-tree page written where a partial index on reservations and a table of its own wrote two, and a reservation adds
 * one row here instead of one index entry. Triggers open and close a reservation's row inside the statement that
 * changes the reservation (a statement of its own costs a step more than the row). It holds only the calls in flight
 * (and what a crash left), so the orphan and delivery passes scan it; no index to keep on the hot path.
 * `record_outbox` is its kept rows, as a view.
 */
const OPEN_DDL = `
CREATE TABLE IF NOT EXISTS open_requests (
  request_id TEXT PRIMARY KEY,
  since TEXT NOT NULL,
  records TEXT
) STRICT, WITHOUT ROWID;
CREATE VIEW IF NOT EXISTS record_outbox AS
  SELECT request_id, since AS finished_at, records FROM open_requests WHERE records IS NOT NULL;
CREATE TRIGGER IF NOT EXISTS reservation_opens AFTER INSERT ON reservations WHEN new.state = 'reserved'
BEGIN
  INSERT INTO open_requests (request_id, since, records) VALUES (new.request_id, new.created_at, NULL);
END;
CREATE TRIGGER IF NOT EXISTS reservation_closes AFTER UPDATE OF state ON reservations
  WHEN old.state = 'reserved' AND new.state <> 'reserved'
BEGIN
  DELETE FROM open_requests WHERE request_id = new.request_id AND records IS NULL;
END;
`;

/**
 * A scope's rate window (and a count of calls in flight, under its own key: rate.ts inFlightKey) is kept in the row
 * of its totals: a step that charges both rewrites one row, one b-tree page, where a table of windows wrote a second.
 * `counted` is 0 for a row that holds only a window (a count in flight, or the window of a scope whose totals are
 * kept per period): such a row is no scope's totals. `scope_totals` is the counted rows with their totals, as a view
 * (what status and a copy to PostgreSQL read, as they read the table of totals before).
 */
const TOTALS_COLUMNS = `scope, kind, session_id, work_order_id, agent_id, reserved_tokens, reserved_cost, settled_tokens,
  settled_cost, requests, unknown_cost_requests`;
const SCOPE_DDL = `
CREATE TABLE IF NOT EXISTS scope_rows (
  scope TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  session_id TEXT NOT NULL,
  work_order_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  reserved_tokens INTEGER NOT NULL DEFAULT 0,
  reserved_cost INTEGER NOT NULL DEFAULT 0,
  settled_tokens INTEGER NOT NULL DEFAULT 0,
  settled_cost INTEGER NOT NULL DEFAULT 0,
  requests INTEGER NOT NULL DEFAULT 0,
  unknown_cost_requests INTEGER NOT NULL DEFAULT 0,
  counted INTEGER NOT NULL DEFAULT 1,
  window_start INTEGER,
  window_requests INTEGER,
  window_tokens INTEGER
) STRICT, WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS scope_rows_session ON scope_rows (session_id, kind);
CREATE VIEW IF NOT EXISTS scope_totals AS SELECT ${TOTALS_COLUMNS} FROM scope_rows WHERE counted = 1;
`;

// This is on the router's hot path: WITHOUT ROWID keeps each table one b-tree, and scopes are found by one text
// key (see scopeKeyOf), which SQLite looks up several times faster than a four-column key.
// '' stands for "no work order / no agent".
export const BUDGET_DDL = `
CREATE TABLE IF NOT EXISTS budget_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS reservations (
  request_id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  work_order_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  model TEXT NOT NULL,
  params_key TEXT NOT NULL,
  budget_scope TEXT NOT NULL DEFAULT '',
  state TEXT NOT NULL CHECK (state IN ('reserved', 'settled', 'released')),
  reserved_tokens INTEGER NOT NULL,
  reserved_cost INTEGER,
  charged_tokens INTEGER,
  charged_cost INTEGER,
  actual_tokens INTEGER,
  actual_cost INTEGER,
  usage TEXT,
  usage_key TEXT,
  over_budget INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  finished_at TEXT,
  allocation_entry_id TEXT,
  settlement_entry_id TEXT
) STRICT, WITHOUT ROWID;
${SCOPE_DDL}${OPEN_DDL}`;

export function initialiseMeta(db: Database.Database, path: string): void {
  db.prepare('INSERT OR IGNORE INTO budget_meta (key, value) VALUES (?, ?), (?, ?)').run(
    'format',
    BUDGET_DB_FORMAT,
    'format_version',
    BUDGET_DB_VERSION,
  );
  migrate(db);
  checkMeta(db, path);
}

/**
 * Each older version's layout, brought to the next one in the opener's transaction, so every process sees a file of
 * one version. Version 1 had no key scopes: its reservations gain an empty `budget_scope`.
 */
function migrate(db: Database.Database): void {
  const version = () =>
    (db.prepare("SELECT value FROM budget_meta WHERE key = 'format_version'").get() as { value: string } | undefined)
      ?.value;
  const setVersion = (to: string) =>
    db.prepare("UPDATE budget_meta SET value = ? WHERE key = 'format_version'").run(to);
  if (version() === '1') {
    if (!hasBudgetScope(db)) db.exec("ALTER TABLE reservations ADD COLUMN budget_scope TEXT NOT NULL DEFAULT ''");
    setVersion('2');
  }
  if (version() === '2') {
    openRequestsFromVersion2(db);
    setVersion('3');
  }
  if (version() === '3') {
    mergeWindows(db);
    setVersion('4');
  }
}

/**
 * Version 2 found pending reservations by a partial index on reservations and kept records in a table of their
 * own: both move into open_requests (OPEN_DDL).
 */
function openRequestsFromVersion2(db: Database.Database): void {
  db.exec(`INSERT INTO open_requests (request_id, since, records)
    SELECT request_id, created_at, NULL FROM reservations WHERE state = 'reserved' ON CONFLICT (request_id) DO NOTHING`);
  const outboxTable = db
    .prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'record_outbox'")
    .pluck()
    .get();
  if (outboxTable !== 0) {
    db.exec(`INSERT INTO open_requests (request_id, since, records)
      SELECT request_id, finished_at, records FROM record_outbox WHERE true ON CONFLICT (request_id) DO NOTHING;
      DROP TABLE record_outbox;`);
  }
  db.exec(`DROP INDEX IF EXISTS reservations_pending;${OPEN_DDL}`);
}

/**
 * Version 3 kept totals in the table scope_totals and rate windows in a table of their own: both move into
 * scope_rows (SCOPE_DDL), windows into their scope's row, and scope_totals becomes its view.
 */
function mergeWindows(db: Database.Database): void {
  const isTable = (name: string) =>
    db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?").pluck().get(name) !== 0;
  if (isTable('scope_totals')) {
    db.exec(`INSERT INTO scope_rows (${TOTALS_COLUMNS}) SELECT ${TOTALS_COLUMNS} FROM scope_totals WHERE true
      ON CONFLICT (scope) DO NOTHING;
      DROP TABLE scope_totals;${SCOPE_DDL}`);
  }
  if (!isTable('rate_windows')) return;
  const put = writeStatements(db).putWindow;
  const rows = db.prepare('SELECT scope, window_start, requests, tokens FROM rate_windows').raw().all() as [
    string,
    number,
    number,
    number,
  ][];
  // The key names its kind, session, work order and agent (scopeKeyOf), which a scope's row holds as columns.
  for (const [scope, start, requests, tokens] of rows) {
    const [kind = '', session = '', workOrder = '', agent = ''] = scope.split('\u001f');
    put.run(scope, kind, session, workOrder, agent, start, requests, tokens);
  }
  db.exec('DROP TABLE rate_windows');
}

export function checkMeta(db: Database.Database, path: string, alsoReadable: readonly string[] = []): void {
  const rows = db.prepare('SELECT key, value FROM budget_meta').all() as { key: string; value: string }[];
  const meta = new Map(rows.map((r) => [r.key, r.value]));
  const version = meta.get('format_version') ?? '';
  if (meta.get('format') !== BUDGET_DB_FORMAT || (version !== BUDGET_DB_VERSION && !alsoReadable.includes(version))) {
    throw new CpError('ERR_BUDGET_DB', `${show(path)} is not a version ${BUDGET_DB_VERSION} cplane budget database`, {
      hint: 'point the budgeter at HOT/registries/budget.sqlite of a cplane root',
      details: { path, format: meta.get('format') ?? null },
    });
  }
}
