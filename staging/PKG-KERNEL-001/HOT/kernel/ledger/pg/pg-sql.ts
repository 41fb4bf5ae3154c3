import { MAX_PIECES } from '../content.js';

export const ID_START_KEY = 'id_start';
export const ENTRY_COLUMNS =
  'seq, id, event_type, submission_id, decision, reason, metadata, timestamp, previous_hash, entry_hash, session_id, agent_id';
export const entriesFrom = (n: number): string =>
  `INSERT INTO cplane_entries (${ENTRY_COLUMNS}) SELECT * FROM unnest($${n}::bigint[], $${n + 1}::text[], $${n + 2}::text[], $${n + 3}::bytea[], $${n + 4}::bytea[], $${n + 5}::bytea[], $${n + 6}::text[], $${n + 7}::text[], $${n + 8}::text[], $${n + 9}::text[], $${n + 10}::bytea[], $${n + 11}::bytea[]) WHERE ${linksTo(n + 12)}`;
/** The head the entries were hashed against is in the chain (a database restored or failed over behind it is not). */
export const linksTo = (n: number): string =>
  `($${n}::bigint = 0 OR EXISTS (SELECT 1 FROM cplane_entries WHERE seq = $${n}::bigint AND entry_hash = $${n + 1}::text))`;
/**
 * The chain's positions are its primary key: an entry is written at the head's seq + 1 with the head's hash as
 * its previous_hash, so two writers that read the same head cannot both land: the second gets a unique
 * violation on `seq` and hashes again against the new head. Each statement also checks that the head it hashed
 * against is in the chain, so a database restored (or failed over) behind a writer's cached head gets no gap: the
 * statement writes nothing and the writer reads the head again. No fork, no gap, no lock held across round trips.
 */
export const APPEND_SQL = entriesFrom(1);
export const APPEND_ONE_SQL = `INSERT INTO cplane_entries (${ENTRY_COLUMNS}) SELECT $1::bigint, $2::text, $3::text, $4::bytea, $5::bytea, $6::bytea, $7::text, $8::text, $9::text, $10::text, $11::bytea, $12::bytea WHERE ${linksTo(13)}`;
export const APPEND_WITH_CONTENT_SQL = `WITH blocks AS (
  INSERT INTO cplane_content_blocks (digest, size, text) SELECT * FROM unnest($1::bytea[], $2::int[], $3::bytea[])
  ON CONFLICT (digest) DO NOTHING
), lists AS (
  INSERT INTO cplane_content_lists (digest, parent, block) SELECT * FROM unnest($4::bytea[], $5::bytea[], $6::bytea[])
  ON CONFLICT (digest) DO NOTHING
) ${entriesFrom(7)}`;
export const CONTENT_SQL = `WITH blocks AS (
  INSERT INTO cplane_content_blocks (digest, size, text) SELECT * FROM unnest($1::bytea[], $2::int[], $3::bytea[])
  ON CONFLICT (digest) DO NOTHING
) INSERT INTO cplane_content_lists (digest, parent, block) SELECT * FROM unnest($4::bytea[], $5::bytea[], $6::bytea[])
  ON CONFLICT (digest) DO NOTHING`;
/** The redaction's UPDATE; its transaction id tells the scrub which snapshots may still see the text. */
export const REDACT_SQL = `WITH done AS (
  UPDATE cplane_content_blocks SET text = NULL, redacted_by = $1 WHERE digest = ANY($2::bytea[]) AND text IS NOT NULL
  RETURNING 1
) SELECT count(*) AS n, (txid_current() % 4294967296)::text AS xid FROM done`;
/** Rows per page when verify walks the content tables, and the text fetched at once (a block may be large). */
export const VERIFY_PAGE_ROWS = 2000;
export const VERIFY_TEXT_BYTES = 16 << 20;
/** As SQLite's verify: the first problems are named, the rest only make it fail. */
export const MAX_CONTENT_PROBLEMS = 20;
export const LINKED_SQL = `SELECT ${linksTo(1)} AS linked`;
export const COPY_SQL = `COPY cplane_entries (${ENTRY_COLUMNS}) FROM STDIN`;
/**
 * From this many entries a batch goes by COPY: it costs four more round trips than the one statement, and saves
 * the server parsing every column as an array (about half its time for a batch of 1000).
 */
export const COPY_FROM = 128;
/** Rows written to the COPY stream at a time, so the server inserts some while the rest are encoded. */
export const COPY_CHUNK = 128;
export const WALK_SQL = `WITH RECURSIVE walk(digest, parent, block, depth) AS (
  SELECT digest, parent, block, 0 FROM cplane_content_lists WHERE digest = $1
  UNION ALL
  SELECT l.digest, l.parent, l.block, w.depth + 1 FROM cplane_content_lists l JOIN walk w ON l.digest = w.parent
  WHERE w.depth < ${MAX_PIECES}
) SELECT encode(w.digest, 'hex') AS d, encode(w.parent, 'hex') AS p, encode(w.block, 'hex') AS b, b.size, b.text,
  b.redacted_by FROM walk w LEFT JOIN cplane_content_blocks b ON b.digest = w.block ORDER BY w.depth DESC`;
/** The walk from `head` back to the node whose parent is `$2` (a previous turn's prompt), as on SQLite. */
export const WALK_SINCE_SQL = WALK_SQL.replace('WHERE w.depth <', 'WHERE w.parent <> $2 AND w.depth <');
export const MAX_ATTEMPTS = 64;
/**
 * SQLSTATEs of a transaction the server aborted to break a cycle with another writer (deadlock, serialization
 * failure): nothing of it was written, so it runs again, a few times, after a short random pause so the two do not
 * meet again in step.
 */
export const ABORTED = new Set(['40P01', '40001']);
export const MAX_ABORTS = 5;
export const ABORT_PAUSE_MS = 20;
/** Rows a query whose filter is checked in node (the work order) reads at a time. */
export const QUERY_PAGE = 500;
