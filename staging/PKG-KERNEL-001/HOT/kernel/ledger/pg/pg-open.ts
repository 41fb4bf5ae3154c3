import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { CpError } from '../../errors.js';
import { idDigits } from '../entry.js';
import { ignoreDropped } from './pg-errors.js';
import { pgSchemaProblems } from './pg-schema-check.js';
import { ID_START_KEY } from './pg-sql.js';
import { PG_LEDGER_DDL, PG_LEDGER_LOCK } from './schema.js';

/**
 * Checks (with `create`, first lays out) the ledger's tables on one connection of `pool`: how they differ from
 * cplane's layout, as read now. With create, the DDL runs every time (it is idempotent): a database laid out by an
 * earlier cplane gets today's functions and triggers; concurrent openers serialise on the chain lock.
 */
export async function openPgTables(pool: pg.Pool, create: boolean): Promise<string[]> {
  const client = await pool.connect();
  // A connection dropped while checked out is also emitted as an 'error' event, which would end the process
  // unheard; the query in flight fails with it and is reported.
  client.on('error', ignoreDropped);
  try {
    const exists = await client.query("SELECT to_regclass('cplane_entries') IS NOT NULL AS present");
    if (exists.rows[0]?.present !== true || create) {
      if (!create)
        throw new CpError('ERR_LEDGER_NOT_A_LEDGER', 'the database holds no cplane ledger', {
          hint: 'create it with `cplane ledger migrate --to URL`, or open it with create',
        });
      await client.query('BEGIN');
      await client.query(`SELECT pg_advisory_xact_lock(${PG_LEDGER_LOCK})`);
      await client.query(PG_LEDGER_DDL);
      await client.query('INSERT INTO cplane_ledger_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING', [
        ID_START_KEY,
        idDigits(randomBytes(4).readUInt32BE(0)),
      ]);
      await client.query('COMMIT');
    }
    return await pgSchemaProblems(client);
  } finally {
    client.off('error', ignoreDropped);
    client.release();
  }
}
