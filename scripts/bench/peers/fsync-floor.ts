// The disk's floor for one durable commit: a 4 KiB overwrite and fdatasync of a file in the ledger's directory.
import { closeSync, fdatasyncSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export interface FsyncFloor {
  /** One overwrite + fdatasync; its duration in milliseconds. */
  sample(): number;
  close(): void;
}

export function fsyncFloor(dir: string): FsyncFloor {
  const path = join(dir, 'fsync-floor.bin');
  const page = Buffer.alloc(4096, 0x5a);
  const fd = openSync(path, 'w+');
  // Allocated and durable first, so each sample is an overwrite (what a WAL commit is), not an extension.
  writeSync(fd, page, 0, page.length, 0);
  fdatasyncSync(fd);
  let round = 0;
  return {
    sample() {
      round += 1;
      page.writeUInt32LE(round, 0);
      const start = process.hrtime.bigint();
      writeSync(fd, page, 0, page.length, 0);
      fdatasyncSync(fd);
      return Number(process.hrtime.bigint() - start) / 1e6;
    },
    close() {
      closeSync(fd);
      rmSync(path, { force: true });
    },
  };
}
