import { closeSync, fdatasync, fstatSync, openSync, statSync } from 'node:fs';
import { envError } from '../env-errors.js';
import { CpError, show } from '../errors.js';

/**
 * A WAL database's commits made durable off the event loop. In WAL mode, synchronous=FULL differs from NORMAL only by
 * a sync of the WAL file after each commit (SQLite's pragma documentation); here a commit is made at NORMAL (its
 * frames written, no sync) and the WAL is then synced with fdatasync on libuv's thread pool, which carries every frame
 * written before it to the disk, so the event loop serves other calls while the disk works. The caller acknowledges
 * nothing until `sync` resolved. A checkpoint that copied the frames first synced the WAL and the database itself, so
 * frames the WAL no longer holds are durable either way.
 * A failed sync leaves the disk's state unknown (the frames are committed, their durability is not): every later
 * append is refused (`refuseAfterFailure`) before it commits, so nothing is acknowledged and nothing committed twice
 * by a caller that retries, until the process starts over.
 */
export class WalSync {
  private fd: number | null = null;
  private ino = -1;
  /** Descriptors of a WAL file since replaced (never, while the writer keeps its connection): closed with this. */
  private readonly retired: number[] = [];
  private failed: Error | null = null;

  constructor(private readonly databasePath: string) {}

  /** Throws the failure of an earlier sync: the disk's state is unknown, so nothing more is committed. */
  refuseAfterFailure(): void {
    if (this.failed !== null) throw this.failed;
  }

  /** Resolves once every frame written to the WAL before the call is on the disk. */
  sync(): Promise<void> {
    let fd: number;
    try {
      this.refuseAfterFailure();
      fd = this.current();
    } catch (error) {
      // A commit was made and cannot be shown durable: the same unknown state as a failed sync.
      this.failed ??= this.coded(error);
      return Promise.reject(this.failed);
    }
    return new Promise((resolve, reject) => {
      fdatasync(fd, (error) => {
        if (error === null) resolve();
        else {
          this.failed = this.coded(error);
          reject(this.failed);
        }
      });
    });
  }

  close(): void {
    for (const fd of [...this.retired, ...(this.fd === null ? [] : [this.fd])]) closeSync(fd);
    this.retired.length = 0;
    this.fd = null;
  }

  /** A descriptor of the WAL file that is there now (SQLite recreates it only after every connection closed). */
  private current(): number {
    const walPath = `${this.databasePath}-wal`;
    const ino = statSync(walPath).ino;
    if (this.fd !== null && ino === this.ino) return this.fd;
    if (this.fd !== null) this.retired.push(this.fd);
    this.fd = openSync(walPath, 'r');
    this.ino = fstatSync(this.fd).ino;
    return this.fd;
  }

  /** A fault of the machine either way (ERR_IO unless the errno says more): the caller refuses, never retries blind. */
  private coded(error: unknown): Error {
    const walPath = `${this.databasePath}-wal`;
    return (
      envError(error, walPath, 'syncing the ledger WAL') ??
      new CpError('ERR_IO', `syncing the ledger WAL ${show(walPath)} failed: ${(error as Error).message}`, {
        hint: "the disk did not confirm the ledger's last commit: check the disk, then restart cplane (it appends nothing more until then)",
        details: { path: walPath },
        cause: error,
      })
    );
  }
}
