import { pgPool, refusePasswordInUrl } from '#kernel/ledger/pg/pg-ledger.js';
import { readRevocations } from '../revocations.js';
import { copyRevocations } from './revocations.js';

/**
 * `cplane ledger migrate`'s share for the router: the root's revoked keys into the shared table, so a key revoked
 * before the switch stays revoked on every host. Rerunning adds only what is missing.
 */
export async function migrateRootRevocations(
  root: string,
  url: string,
): Promise<{ revoked: number; copied: number } | null> {
  const { entries } = readRevocations(root);
  refusePasswordInUrl(url);
  const pool = pgPool(url, 1);
  try {
    return { revoked: entries.length, copied: await copyRevocations(root, pool) };
  } finally {
    await pool.end();
  }
}
