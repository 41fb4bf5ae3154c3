import type pg from 'pg';
import { show } from '../../errors.js';
import { MERKLE_HELPERS } from './merkle-sql.js';
import { ALL_LEDGER_TRIGGERS, LEDGER_COLUMNS, LEDGER_FUNCTIONS } from './schema.js';

const TABLES = ['cplane_ledger_meta', ...Object.keys(LEDGER_COLUMNS)];
const OIDS = 'SELECT to_regclass(n) FROM unnest($1::text[]) AS n';

/**
 * How the ledger's tables differ from what cplane laid out: a trigger keeping rows append-only missing, disabled
 * or running an edited function, another trigger or a rule (which could rewrite or drop rows as they are
 * written), a column of another type, or the tables split across schemas (one shadowed by a same-named table
 * earlier on the search path). A role that may do this can rewrite history that still hashes; none of it is
 * seen in the rows verify re-hashes, so it is looked for here.
 */
export async function pgSchemaProblems(db: pg.Pool | pg.PoolClient): Promise<string[]> {
  const problems: string[] = [];
  const schemas = await db.query(`SELECT count(DISTINCT relnamespace)::int AS n FROM pg_class WHERE oid IN (${OIDS})`, [
    TABLES,
  ]);
  if ((schemas.rows[0] as { n: number }).n > 1)
    problems.push(`the ledger's tables (${TABLES.join(', ')}) are not all in one schema on the search path`);
  const columns = await db.query(
    `SELECT c.relname AS tbl, a.attname || ' ' || format_type(a.atttypid, a.atttypmod) AS col
     FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
     WHERE a.attrelid IN (${OIDS}) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY c.relname, a.attnum`,
    [Object.keys(LEDGER_COLUMNS)],
  );
  for (const [table, expected] of Object.entries(LEDGER_COLUMNS)) {
    const found = (columns.rows as { tbl: string; col: string }[]).filter((r) => r.tbl === table).map((r) => r.col);
    if (found.join(', ') !== expected.join(', '))
      problems.push(`table ${table} has columns (${found.join(', ')}), not (${expected.join(', ')})`);
  }
  const triggers = await db.query(
    `SELECT c.relname AS tbl, t.tgname AS name, t.tgenabled AS enabled, p.proname AS fn, p.prosrc AS src
     FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid
     WHERE NOT t.tgisinternal AND t.tgrelid IN (${OIDS})`,
    [TABLES],
  );
  const rows = triggers.rows as { tbl: string; name: string; enabled: string; fn: string; src: string }[];
  for (const want of ALL_LEDGER_TRIGGERS) {
    const found = rows.find((r) => r.name === want.name && r.tbl === want.table);
    if (found === undefined) problems.push(`trigger ${want.name} on ${want.table} is missing`);
    // 'O' fires in every session as laid out ('A' too); 'D' is disabled and 'R' fires only on a replica.
    else if (found.enabled !== 'O' && found.enabled !== 'A')
      problems.push(`trigger ${want.name} on ${want.table} is disabled`);
    else if (found.fn !== want.fn || found.src !== LEDGER_FUNCTIONS[want.fn])
      problems.push(`trigger ${want.name} on ${want.table} runs ${show(found.fn)}, which is not cplane's ${want.fn}`);
  }
  for (const r of rows)
    if (!ALL_LEDGER_TRIGGERS.some((t) => t.name === r.name && t.table === r.tbl))
      problems.push(`table ${r.tbl} has a trigger cplane did not lay out: ${show(r.name)}`);
  const rules = await db.query(
    `SELECT c.relname AS tbl, r.rulename AS name FROM pg_rewrite r JOIN pg_class c ON c.oid = r.ev_class
     WHERE r.ev_class IN (${OIDS})`,
    [TABLES],
  );
  for (const r of rules.rows as { tbl: string; name: string }[])
    problems.push(`table ${r.tbl} has a rule cplane did not lay out: ${show(r.name)}`);
  // The Merkle trigger's helpers write the tiles: an edited one would keep a tree that is not the chain's.
  const helpers = await db.query(
    "SELECT proname AS name, prosrc AS src FROM pg_proc WHERE proname = ANY($1::text[]) AND pronamespace = (SELECT relnamespace FROM pg_class WHERE oid = to_regclass('cplane_entries'))",
    [Object.keys(MERKLE_HELPERS)],
  );
  for (const [name, body] of Object.entries(MERKLE_HELPERS)) {
    const found = (helpers.rows as { name: string; src: string }[]).filter((r) => r.name === name);
    if (found.length !== 1 || found[0]?.src !== body)
      problems.push(
        `function ${name} is ${found.length === 0 ? 'missing' : "not cplane's"}: the Merkle tiles it writes cannot be trusted`,
      );
  }
  return problems;
}
