// Unpack CP_BOOTSTRAP into a directory through the kernel's hostile-archive reader: every member is checked
// against bootstrap.json (archives and genesis files by digest and size) before anything is written.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { BOOTSTRAP_MEMBER, readBootstrapArchive } from '../../staging/PKG-KERNEL-001/HOT/kernel/archive/index.js';

/** Returns `into`, which must not hold any of CP_BOOTSTRAP's files yet. */
export async function unpackBootstrap(file: string, into: string): Promise<string> {
  const read = await readBootstrapArchive(file);
  const made = new Set<string>();
  const write = (path: string, data: Buffer, mode = 0o644): void => {
    const target = join(into, path);
    if (!made.has(dirname(target))) {
      mkdirSync(dirname(target), { recursive: true });
      made.add(dirname(target));
    }
    writeFileSync(target, data, { flag: 'wx', mode });
  };
  write(BOOTSTRAP_MEMBER, read.planBytes);
  for (const [path, data] of read.extras) write(path, data, path.endsWith('.js') ? 0o755 : 0o644);
  for (const [path, data] of read.packages) write(path, data);
  return into;
}
