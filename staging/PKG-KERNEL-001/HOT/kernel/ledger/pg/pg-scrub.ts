import type pg from 'pg';

/** Said after every redaction on PostgreSQL: what no command run against the database can reach. */
export const PG_RESIDUE =
  'PostgreSQL still holds the removed text in its write-ahead log (pg_wal) until those segments are recycled and overwritten, and in any standby, WAL archive or base backup taken before now: purge those by their own means';

export const VACUUM_SKIPPED =
  'the table files still hold the removed text (--no-vacuum): run `VACUUM (FULL) cplane_content_blocks` (it locks the table while it rewrites it), then `CHECKPOINT`';

/** How long the scrub waits for transactions that began before the redaction to end. */
const SNAPSHOT_WAIT_MS = 10_000;
/**
 * How long VACUUM FULL may wait for its ACCESS EXCLUSIVE lock. While it waits, every append that stores content
 * queues behind it, so a gateway busy on a long transaction is held up for at most this, then the scrub gives up
 * with a warning instead.
 */
const LOCK_TIMEOUT = '10s';
/**
 * VACUUM FULL and CHECKPOINT rewrite and flush whole files: on a large store they outlast the pool's query timeout
 * (meant for one append or read), so they are given this instead.
 */
const REWRITE_TIMEOUT_MS = 30 * 60_000;
const rewrite = (text: string): pg.QueryConfig => ({ text, query_timeout: REWRITE_TIMEOUT_MS }) as pg.QueryConfig;

/**
 * Snapshots that may not see the redaction (their xmin is not after its transaction `$1`): VACUUM FULL copies a
 * row version such a snapshot could still read, old text included. A backend, a prepared transaction or a
 * replication slot (a standby with hot_standby_feedback) can hold one.
 */
const OLDER_SNAPSHOTS_SQL = `SELECT
  (SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND datname = current_database()
     AND backend_xmin IS NOT NULL AND age(backend_xmin) >= age($1::xid))
  + (SELECT count(*) FROM pg_prepared_xacts WHERE database = current_database() AND age(transaction) >= age($1::xid))
  + (SELECT count(*) FROM pg_replication_slots WHERE xmin IS NOT NULL AND age(xmin) >= age($1::xid)) AS n`;

/**
 * After a redaction committed: erases the old row versions from the table files. An UPDATE leaves the old
 * version (the text) in the heap or its TOAST table until vacuumed, and a plain VACUUM only marks the space free;
 * VACUUM FULL writes the live rows into new files and empties the old ones, so the text leaves the data
 * directory's table files. CHECKPOINT then removes the emptied files and lets the WAL that carried the text be
 * recycled. Nothing here fails the redaction, which is already committed: what could not be done is a warning.
 */
export async function scrubBlocks(pool: pg.Pool, xid: string): Promise<{ checkpointed: boolean; warnings: string[] }> {
  const warnings: string[] = [];
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    return { checkpointed: false, warnings: [notScrubbed(error), PG_RESIDUE] };
  }
  const notices: string[] = [];
  const onNotice = (notice: { severity?: string | undefined; message?: string | undefined }): void => {
    if (notice.severity === 'WARNING' && typeof notice.message === 'string') notices.push(notice.message);
  };
  client.on('notice', onNotice);
  client.on('error', ignore);
  let failure: unknown;
  try {
    if (!(await olderSnapshotsEnded(client, xid)))
      warnings.push(
        'a transaction older than the redaction was still open, so VACUUM FULL may have kept the old row version with its text: run `VACUUM (FULL) cplane_content_blocks` again once it ends',
      );
    const vacuumed = await vacuumFull(client, notices);
    if (vacuumed !== null) warnings.push(vacuumed);
    const checkpointed = await checkpoint(client);
    if (checkpointed !== null) warnings.push(checkpointed);
  } catch (error) {
    failure = error;
    warnings.push(notScrubbed(error));
  } finally {
    client.off('notice', onNotice);
    client.off('error', ignore);
    // A connection that failed here (or kept a lock_timeout) is not handed to the next caller.
    client.release(failure !== undefined ? true : undefined);
  }
  const clean = warnings.length === 0;
  warnings.push(PG_RESIDUE);
  return { checkpointed: clean, warnings };
}

/** VACUUM FULL on the blocks table; a warning when it did not run. */
async function vacuumFull(client: pg.PoolClient, notices: string[]): Promise<string | null> {
  await client.query(`SET lock_timeout = '${LOCK_TIMEOUT}'`);
  try {
    await client.query(rewrite('VACUUM (FULL) cplane_content_blocks'));
  } catch (error) {
    return (error as { code?: string }).code === '55P03'
      ? `VACUUM FULL could not lock cplane_content_blocks within ${LOCK_TIMEOUT} (a long transaction holds it): ${VACUUM_ASK}`
      : `VACUUM FULL failed (${(error as Error).message}): ${VACUUM_ASK}`;
  } finally {
    await client.query('RESET lock_timeout');
  }
  // A role that does not own the table is not refused: the server skips it with a WARNING.
  const skipped = notices.find((m) => /skipping/.test(m));
  return skipped === undefined ? null : `VACUUM FULL did not run (${skipped}): ${VACUUM_ASK}`;
}

/** CHECKPOINT; a warning when the role may not. */
async function checkpoint(client: pg.PoolClient): Promise<string | null> {
  try {
    await client.query(rewrite('CHECKPOINT'));
    return null;
  } catch (error) {
    return (error as { code?: string }).code === '42501'
      ? 'this role may not run CHECKPOINT (superuser or pg_checkpoint): the emptied table files go, and the WAL holding the text becomes recyclable, at the server’s next checkpoint'
      : `CHECKPOINT failed (${(error as Error).message}); the server’s next checkpoint does the same`;
  }
}

const VACUUM_ASK =
  'the table files still hold the removed text until the table owner runs `VACUUM (FULL) cplane_content_blocks`';

/** Waits (bounded) until no snapshot older than the redaction is open; false when one still is. */
async function olderSnapshotsEnded(client: pg.PoolClient, xid: string): Promise<boolean> {
  const deadline = Date.now() + SNAPSHOT_WAIT_MS;
  for (;;) {
    const r = await client.query(OLDER_SNAPSHOTS_SQL, [xid]);
    if (Number((r.rows[0] as { n: string }).n) === 0) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function notScrubbed(error: unknown): string {
  return `the table files could not be vacuumed (${(error as Error).message}): ${VACUUM_ASK}`;
}

function ignore(): void {}
