import { DENSE_KINDS } from '../kinds.js';
import { MERKLE_APPEND_BODY, MERKLE_TRIGGER_FN, MERKLE_TRIGGER_NAME, PG_MERKLE_DDL } from './merkle-sql.js';

/**
 * The ledger on PostgreSQL: the same entries, hashes and content store as the SQLite file, in `cplane_*` tables.
 * Free text (submission_id, decision, reason, block text) is stored as the UTF-8 bytes that are hashed (BYTEA):
 * PostgreSQL's TEXT refuses U+0000, which a prompt may hold. Metadata is canonical JSON, which writes U+0000 as an
 * escape, so it is TEXT (half the bytes on the wire of hex-encoded BYTEA). Rows are append-only by trigger.
 */
/** 'cpln': the advisory lock laying out the tables and a migration's batches hold for their transaction. */
export const PG_LEDGER_LOCK = 0x63706c6e;

/** The kinds indexed by kind only when rare (kinds.ts): the same list as the SQLite file's. */
export { DENSE_KINDS };

const APPEND_ONLY_BODY = `
BEGIN RAISE EXCEPTION 'cplane ledger rows are append-only (%)', TG_TABLE_NAME; END `;
const REDACT_ONLY_BODY = `
BEGIN
  IF NEW.digest = OLD.digest AND NEW.size = OLD.size AND NEW.text IS NULL AND NEW.redacted_by IS NOT NULL THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'a content block changes only by redaction';
END `;

/** The functions the triggers run, by name, with their bodies as the DDL writes them. */
export const LEDGER_FUNCTIONS: Readonly<Record<string, string>> = {
  cplane_append_only: APPEND_ONLY_BODY,
  cplane_block_redact_only: REDACT_ONLY_BODY,
  [MERKLE_TRIGGER_FN]: MERKLE_APPEND_BODY,
};

/** The triggers that keep the ledger's rows append-only (a block changes only by redaction): the only ones. */
export const LEDGER_TRIGGERS = [
  {
    name: 'cplane_entries_append_only',
    table: 'cplane_entries',
    when: 'BEFORE UPDATE OR DELETE',
    each: 'ROW',
    fn: 'cplane_append_only',
  },
  {
    name: 'cplane_entries_no_truncate',
    table: 'cplane_entries',
    when: 'BEFORE TRUNCATE',
    each: 'STATEMENT',
    fn: 'cplane_append_only',
  },
  {
    name: 'cplane_lists_append_only',
    table: 'cplane_content_lists',
    when: 'BEFORE UPDATE OR DELETE',
    each: 'ROW',
    fn: 'cplane_append_only',
  },
  {
    name: 'cplane_blocks_no_delete',
    table: 'cplane_content_blocks',
    when: 'BEFORE DELETE',
    each: 'ROW',
    fn: 'cplane_append_only',
  },
  {
    name: 'cplane_blocks_redact_only',
    table: 'cplane_content_blocks',
    when: 'BEFORE UPDATE',
    each: 'ROW',
    fn: 'cplane_block_redact_only',
  },
] as const;

/** Every trigger the schema check expects: the append-only ones and the Merkle tree's (merkle-sql.ts). */
export const ALL_LEDGER_TRIGGERS = [
  ...LEDGER_TRIGGERS,
  { name: MERKLE_TRIGGER_NAME, table: 'cplane_entries', fn: MERKLE_TRIGGER_FN },
] as const;

export const PG_LEDGER_DDL = `
CREATE TABLE IF NOT EXISTS cplane_ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS cplane_entries (
  seq BIGINT PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  event_type TEXT NOT NULL,
  submission_id BYTEA NOT NULL,
  decision BYTEA NOT NULL,
  reason BYTEA NOT NULL,
  metadata TEXT NOT NULL,
  timestamp TEXT NOT NULL,
  previous_hash TEXT NOT NULL,
  entry_hash TEXT NOT NULL,
  session_id BYTEA,
  agent_id BYTEA
);
CREATE INDEX IF NOT EXISTS cplane_entries_rare_kind ON cplane_entries (event_type, seq)
  WHERE event_type NOT IN (${DENSE_KINDS.map((k) => `'${k}'`).join(', ')});
DROP INDEX IF EXISTS cplane_entries_event_type;
CREATE INDEX IF NOT EXISTS cplane_entries_session ON cplane_entries (session_id, seq) WHERE session_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS cplane_entries_agent ON cplane_entries (agent_id, seq) WHERE agent_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS cplane_content_blocks (
  digest BYTEA PRIMARY KEY,
  size INTEGER NOT NULL,
  text BYTEA,
  redacted_by TEXT
);
CREATE TABLE IF NOT EXISTS cplane_content_lists (
  digest BYTEA PRIMARY KEY,
  parent BYTEA NOT NULL,
  block BYTEA NOT NULL
);
CREATE OR REPLACE FUNCTION cplane_append_only() RETURNS trigger LANGUAGE plpgsql AS $$${APPEND_ONLY_BODY}$$;
CREATE OR REPLACE FUNCTION cplane_block_redact_only() RETURNS trigger LANGUAGE plpgsql AS $$${REDACT_ONLY_BODY}$$;
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'cplane_entries_append_only') THEN
${LEDGER_TRIGGERS.map((t) => `    CREATE TRIGGER ${t.name} ${t.when} ON ${t.table}\n      FOR EACH ${t.each} EXECUTE FUNCTION ${t.fn}();`).join('\n')}
  END IF;
END $$;
${PG_MERKLE_DDL}`;

/** Which columns each table has, and of which type (format_type), in order. */
export const LEDGER_COLUMNS: Readonly<Record<string, readonly string[]>> = {
  cplane_entries: [
    'seq bigint',
    'id text',
    'event_type text',
    'submission_id bytea',
    'decision bytea',
    'reason bytea',
    'metadata text',
    'timestamp text',
    'previous_hash text',
    'entry_hash text',
    'session_id bytea',
    'agent_id bytea',
  ],
  cplane_content_blocks: ['digest bytea', 'size integer', 'text bytea', 'redacted_by text'],
  cplane_content_lists: ['digest bytea', 'parent bytea', 'block bytea'],
  cplane_merkle_tiles: ['level integer', 'idx bigint', 'hashes bytea'],
};
