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
 *
 * The level is changed only when a commit needs the other one: a run of lazy commits (every append of a `relaxed`
 * router) stays at NORMAL, and a durable commit, or any other write made on the connection (`atOwnLevel`), puts
 * the connection's level back first. Each switch is a statement of its own, two per lazy commit when it was put
 * back after each.
 */
export class SqliteCommits {
  readonly count = commitCount();
  private lower: Database.Statement | undefined;
  private restore: Database.Statement | undefined;
  /** The connection is at NORMAL below its own FULL: the last commit was lazy. */
  private lowered = false;

  constructor(
    private readonly db: Database.Database,
    private readonly synchronous: Synchronous,
  ) {}

  /** `commit` (one transaction) with its durability; counted once it committed. */
  run<T>(durable: boolean, commit: () => T): T {
    if (durable || this.synchronous !== 'FULL') {
      const value = this.atOwnLevel(commit);
      if (durable && this.synchronous === 'FULL') this.count.durable += 1;
      else this.count.lazy += 1;
      return value;
    }
    if (!this.lowered) {
      (this.lower ??= this.db.prepare('PRAGMA synchronous = NORMAL')).run();
      this.lowered = true;
    }
    const value = commit();
    this.count.lazy += 1;
    return value;
  }

  /** A lazy commit since made durable by a sync of the WAL of its own (wal-sync.ts): counted as durable. */
  madeDurable(): void {
    this.count.lazy -= 1;
    this.count.durable += 1;
  }

  /** A write that is not an append (a redaction, an import, laying out the tree) at the connection's own level. */
  atOwnLevel<T>(write: () => T): T {
    if (this.lowered) {
      (this.restore ??= this.db.prepare('PRAGMA synchronous = FULL')).run();
      this.lowered = false;
    }
    return write();
  }
}
