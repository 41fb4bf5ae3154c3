import type Database from 'better-sqlite3';
import { closeSync, fsyncSync, statSync } from 'node:fs';
import { openRegularFile } from '../regular-file.js';

/**
 * Grow a writer's WAL to the size it reaches in steady use before the first append needs it. A commit that
 * extends the WAL makes its fsync commit the file's new size too (a filesystem journal commit on ext4 and the
 * like); a commit that overwrites pages the file already has only flushes them. SQLite restarts the WAL at its
 * start after each checkpoint and keeps the file, so a long-running writer pays for growth only until the file
 * first reaches its checkpoint size: this pays it once, at open, the way PostgreSQL fills WAL segments ahead.
 *
 * SQLite has no call for it, so the pages are written the way SQLite itself writes pages that will not commit:
 * a write transaction too large for a tiny page cache spills its pages to the WAL, and is rolled back. Frames
 * with no commit frame after them are never read, and the next commit overwrites them from the WAL's start.
 * Nothing reaches the database: the scratch table is created and filled inside the rolled-back transaction.
 *
 * Best effort: a full disk, or another writer holding the lock, leaves the WAL as it was.
 */
export function reserveWal(db: Database.Database, path: string, checkpointFrames: number | null = null): void {
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  const checkpointPages = checkpointFrames ?? (db.pragma('wal_autocheckpoint', { simple: true }) as number);
  if (checkpointPages <= 0) return;
  // The WAL holds what the writer commits while a checkpoint runs, beyond the threshold: a quarter more (one
  // transaction, for SQLite's own, which runs after the commit that crosses it; a busy gateway's during the
  // worker's passes, at 64 clients).
  const bytes = Math.ceil(1.25 * checkpointPages) * (pageSize + WAL_FRAME_HEADER_BYTES);
  const wal = `${path}-wal`;
  if (walSize(wal) >= bytes) return;
  const cacheSize = db.pragma('cache_size', { simple: true }) as number;
  db.pragma('cache_size = 8');
  try {
    db.exec('BEGIN IMMEDIATE');
    try {
      db.exec('CREATE TABLE cplane_wal_reserve (fill BLOB)');
      db.prepare('INSERT INTO cplane_wal_reserve (fill) VALUES (zeroblob(?))').run(bytes);
    } finally {
      // SQLite rolls a transaction back itself on some errors (a full disk among them).
      if (db.inTransaction) db.exec('ROLLBACK');
    }
    // Spilled pages are written but not synced: without this the first append's fsync would flush all of them.
    const opened = openRegularFile(wal, { noFollow: true });
    if (opened.fd === null) return;
    try {
      if (opened.stat.size >= bytes) fsyncSync(opened.fd);
    } finally {
      closeSync(opened.fd);
    }
  } catch (cause) {
    if (!SKIPPABLE.has(String((cause as { code?: unknown }).code))) throw cause;
  } finally {
    db.pragma(`cache_size = ${cacheSize}`);
  }
}

const WAL_FRAME_HEADER_BYTES = 24;

/** Why a reservation may be skipped: the disk is full, or another writer holds the write lock past the busy timeout. */
const SKIPPABLE = new Set(['SQLITE_FULL', 'SQLITE_BUSY', 'ENOSPC']);

function walSize(wal: string): number {
  try {
    return statSync(wal).size;
  } catch {
    return 0;
  }
}
