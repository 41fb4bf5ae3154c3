import Database from 'better-sqlite3';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { canonicalJson, sha256Digest } from '#kernel/canonical.js';
import { CpError, show } from '#kernel/errors.js';
import { envError } from '#kernel/env-errors.js';
import { mergeFacts, type FactUpdate, type StateSnapshotFact } from './facts.js';
import { rootPaths } from '#kernel/root/layout.js';

export interface RunRecord {
  run_id: string;
  spec_name: string;
  tasks_path: string;
  created_at: string;
}

export interface Snapshot {
  run_id: string;
  revision: number;
  reason: string;
  created_at: string;
  previous_hash: string;
  snapshot_hash: string;
  facts: StateSnapshotFact[];
}

const FORMAT = 'cplane-dispatch';
const FORMAT_VERSION = '1';
const GENESIS = sha256Digest('');

const DDL = `
CREATE TABLE IF NOT EXISTS dispatch_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY, spec_name TEXT NOT NULL, tasks_path TEXT NOT NULL, created_at TEXT NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS snapshots (
  run_id TEXT NOT NULL REFERENCES runs (run_id), revision INTEGER NOT NULL, reason TEXT NOT NULL,
  created_at TEXT NOT NULL, previous_hash TEXT NOT NULL, snapshot_hash TEXT NOT NULL, facts TEXT NOT NULL,
  PRIMARY KEY (run_id, revision)
) STRICT;
CREATE TRIGGER IF NOT EXISTS snapshots_no_update BEFORE UPDATE ON snapshots
  BEGIN SELECT RAISE(ABORT, 'dispatch snapshots are append-only'); END;
CREATE TRIGGER IF NOT EXISTS snapshots_no_delete BEFORE DELETE ON snapshots
  BEGIN SELECT RAISE(ABORT, 'dispatch snapshots are append-only'); END;
`;

export function dispatchStorePath(root: string): string {
  return rootPaths(root).dispatchDb;
}

/** The hash over everything a snapshot row says, linked to the previous revision's hash. */
export function snapshotHash(snapshot: Omit<Snapshot, 'snapshot_hash'>): string {
  return sha256Digest(
    canonicalJson({
      run_id: snapshot.run_id,
      revision: snapshot.revision,
      reason: snapshot.reason,
      created_at: snapshot.created_at,
      previous_hash: snapshot.previous_hash,
      facts: snapshot.facts,
    }),
  );
}

/** A stored snapshot: its facts as the JSON text that was hashed. */
type SnapshotRow = Omit<Snapshot, 'facts'> & { facts: string };

/**
 * Revisioned snapshots of dispatch facts, one chain per run. Every change is a new revision written in a
 * BEGIN IMMEDIATE transaction, so concurrent ingests serialise instead of losing each other's updates.
 */
export class SnapshotStore {
  private constructor(
    readonly path: string,
    private readonly db: Database.Database,
    private readonly clock: () => number,
  ) {}

  /**
   * Open the root's store. Without `create`, a missing store is "no such run" (nothing is written);
   * with it, the root directory must already exist so a mistyped --root never grows a new tree.
   */
  static open(root: string, options: { create?: boolean; clock?: () => number } = {}): SnapshotStore | undefined {
    const path = dispatchStorePath(root);
    if (!existsSync(path)) {
      if (!options.create) return undefined;
      if (!existsSync(root)) {
        throw new CpError('ERR_DISPATCH_ROOT_NOT_FOUND', `root ${show(root)} does not exist`, {
          hint: 'pass --root with the path of an existing cplane root',
          details: { root },
        });
      }
      mkdirSync(dirname(path), { recursive: true });
    }
    let db: Database.Database | undefined;
    try {
      db = new Database(path);
      db.pragma('busy_timeout = 10000');
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = FULL');
      initialise(db, path);
    } catch (cause) {
      db?.close();
      if (cause instanceof CpError) throw cause;
      const env = envError(cause, path, 'opening the dispatch store');
      if (env && env.code !== 'ERR_DB_DAMAGED') throw env;
      throw new CpError(
        'ERR_DISPATCH_STORE_UNREADABLE',
        `cannot open the dispatch store ${show(path)}: ${(cause as Error).message}`,
        {
          hint: 'the file is not a cplane dispatch store; move it aside and re-run dispatch init',
          details: { path },
          cause,
        },
      );
    }
    return new SnapshotStore(path, db, options.clock ?? Date.now);
  }

  now(): string {
    return new Date(this.clock()).toISOString();
  }

  getRun(runId: string): RunRecord | undefined {
    return this.db.prepare('SELECT run_id, spec_name, tasks_path, created_at FROM runs WHERE run_id = ?').get(runId) as
      | RunRecord
      | undefined;
  }

  requireRun(runId: string): RunRecord {
    const run = this.getRun(runId);
    if (!run) {
      throw new CpError('ERR_DISPATCH_RUN_NOT_FOUND', `no dispatch run ${show(runId)} in ${show(this.path)}`, {
        hint: 'start it with `cplane dispatch init --root R --tasks FILE --run RUN`',
        details: { run_id: runId },
      });
    }
    return run;
  }

  /** Create the run and its first snapshot together: a run never exists without facts. */
  createRun(run: Omit<RunRecord, 'created_at'>, facts: readonly FactUpdate[]): Snapshot {
    return this.db
      .transaction(() => {
        if (this.getRun(run.run_id)) {
          throw new CpError('ERR_DISPATCH_RUN_EXISTS', `dispatch run ${show(run.run_id)} already exists`, {
            hint: 'pick a new --run id; a run keeps its history',
            details: { run_id: run.run_id },
          });
        }
        const createdAt = this.now();
        this.db
          .prepare('INSERT INTO runs (run_id, spec_name, tasks_path, created_at) VALUES (?, ?, ?, ?)')
          .run(run.run_id, run.spec_name, run.tasks_path, createdAt);
        return this.insert(run.run_id, undefined, facts, 'init', createdAt);
      })
      .immediate();
  }

  /** The newest snapshot of a run, hash-checked before it is trusted. */
  head(runId: string): Snapshot {
    this.requireRun(runId);
    const row = this.db.prepare('SELECT * FROM snapshots WHERE run_id = ? ORDER BY revision DESC LIMIT 1').get(runId) as
      | SnapshotRow
      | undefined;
    if (!row) throw corrupt(this.path, runId, 0, 'the run has no snapshot');
    return verifiedRow(this.path, row);
  }

  /**
   * Read the head, derive updates from it and write them as the next revision, atomically.
   * No updates means no new revision: reading never grows the history.
   */
  update<T>(
    runId: string,
    reason: string,
    derive: (head: Snapshot) => { updates: readonly FactUpdate[]; result: T },
  ): { snapshot: Snapshot; result: T } {
    return this.db
      .transaction(() => {
        const head = this.head(runId);
        const { updates, result } = derive(head);
        const snapshot = updates.length === 0 ? head : this.insert(runId, head, updates, reason, this.now());
        return { snapshot, result };
      })
      .immediate();
  }

  revisions(runId: string): number {
    return this.db.prepare('SELECT count(*) FROM snapshots WHERE run_id = ?').pluck().get(runId) as number;
  }

  close(): void {
    if (this.db.open) this.db.close();
  }

  private insert(
    runId: string,
    head: Snapshot | undefined,
    updates: readonly FactUpdate[],
    reason: string,
    at: string,
  ): Snapshot {
    const revision = (head?.revision ?? 0) + 1;
    const body = {
      run_id: runId,
      revision,
      reason,
      created_at: at,
      previous_hash: head?.snapshot_hash ?? GENESIS,
      facts: mergeFacts(head?.facts ?? [], updates, revision, at),
    };
    const snapshot: Snapshot = { ...body, snapshot_hash: snapshotHash(body) };
    this.db
      .prepare(`INSERT INTO snapshots (run_id, revision, reason, created_at, previous_hash, snapshot_hash, facts)
      VALUES (@run_id, @revision, @reason, @created_at, @previous_hash, @snapshot_hash, @facts)`)
      .run({ ...snapshot, facts: canonicalJson(snapshot.facts) });
    return snapshot;
  }
}

function initialise(db: Database.Database, path: string): void {
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[];
  if (!tables.includes('dispatch_meta')) {
    if (tables.length > 0) throw new Error('it has tables but no dispatch_meta');
    db.transaction(() => {
      db.exec(DDL);
      db.prepare('INSERT INTO dispatch_meta (key, value) VALUES (?, ?), (?, ?)').run(
        'format',
        FORMAT,
        'format_version',
        FORMAT_VERSION,
      );
    }).immediate();
    return;
  }
  const version = db.prepare("SELECT value FROM dispatch_meta WHERE key = 'format_version'").pluck().get();
  const format = db.prepare("SELECT value FROM dispatch_meta WHERE key = 'format'").pluck().get();
  if (format !== FORMAT || version !== FORMAT_VERSION) {
    throw new CpError(
      'ERR_DISPATCH_STORE_UNREADABLE',
      `${show(path)} has format ${show(format)} version ${show(version)}, expected ${FORMAT} ${FORMAT_VERSION}`,
      {
        hint: 'open it with the cplane version that wrote it',
        details: { path },
      },
    );
  }
}

function verifiedRow(path: string, row: SnapshotRow): Snapshot {
  let facts: StateSnapshotFact[];
  try {
    facts = JSON.parse(row.facts) as StateSnapshotFact[];
  } catch (cause) {
    throw corrupt(path, row.run_id, row.revision, 'its facts are not JSON', cause);
  }
  const snapshot: Snapshot = { ...row, facts };
  if (!Array.isArray(facts) || snapshotHash(snapshot) !== row.snapshot_hash) {
    throw corrupt(path, row.run_id, row.revision, 'its hash does not match its content');
  }
  return snapshot;
}

function corrupt(path: string, runId: string, revision: number, why: string, cause?: unknown): CpError {
  return new CpError(
    'ERR_DISPATCH_SNAPSHOT_CORRUPT',
    `dispatch snapshot ${show(runId)} revision ${revision} in ${show(path)}: ${why}`,
    {
      hint: 'the dispatch store was edited outside cplane; start a new run with dispatch init',
      details: { path, run_id: runId, revision },
      cause,
    },
  );
}
