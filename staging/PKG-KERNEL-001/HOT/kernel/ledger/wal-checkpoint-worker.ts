// The thread behind wal-checkpointer.ts: its own connection to the ledger, which runs the checkpoints the writer
// asks for, so they use another core and never hold up the writer's event loop. It only reads the WAL and writes
// the database file; the WAL stays the source of truth, so killing this thread at any moment loses nothing.
import Database from 'better-sqlite3';
import { openSync, readSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';

export interface CheckpointWorkerData {
  path: string;
  /** Shared flags: [STOPPED] becomes 1 once the connection is closed (the writer waits for it at close). */
  control: SharedArrayBuffer;
  /** How long a RESTART waits for readers (and holds off the writer) before giving up for this round. */
  busyTimeoutMs: number;
  /** Passes are repeated while more than this many frames were committed during the last one. */
  tailFrames: number;
}

export type CheckpointRequest = { mode: 'PASSIVE' | 'RESTART' } | { stop: true };
export type CheckpointReply = { busy: number; log: number; checkpointed: number } | { failed: string };

const STOPPED = 0;
const MAX_PASSES = 4;

const data = workerData as CheckpointWorkerData;
const control = new Int32Array(data.control);
const port = parentPort;
if (port === null) throw new Error('wal-checkpoint-worker runs as a worker thread');

/**
 * The connection, its two checkpoint statements and the -shm; a worker that cannot make them says it is stopped, so
 * the writer's close need not wait for it.
 */
function open(): { db: Database.Database; passive: Database.Statement; restart: Database.Statement; shm: number } {
  try {
    const db = new Database(data.path, { fileMustExist: true });
    db.pragma(`busy_timeout = ${data.busyTimeoutMs}`);
    // A checkpoint syncs the WAL before copying it and the database file after, unless its connection is at OFF.
    db.pragma('synchronous = FULL');
    db.pragma('wal_autocheckpoint = 0');
    const passive = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
    const restart = db.prepare('PRAGMA wal_checkpoint(RESTART)');
    return { db, passive, restart, shm: openSync(`${data.path}-shm`, 'r') };
  } catch (error) {
    Atomics.store(control, STOPPED, 1);
    Atomics.notify(control, STOPPED);
    throw error;
  }
}
const { db, passive, restart, shm } = open();
const word = new Uint32Array(1);

/** The frames in the WAL now (the wal-index header's mxFrame, see wal-checkpointer.ts). */
function walFrames(): number {
  return readSync(shm, new Uint8Array(word.buffer), 0, 4, 16) === 4 ? (word[0] as number) : 0;
}

type Row = { busy: number; log: number; checkpointed: number };

/** A checkpoint, passed over again while the writer committed more than a tail during the last pass. */
function catchUp(mode: 'PASSIVE' | 'RESTART'): Row {
  let row = (mode === 'RESTART' ? restart : passive).get() as Row;
  for (
    let pass = 1;
    pass < MAX_PASSES && row.busy === 0 && walFrames() - row.checkpointed > data.tailFrames;
    pass += 1
  ) {
    row = passive.get() as Row;
  }
  return row;
}

port.on('message', (request: CheckpointRequest) => {
  if ('stop' in request) {
    db.close();
    Atomics.store(control, STOPPED, 1);
    Atomics.notify(control, STOPPED);
    port.close();
    return;
  }
  try {
    port.postMessage(catchUp(request.mode));
  } catch (error) {
    // A full or failing disk: the WAL keeps everything, and the writer's next signal tries again.
    port.postMessage({ failed: error instanceof Error ? error.message : String(error) });
  }
});
