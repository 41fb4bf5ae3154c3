import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { CpError, show } from '../errors.js';
import { envError, withEnvErrors } from '../env-errors.js';
import { rootPaths } from './layout.js';

export interface RootLock {
  release(): void;
}

export interface LockOptions {
  /** How long to wait for another installer to finish. Default 60 s. */
  timeoutMs?: number;
}

/**
 * The root-wide installer lock: an EXCLUSIVE transaction on HOT/registries/lock.sqlite. SQLite holds it
 * with an OS file lock, so a killed installer never leaves a stale lock behind, and a waiting installer
 * queues on SQLite's busy timeout instead of polling a pid file.
 */
export function acquireRootLock(root: string, options: LockOptions = {}): RootLock {
  const { lockDb } = rootPaths(root);
  if (!existsSync(lockDb)) {
    throw new CpError('ERR_ROOT_NOT_A_ROOT', `${show(root)} is not a cplane root (no ${show(lockDb)})`, {
      hint: 'bootstrap the root first (cplane bootstrap --root R), or check --root',
      details: { root },
    });
  }
  const db = withEnvErrors(lockDb, 'opening the root lock', () => new Database(lockDb, { fileMustExist: true }));
  const timeoutMs = Math.max(0, Math.trunc(options.timeoutMs ?? 60_000));
  try {
    db.pragma(`busy_timeout = ${timeoutMs}`);
    db.exec('BEGIN EXCLUSIVE');
  } catch (cause) {
    db.close();
    // Busy means another installer; a damaged or unwritable lock file is said as such.
    const env = envError(cause, lockDb, 'taking the root lock');
    if (env) throw env;
    throw new CpError('ERR_ROOT_LOCKED', `another installer holds the lock on ${show(root)} (waited ${timeoutMs} ms)`, {
      hint: 'wait for the other install/upgrade/uninstall to finish, then retry',
      details: { root, timeout_ms: timeoutMs },
      cause,
    });
  }
  let held = true;
  return {
    release(): void {
      if (!held) return;
      held = false;
      try {
        db.exec('ROLLBACK');
      } finally {
        db.close();
      }
    },
  };
}

/** Create the lock database of a new root (genesis). */
export function createLockFile(root: string): void {
  const db = new Database(rootPaths(root).lockDb);
  try {
    db.exec('CREATE TABLE IF NOT EXISTS root_lock (note TEXT)');
  } finally {
    db.close();
  }
}
