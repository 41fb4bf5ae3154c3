/**
 * SQLite layout of the kernel ledger. `seq` is the chain order; `metadata` holds canonical JSON; the
 * generated columns exist only so metadata fields can be indexed (EXCHANGE → DISPATCH via dispatch_entry_id).
 * An empty value ("no work order") is stored as NULL, so the partial indexes skip it: one index page fewer to
 * write per append, and queries refuse empty filters rather than list every entry that lacks the field.
 */
export const LEDGER_FORMAT = 'cplane-ledger';
export const LEDGER_FORMAT_VERSION = '1';

/**
 * Only for a ledger whose timestamps are not in chain order (one imported so, or made before appends kept
 * them in order): time ranges then need this index. Other ledgers find a time range by binary search on seq.
 */
export const TIMESTAMP_INDEX = 'entries_timestamp';
export const TIMESTAMP_INDEX_DDL = `CREATE INDEX IF NOT EXISTS ${TIMESTAMP_INDEX} ON entries (timestamp, seq)`;

export const LEDGER_DDL = `
CREATE TABLE IF NOT EXISTS ledger_meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS entries (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  event_type TEXT NOT NULL,
  submission_id TEXT NOT NULL,
  decision TEXT NOT NULL,
  reason TEXT NOT NULL,
  metadata TEXT NOT NULL,
  timestamp TEXT NOT NULL,
  previous_hash TEXT NOT NULL,
  entry_hash TEXT NOT NULL,
  session_id TEXT GENERATED ALWAYS AS (NULLIF(json_extract(metadata, '$.session_id'), '')) STORED,
  agent_id TEXT GENERATED ALWAYS AS (NULLIF(json_extract(metadata, '$.agent_id'), '')) STORED,
  work_order_id TEXT GENERATED ALWAYS AS (NULLIF(json_extract(metadata, '$.work_order_id'), '')) STORED,
  dispatch_entry_id TEXT GENERATED ALWAYS AS (NULLIF(json_extract(metadata, '$.dispatch_entry_id'), '')) STORED
);
CREATE INDEX IF NOT EXISTS entries_event_type ON entries (event_type, seq);
CREATE INDEX IF NOT EXISTS entries_submission ON entries (submission_id, seq);
CREATE INDEX IF NOT EXISTS entries_session ON entries (session_id, seq) WHERE session_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS entries_agent ON entries (agent_id, seq) WHERE agent_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS entries_work_order ON entries (work_order_id, seq) WHERE work_order_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS entries_dispatch_link ON entries (dispatch_entry_id) WHERE dispatch_entry_id IS NOT NULL;
CREATE TRIGGER IF NOT EXISTS entries_no_update BEFORE UPDATE ON entries
  BEGIN SELECT RAISE(ABORT, 'ledger entries are append-only'); END;
CREATE TRIGGER IF NOT EXISTS entries_no_delete BEFORE DELETE ON entries
  BEGIN SELECT RAISE(ABORT, 'ledger entries are append-only'); END;
`;
