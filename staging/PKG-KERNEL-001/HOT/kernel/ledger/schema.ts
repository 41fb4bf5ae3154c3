import type Database from 'better-sqlite3';
import { RARE_KIND_SQL } from './kinds.js';

/**
 * SQLite layout of the kernel ledger. `seq` is the chain order; `metadata` holds canonical JSON; the
 * generated columns exist only so metadata fields can be indexed (EXCHANGE → DISPATCH via dispatch_entry_id).
 * An empty value ("no work order") is stored as NULL, so the partial indexes skip it: one index page fewer to
 * write per append, and queries refuse empty filters rather than list every entry that lacks the field.
 */
export const LEDGER_FORMAT = 'cplane-ledger';
/** What a new ledger is laid out as. */
export const LEDGER_FORMAT_VERSION = '3';
/**
 * Versions this code opens and appends to. Version 1 keeps `previous_hash`/`entry_hash` as 64-character hex TEXT
 * and every generated column STORED; version 2 keeps the hashes as their 32 bytes and the agent and work-order
 * ids VIRTUAL (read only through their indexes), which makes a row about a tenth smaller. The hashes themselves
 * are computed the same way in both: the hex strings are what an entry's hash covers. Version 3 is version 2's
 * table with only the indexes its queries need (LEDGER_INDEXES_DDL); versions 1 and 2 keep LEGACY_INDEXES_DDL,
 * and a writer's open moves a version 2 file to version 3 (open.ts).
 */
export const LEDGER_FORMAT_VERSIONS: readonly string[] = ['1', '2', LEDGER_FORMAT_VERSION];

/** The format version an opened ledger records (its open refused any other format or version). */
export function formatVersion(db: Database.Database): string {
  const version = db.prepare("SELECT value FROM ledger_meta WHERE key = 'format_version'").pluck().get();
  return typeof version === 'string' ? version : LEDGER_FORMAT_VERSION;
}

/** Whether a ledger of this format version keeps the indexes of versions 1 and 2 (LEGACY_INDEXES_DDL). */
export function legacyIndexes(version: string): boolean {
  return version === '1' || version === '2';
}

/** Whether a ledger of this format version keeps its hashes as hex TEXT (version 1) rather than bytes. */
export function hashesAsText(version: string): boolean {
  return version === '1';
}

/** A hash column read as lowercase hex however the row keeps it (bytes in a version 2 file, hex text before). */
export function hashHex(column: string): string {
  return `iif(typeof(${column}) = 'blob', lower(hex(${column})), ${column})`;
}

/** The insert of one row, its hashes given as hex: stored as given (version 1) or as their bytes. */
export function insertRowSql(version: string): string {
  const hash = hashesAsText(version) ? '?' : 'unhex(?)';
  return `INSERT INTO entries (seq, id, event_type, submission_id, decision, reason, metadata, timestamp, previous_hash, entry_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ${hash}, ${hash})`;
}

/**
 * Only for a ledger whose timestamps are not in chain order (one imported so, or made before appends kept
 * them in order): time ranges then need this index. Other ledgers find a time range by binary search on seq.
 */
export const TIMESTAMP_INDEX = 'entries_timestamp';
export const TIMESTAMP_INDEX_DDL = `CREATE INDEX IF NOT EXISTS ${TIMESTAMP_INDEX} ON entries (timestamp, seq)`;

/**
 * The entries table as a format version lays it out: how the hashes are kept (hex TEXT in version 1, bytes after)
 * and whether the columns read only through their indexes (agent, work order) are STORED or VIRTUAL.
 */
function entriesTable(hashes: 'TEXT' | 'BLOB', indexOnly: 'STORED' | 'VIRTUAL'): string {
  const generated = (column: string, stored: 'STORED' | 'VIRTUAL'): string =>
    `${column} TEXT GENERATED ALWAYS AS (NULLIF(json_extract(metadata, '$.${column}'), '')) ${stored}`;
  return `CREATE TABLE IF NOT EXISTS entries (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  event_type TEXT NOT NULL,
  submission_id TEXT NOT NULL,
  decision TEXT NOT NULL,
  reason TEXT NOT NULL,
  metadata TEXT NOT NULL,
  timestamp TEXT NOT NULL,
  previous_hash ${hashes} NOT NULL,
  entry_hash ${hashes} NOT NULL,
  ${generated('session_id', 'STORED')},
  ${generated('agent_id', indexOnly)},
  ${generated('work_order_id', indexOnly)},
  ${generated('dispatch_entry_id', 'STORED')}
);`;
}

/**
 * The entries indexes every format version keeps: the id (UNIQUE, in the table), the submission (a budget record's
 * request, a key's or package's records: without it those lookups would scan), the session (history, the call
 * path) and the agent and work order (their queries would scan; an empty one, most gateway calls', writes nothing).
 */
const SHARED_INDEXES_DDL = `CREATE INDEX IF NOT EXISTS entries_submission ON entries (submission_id, seq);
CREATE INDEX IF NOT EXISTS entries_session ON entries (session_id, seq) WHERE session_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS entries_agent ON entries (agent_id, seq) WHERE agent_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS entries_work_order ON entries (work_order_id, seq) WHERE work_order_id IS NOT NULL;`;

/**
 * Version 3's own: the kind indexed only for rare kinds (kinds.ts: a query by a dense kind walks the chain in order,
 * a few rows per match, or another filter's index), and no index on dispatch_entry_id: an EXCHANGE is found
 * through its DISPATCH's session (orphans.ts). A call's DISPATCH and EXCHANGE write three index pages fewer.
 */
export const RARE_KIND_INDEX = 'entries_rare_kind';
/** Version 3's only new index, created when a version 2 file becomes version 3 (its other indexes are the same). */
export const RARE_KIND_INDEX_DDL = `CREATE INDEX IF NOT EXISTS ${RARE_KIND_INDEX} ON entries (event_type, seq) WHERE ${RARE_KIND_SQL};`;
const LEDGER_INDEXES_DDL = `${RARE_KIND_INDEX_DDL}
${SHARED_INDEXES_DDL}`;

/** The indexes of versions 1 and 2 that version 3 drops (a writer's open drops them from a version 2 file). */
export const LEGACY_ONLY_INDEXES = ['entries_event_type', 'entries_dispatch_link'] as const;

/** The indexes of versions 1 and 2: every kind, and the EXCHANGE → DISPATCH link. */
export const LEGACY_INDEXES_DDL = `CREATE INDEX IF NOT EXISTS entries_event_type ON entries (event_type, seq);
${SHARED_INDEXES_DDL}
CREATE INDEX IF NOT EXISTS entries_dispatch_link ON entries (dispatch_entry_id) WHERE dispatch_entry_id IS NOT NULL;
`;

const LEDGER_META_DDL = `CREATE TABLE IF NOT EXISTS ledger_meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
) STRICT;`;

const ENTRIES_TRIGGERS_DDL = `CREATE TRIGGER IF NOT EXISTS entries_no_update BEFORE UPDATE ON entries
  BEGIN SELECT RAISE(ABORT, 'ledger entries are append-only'); END;
CREATE TRIGGER IF NOT EXISTS entries_no_delete BEFORE DELETE ON entries
  BEGIN SELECT RAISE(ABORT, 'ledger entries are append-only'); END;
`;

/** A new ledger's layout (the current format version). */
export const LEDGER_DDL = `
${LEDGER_META_DDL}
${entriesTable('BLOB', 'VIRTUAL')}
${LEDGER_INDEXES_DDL}
${ENTRIES_TRIGGERS_DDL}`;

/** A version 2 ledger's layout: the same tables and triggers, the legacy indexes. */
export const LEDGER_V2_DDL = `
${LEDGER_META_DDL}
${entriesTable('BLOB', 'VIRTUAL')}
${LEGACY_INDEXES_DDL}
${ENTRIES_TRIGGERS_DDL}`;

/** The entries table of a version 1 ledger: still valid, and still appended to as it is. */
export const LEDGER_V1_ENTRIES_DDL = `
${entriesTable('TEXT', 'STORED')}
`;
