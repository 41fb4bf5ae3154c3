import type pg from 'pg';
import { connectionUnusable, ignoreDropped, storeError, timedOut } from './pg-errors.js';

/**
 * `work` in one transaction on one connection of `pool`: committed when it says so, else rolled back, and rolled
 * back when it throws. A connection that failed under the transaction is not handed to the next caller. Not
 * `durable`: its COMMIT does not wait for the WAL flush (SET LOCAL synchronous_commit, this transaction only).
 */
export async function pgTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<{ commit: boolean; value: T }>,
  durable = true,
): Promise<T> {
  const client = await pool.connect();
  client.on('error', ignoreDropped);
  let failure: unknown;
  try {
    await client.query(durable ? 'BEGIN' : 'BEGIN; SET LOCAL synchronous_commit TO OFF');
    const { commit, value } = await work(client);
    await client.query(commit ? 'COMMIT' : 'ROLLBACK');
    return value;
  } catch (error) {
    failure = error;
    // A connection left waiting for an answer would only make the ROLLBACK wait as long: it is discarded instead.
    if (!timedOut(error)) await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.off('error', ignoreDropped);
    client.release(failure !== undefined && connectionUnusable(failure) ? (failure as Error) : undefined);
  }
}

/** `work` committed in one transaction; any failure, the connection's included, as the store's coded error. */
export function committedTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  return pgTransaction(pool, async (client) => ({ commit: true, value: await work(client) })).catch(
    (error: unknown) => {
      throw storeError(error);
    },
  );
}
