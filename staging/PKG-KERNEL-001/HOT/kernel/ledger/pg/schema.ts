/**
 * The ledger on PostgreSQL: the same entries, hashes and content store as the SQLite file, in `cplane_*` tables.
 * Free text (submission_id, decision, reason, block text) is stored as the UTF-8 bytes that are hashed (BYTEA):
 * PostgreSQL's TEXT refuses U+0000, which a prompt may hold. Metadata is canonical JSON, which writes U+0000 as an
 * escape, so it is TEXT (half the bytes on the wire of hex-encoded BYTEA). Rows are append-only by trigger.
 */
export const PG_LEDGER_LOCK = 0x63706c6e; // 'cpln': the advisory lock every append holds for its transaction

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
CREATE INDEX IF NOT EXISTS cplane_entries_event_type ON cplane_entries (event_type, seq);
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
CREATE OR REPLACE FUNCTION cplane_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'cplane ledger rows are append-only (%)', TG_TABLE_NAME; END $$;
CREATE OR REPLACE FUNCTION cplane_block_redact_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.digest = OLD.digest AND NEW.size = OLD.size AND NEW.text IS NULL AND NEW.redacted_by IS NOT NULL THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'a content block changes only by redaction';
END $$;
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'cplane_entries_append_only') THEN
    CREATE TRIGGER cplane_entries_append_only BEFORE UPDATE OR DELETE ON cplane_entries
      FOR EACH ROW EXECUTE FUNCTION cplane_append_only();
    CREATE TRIGGER cplane_entries_no_truncate BEFORE TRUNCATE ON cplane_entries
      FOR EACH STATEMENT EXECUTE FUNCTION cplane_append_only();
    CREATE TRIGGER cplane_lists_append_only BEFORE UPDATE OR DELETE ON cplane_content_lists
      FOR EACH ROW EXECUTE FUNCTION cplane_append_only();
    CREATE TRIGGER cplane_blocks_no_delete BEFORE DELETE ON cplane_content_blocks
      FOR EACH ROW EXECUTE FUNCTION cplane_append_only();
    CREATE TRIGGER cplane_blocks_redact_only BEFORE UPDATE ON cplane_content_blocks
      FOR EACH ROW EXECUTE FUNCTION cplane_block_redact_only();
  END IF;
END $$;
-- One round trip, one transaction: take the chain lock, check the head the caller hashed against, then write the
-- content and the entries. False (nothing written) when another writer moved the head meanwhile.
CREATE OR REPLACE FUNCTION cplane_append(
  expect_seq BIGINT, expect_hash TEXT,
  b_digest BYTEA[], b_size INTEGER[], b_text BYTEA[],
  l_digest BYTEA[], l_parent BYTEA[], l_block BYTEA[],
  e_seq BIGINT[], e_id TEXT[], e_type TEXT[], e_sub BYTEA[], e_dec BYTEA[], e_reason BYTEA[], e_meta TEXT[],
  e_time TEXT[], e_prev TEXT[], e_hash TEXT[], e_session BYTEA[], e_agent BYTEA[]
) RETURNS BOOLEAN LANGUAGE plpgsql AS $$
DECLARE head_seq BIGINT; head_hash TEXT;
BEGIN
  PERFORM pg_advisory_xact_lock(${PG_LEDGER_LOCK});
  SELECT seq, entry_hash INTO head_seq, head_hash FROM cplane_entries ORDER BY seq DESC LIMIT 1;
  IF COALESCE(head_seq, 0) <> expect_seq OR COALESCE(head_hash, repeat('0', 64)) <> expect_hash THEN
    RETURN FALSE;
  END IF;
  IF cardinality(b_digest) > 0 THEN
    INSERT INTO cplane_content_blocks (digest, size, text)
      SELECT * FROM unnest(b_digest, b_size, b_text) ON CONFLICT (digest) DO NOTHING;
  END IF;
  IF cardinality(l_digest) > 0 THEN
    INSERT INTO cplane_content_lists (digest, parent, block)
      SELECT * FROM unnest(l_digest, l_parent, l_block) ON CONFLICT (digest) DO NOTHING;
  END IF;
  INSERT INTO cplane_entries (seq, id, event_type, submission_id, decision, reason, metadata, timestamp,
      previous_hash, entry_hash, session_id, agent_id)
    SELECT * FROM unnest(e_seq, e_id, e_type, e_sub, e_dec, e_reason, e_meta, e_time, e_prev, e_hash, e_session, e_agent);
  RETURN TRUE;
END $$;
`;
