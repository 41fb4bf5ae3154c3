/**
 * The budget on PostgreSQL: the tables of store-layout.ts with a `cplane_budget_` prefix (they may share a database with
 * the ledger's `cplane_*` tables). Token counts and nano-unit costs are BIGINT: a cost passes 2^31 quickly.
 */

/**
 * The version of these tables' layout, which is PostgreSQL's own: the SQLite file's format (store-layout.ts
 * BUDGET_DB_VERSION) changes with its physical layout, which PostgreSQL does not share.
 */
export const PG_BUDGET_VERSION = '2';

/** 'cpbg': the advisory lock laying out the tables and a migration's copy hold for their transaction. */
export const PG_BUDGET_LOCK = 0x63706267;

/** The records a step's caller has yet to report appended (store-layout.ts OPEN_DDL); added to older databases on open. */
export const PG_OUTBOX_DDL = `
CREATE TABLE IF NOT EXISTS cplane_budget_outbox (
  request_id TEXT PRIMARY KEY,
  finished_at TEXT NOT NULL,
  records TEXT NOT NULL
);
`;

export const PG_BUDGET_DDL = `${PG_OUTBOX_DDL}
CREATE TABLE IF NOT EXISTS cplane_budget_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS cplane_budget_reservations (
  request_id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  work_order_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  model TEXT NOT NULL,
  params_key TEXT NOT NULL,
  budget_scope TEXT NOT NULL DEFAULT '',
  state TEXT NOT NULL CHECK (state IN ('reserved', 'settled', 'released')),
  reserved_tokens BIGINT NOT NULL,
  reserved_cost BIGINT,
  charged_tokens BIGINT,
  charged_cost BIGINT,
  actual_tokens BIGINT,
  actual_cost BIGINT,
  usage TEXT,
  usage_key TEXT,
  over_budget INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  finished_at TEXT,
  allocation_entry_id TEXT,
  settlement_entry_id TEXT
);
CREATE INDEX IF NOT EXISTS cplane_budget_reservations_pending ON cplane_budget_reservations (created_at)
  WHERE state = 'reserved';
CREATE TABLE IF NOT EXISTS cplane_budget_scope_totals (
  scope TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  session_id TEXT NOT NULL,
  work_order_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  reserved_tokens BIGINT NOT NULL DEFAULT 0,
  reserved_cost BIGINT NOT NULL DEFAULT 0,
  settled_tokens BIGINT NOT NULL DEFAULT 0,
  settled_cost BIGINT NOT NULL DEFAULT 0,
  requests BIGINT NOT NULL DEFAULT 0,
  unknown_cost_requests BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS cplane_budget_scope_totals_session ON cplane_budget_scope_totals (session_id, kind);
CREATE TABLE IF NOT EXISTS cplane_budget_rate_windows (
  scope TEXT PRIMARY KEY,
  window_start BIGINT NOT NULL,
  requests BIGINT NOT NULL,
  tokens BIGINT NOT NULL
);
`;

export const RESERVATION_COLUMNS = [
  'request_id',
  'session_id',
  'work_order_id',
  'agent_id',
  'model',
  'params_key',
  'budget_scope',
  'state',
  'reserved_tokens',
  'reserved_cost',
  'charged_tokens',
  'charged_cost',
  'actual_tokens',
  'actual_cost',
  'usage',
  'usage_key',
  'over_budget',
  'created_at',
  'finished_at',
  'allocation_entry_id',
  'settlement_entry_id',
] as const;

export const TOTALS_COUNTERS = [
  'reserved_tokens',
  'reserved_cost',
  'settled_tokens',
  'settled_cost',
  'requests',
  'unknown_cost_requests',
] as const;
