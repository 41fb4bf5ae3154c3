/**
 * The Merkle tree of a PostgreSQL ledger (the same tree as the SQLite file's: merkle/tiles.ts), kept by a
 * statement trigger on cplane_entries, so every way rows arrive (an append by any host, COPY, a migration) extends
 * it in the same transaction: the tree never lags or forks from the chain. Level 0 is the entries' own entry_hash;
 * a level ≥ 1 tile is one row of cplane_merkle_tiles, extended by one hash each time a tile below it fills (every
 * 256 entries at level 1): amortised, one SHA-256 per entry, none at all for most statements.
 */
export const MERKLE_TRIGGER_NAME = 'cplane_entries_merkle';
export const MERKLE_TRIGGER_FN = 'cplane_merkle_append';

const FOLD_BODY = `
DECLARE n int := array_length(h, 1);
BEGIN
  WHILE n > 1 LOOP
    FOR i IN 1 .. n / 2 LOOP
      h[i] := sha256('\\x01'::bytea || h[2 * i - 1] || h[2 * i]);
    END LOOP;
    n := n / 2;
  END LOOP;
  RETURN h[1];
END `;

/** The level-0 tile ending at entry `upto` (a multiple of 256) folded, and its hash carried up the levels. */
const PUSH_BODY = `
DECLARE
  h bytea;
  lvl int := 1;
  j bigint := upto / 256 - 1;
  tile bytea;
BEGIN
  SELECT cplane_merkle_fold(array_agg(sha256('\\x00'::bytea || decode(entry_hash, 'hex')) ORDER BY seq)) INTO h
    FROM cplane_entries WHERE seq > upto - 256 AND seq <= upto;
  LOOP
    INSERT INTO cplane_merkle_tiles AS t (level, idx, hashes) VALUES (lvl, j / 256, h)
      ON CONFLICT (level, idx) DO UPDATE SET hashes = t.hashes || EXCLUDED.hashes
      RETURNING t.hashes INTO tile;
    IF length(tile) <> (j % 256 + 1) * 32 THEN
      RAISE EXCEPTION 'cplane merkle tile %/% holds % bytes, expected %', lvl, j / 256, length(tile), (j % 256 + 1) * 32;
    END IF;
    EXIT WHEN j % 256 <> 255;
    SELECT cplane_merkle_fold(array_agg(substring(tile FROM k * 32 + 1 FOR 32) ORDER BY k)) INTO h
      FROM generate_series(0, 255) AS k;
    lvl := lvl + 1;
    j := j / 256;
  END LOOP;
END `;

/** The functions the trigger calls, by name, with their bodies as the DDL writes them (checked as the trigger's is). */
export const MERKLE_HELPERS: Readonly<Record<string, string>> = {
  cplane_merkle_fold: FOLD_BODY,
  cplane_merkle_push: PUSH_BODY,
};

export const MERKLE_APPEND_BODY = `
DECLARE upto bigint;
BEGIN
  FOR upto IN SELECT seq FROM cplane_merkle_added WHERE seq % 256 = 0 ORDER BY seq LOOP
    PERFORM cplane_merkle_push(upto);
  END LOOP;
  RETURN NULL;
END `;

/**
 * The table, functions and trigger; a database laid out before trees gets its tree built once from its chain, in
 * the transaction that adds the trigger (openPgTables holds the chain lock).
 */
export const PG_MERKLE_DDL = `
CREATE TABLE IF NOT EXISTS cplane_merkle_tiles (level INTEGER NOT NULL, idx BIGINT NOT NULL, hashes BYTEA NOT NULL, PRIMARY KEY (level, idx));
CREATE OR REPLACE FUNCTION cplane_merkle_fold(h bytea[]) RETURNS bytea LANGUAGE plpgsql IMMUTABLE AS $$${FOLD_BODY}$$;
CREATE OR REPLACE FUNCTION cplane_merkle_push(upto bigint) RETURNS void LANGUAGE plpgsql AS $$${PUSH_BODY}$$;
CREATE OR REPLACE FUNCTION ${MERKLE_TRIGGER_FN}() RETURNS trigger LANGUAGE plpgsql AS $$${MERKLE_APPEND_BODY}$$;
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = '${MERKLE_TRIGGER_NAME}') THEN
    DELETE FROM cplane_merkle_tiles;
    PERFORM cplane_merkle_push(s) FROM generate_series(256::bigint, (SELECT coalesce(max(seq), 0) FROM cplane_entries), 256) AS s;
    CREATE TRIGGER ${MERKLE_TRIGGER_NAME} AFTER INSERT ON cplane_entries REFERENCING NEW TABLE AS cplane_merkle_added
      FOR EACH STATEMENT EXECUTE FUNCTION ${MERKLE_TRIGGER_FN}();
  END IF;
END $$;
`;
