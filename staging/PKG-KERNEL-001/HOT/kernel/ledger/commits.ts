import type Database from 'better-sqlite3';
import type { Synchronous } from './open.js';

/**
 * Commits a store made, by whether they waited for the disk (an fsync of the SQLite WAL, a WAL flush on
 * PostgreSQL) or not: read before and after some calls, the difference is the fsyncs those calls cost.
 */
export interface CommitCount {
  durable: number;
  lazy: number;
}

export const commitCount = (): CommitCount => ({ durable: 0, lazy: 0 });

/** The durable commits of several stores together (a router's ledger and budget database). */
export function durableCommitsOf(counts: readonly (CommitCount | null | undefined)[]): number {
  let total = 0;
  for (const count of counts) total += count?.durable ?? 0;
  return total;
}

/**
 * A SQLite connection's commits made durable or not one by one. A commit asked not to be durable runs under
 * synchronous=NORMAL: in WAL mode it writes its frames without an fsync, and the next FULL commit's fsync of the
 * WAL carries them to the disk with it (a checkpoint in between syncs them under NORMAL too). Never OFF: a
 * checkpoint under OFF does not sync the database file before the WAL restarts over its frames. The connection's
 * own level (set at open) is the most any commit gets.
 */
export class SqliteCommits {
  readonly count = commitCount();
  private lower: Database.Statement | undefined;
  private restore: Database.Statement | undefined;

  constructor(
    private readonly db: Database.Database,
    private readonly synchronous: Synchronous,
  ) {}

  /** `commit` (one transaction) with its durability; counted once it committed. */
  run<T>(durable: boolean, commit: () => T): T {
    if (durable || this.synchronous !== 'FULL') {
      const value = commit();
      if (durable && this.synchronous === 'FULL') this.count.durable += 1;
      else this.count.lazy += 1;
      return value;
    }
    (this.lower ??= this.db.prepare('PRAGMA synchronous = NORMAL')).run();
    try {
      const value = commit();
      this.count.lazy += 1;
      return value;
    } finally {
      (this.restore ??= this.db.prepare('PRAGMA synchronous = FULL')).run();
    }
  }
}
