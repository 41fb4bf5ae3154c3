import type Database from 'better-sqlite3';
import { closeSync, openSync, readSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import type { CheckpointReply, CheckpointRequest, CheckpointWorkerData } from './wal-checkpoint-worker.js';

/**
 * WAL frames between checkpoints (8 MiB of WAL at the ledger's 2 KiB pages, as the budget file's inline
 * autocheckpoint, BUDGET_WAL_CHECKPOINT_PAGES). Each checkpoint ends with the writer's tail, two fsyncs on its own
 * thread: at SQLite's default 1,000 frames one in ~45 of a gateway's sequential calls carried one (its p90–p99), at 4,000
 * one in ~180. A checkpoint copies each page once however often the WAL rewrote it, so fewer also write less.
 */
export const CHECKPOINT_FRAMES = 4000;
/** Past this many checkpoints' worth the worker's checkpoint waits for readers (RESTART): an old snapshot pins the WAL. */
const RESTART_CHECKPOINTS = 4;
/** Past this many the worker has not kept up (starved, stuck): the writer checkpoints itself, as SQLite would have. */
const INLINE_CHECKPOINTS = 8;
/** The wal-index header's mxFrame: the frames in the WAL, a native-order u32 at byte 16 of the -shm file. */
const MX_FRAME_OFFSET = 16;
const RESTART_BUSY_MS = 100;
const WAL_HEADER_BYTES = 32;
const WAL_FRAME_HEADER_BYTES = 24;
/** The worker passes again while the writer committed more than this during its last pass (up to 4 passes). */
const TAIL_FRAMES = 64;
const STOP_WAIT_MS = 5000;

export interface CheckpointStats {
  /** Checkpoints the worker ran, and those that copied the whole WAL. */
  requested: number;
  answered: number;
  complete: number;
  /** The worker's checkpoints the writer finished (the frames committed while it ran), between calls. */
  tails: number;
  /** Checkpoints the writer ran inside a commit because the worker fell far behind. */
  inline: number;
}

/**
 * WAL checkpoints off the writer's call path. SQLite's autocheckpoint runs inside the commit that crosses it, on
 * the writer's thread; here the connection's autocheckpoint is off and a worker thread with its own connection
 * runs a PASSIVE checkpoint each time the WAL has grown by CHECKPOINT_FRAMES, so what a power loss can take from
 * lazy commits is the frames since the last checkpoint, which syncs the WAL (docs/operating.md, durability).
 * SQLite starts the WAL over only once a checkpoint has copied all of it, which one running beside a busy writer
 * never does: the worker passes again while the writer committed more than TAIL_FRAMES during its last pass, and
 * when it answers the writer copies the rest (what it committed during the last pass: a few dozen frames against
 * the thousands the worker copied, at a gateway's pace) in a task of its own, between calls, so its next commit
 * starts the WAL over.
 * The writer counts frames after each commit by reading the wal-index header (one pread). A worker that dies
 * gives the connection its autocheckpoint back; one that falls far behind is stood in for by the writer.
 */
export class WalCheckpointer {
  readonly stats: CheckpointStats = { requested: 0, answered: 0, complete: 0, tails: 0, inline: 0 };
  private readonly word = new Uint32Array(1);
  private readonly bytes = new Uint8Array(this.word.buffer);
  /** The frame count at the last request: the next is due CHECKPOINT_FRAMES later (a restarted WAL resets it). */
  private requestedAt = 0;
  /** The frame count at the writer's last checkpoint of its own, which it repeats only `frames` later. */
  private inlineAt = 0;
  private idle: (() => void)[] = [];
  private stopped = false;

  private constructor(
    private readonly db: Database.Database,
    private readonly shm: number,
    /** [0] becomes 1 once the worker's connection is closed. */
    private readonly control: SharedArrayBuffer,
    /** The thread running the checkpoints; null once it is gone (the connection checkpoints itself again). */
    public worker: Worker | null,
    /** WAL frames between checkpoints (CHECKPOINT_FRAMES unless a test asks for fewer). */
    private readonly frames: number,
  ) {}

  /** Checkpoints for `db` on a worker thread; null (SQLite's autocheckpoint stays) when the -shm cannot be read. */
  static start(db: Database.Database, path: string, frames = CHECKPOINT_FRAMES): WalCheckpointer | null {
    let shm: number;
    try {
      shm = openSync(`${path}-shm`, 'r');
    } catch {
      return null;
    }
    const control = new SharedArrayBuffer(4);
    const data: CheckpointWorkerData = { path, control, busyTimeoutMs: RESTART_BUSY_MS, tailFrames: TAIL_FRAMES };
    let worker: Worker;
    try {
      worker = new Worker(new URL('./wal-checkpoint-worker.js', import.meta.url), { workerData: data });
    } catch {
      closeSync(shm);
      return null;
    }
    worker.unref();
    const checkpointer = new WalCheckpointer(db, shm, control, worker, frames);
    worker.on('message', (reply: CheckpointReply) => checkpointer.answered(reply));
    worker.on('error', () => checkpointer.lost(worker));
    worker.on('exit', () => checkpointer.lost(worker));
    db.pragma('wal_autocheckpoint = 0');
    // A writer that outran the worker for a while grew the WAL past its steady size: the first commit after the WAL
    // starts over cuts the file back to RESTART_CHECKPOINTS' worth (SQLite keeps a WAL file at its largest otherwise).
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    const limit = RESTART_CHECKPOINTS * frames * (pageSize + WAL_FRAME_HEADER_BYTES) + WAL_HEADER_BYTES;
    db.pragma(`journal_size_limit = ${limit}`);
    return checkpointer;
  }

  /** After a commit: ask for a checkpoint when the WAL has grown enough since the last ask. */
  afterCommit(): void {
    if (this.worker === null) return;
    const frames = this.walFrames();
    if (frames < this.requestedAt) this.requestedAt = 0;
    if (frames < this.inlineAt) this.inlineAt = 0;
    if (frames >= INLINE_CHECKPOINTS * this.frames && frames - this.inlineAt >= this.frames) {
      this.stats.inline += 1;
      this.inlineAt = frames;
      this.checkpointHere();
      return;
    }
    // One request at a time: a second would hold the checkpoint lock when the writer finishes the first.
    if (frames - this.requestedAt < this.frames || this.stats.answered < this.stats.requested) return;
    this.requestedAt = frames;
    this.stats.requested += 1;
    this.post({ mode: frames >= RESTART_CHECKPOINTS * this.frames ? 'RESTART' : 'PASSIVE' });
  }

  /** Resolves once the worker has answered every checkpoint asked of it (or is gone). */
  settled(): Promise<void> {
    if (this.worker === null || this.stats.answered >= this.stats.requested) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  /** Stops the worker, waiting (bounded) for its connection to close, then checkpoints what is left itself. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    const worker = this.worker;
    this.worker = null;
    if (worker !== null) {
      this.post({ stop: true }, worker);
      Atomics.wait(new Int32Array(this.control), 0, 0, STOP_WAIT_MS);
    }
    closeSync(this.shm);
    if (this.db.open) this.checkpointHere();
    this.release();
  }

  /**
   * A checkpoint on the writer's connection. The commit before it stands either way: a checkpoint the disk refuses
   * leaves the WAL whole, and the next one tries again, as SQLite's autocheckpoint does.
   */
  private checkpointHere(): void {
    try {
      this.db.pragma('wal_checkpoint(PASSIVE)');
    } catch {
      // Nothing is lost: the frames stay in the WAL.
    }
  }

  private post(request: CheckpointRequest, worker = this.worker): void {
    worker?.postMessage(request);
  }

  private answered(reply: CheckpointReply): void {
    this.stats.answered += 1;
    if ('log' in reply && reply.busy === 0 && reply.checkpointed === reply.log) this.stats.complete += 1;
    if ('log' in reply && !this.stopped && this.db.open) {
      if (this.walFrames() > reply.checkpointed) {
        this.stats.tails += 1;
        this.checkpointHere();
      }
    }
    if (this.stats.answered >= this.stats.requested) this.release();
  }

  /** The worker died or exited: the connection goes back to SQLite's own autocheckpoint. */
  private lost(worker: Worker): void {
    if (this.worker !== worker) return;
    this.worker = null;
    if (!this.stopped && this.db.open) this.db.pragma(`wal_autocheckpoint = ${this.frames}`);
    this.release();
  }

  private release(): void {
    const waiting = this.idle;
    this.idle = [];
    for (const resolve of waiting) resolve();
  }

  private walFrames(): number {
    return readSync(this.shm, this.bytes, 0, 4, MX_FRAME_OFFSET) === 4 ? (this.word[0] as number) : 0;
  }
}
