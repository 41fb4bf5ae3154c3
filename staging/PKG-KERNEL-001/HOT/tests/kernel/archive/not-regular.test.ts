// The archive path must name a regular file. A FIFO named like an archive used to be opened blocking: the
// read waited for a writer forever (an install holding the root lock with it). Judged on the open
// descriptor, so a symlink to one is refused the same way.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { readBootstrapArchive, readPackageArchive } from '../../../kernel/archive/index.js';
import { installOne } from '../../../kernel/installer/install.js';
import { ledgerEntries, newRoot, session, snapshot } from '../installer/helpers.js';
import { manifestEntry, manifestFor, rawTar, scratch } from './tar-fixture.js';

/** Settles within 5 s or fails; a hung open on `fifo` is released by briefly opening it for writing. */
async function settles<T>(promise: Promise<T>, fifo: string): Promise<PromiseSettledResult<T>> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<'hung'>((resolve) => {
    timer = setTimeout(() => resolve('hung'), 5000);
  });
  const outcome = await Promise.race([Promise.allSettled([promise]).then(([r]) => r as PromiseSettledResult<T>), hung]);
  clearTimeout(timer);
  if (outcome === 'hung') {
    execFileSync('sh', ['-c', `exec 3>"$1"; exec 3>&-`, 'sh', fifo], { timeout: 5000 });
    assert.fail(`reading ${fifo} hung waiting for a writer`);
  }
  return outcome;
}

function assertNotRegular(outcome: PromiseSettledResult<unknown>, type: string): void {
  assert.equal(outcome.status, 'rejected');
  const error = (outcome as PromiseRejectedResult).reason as { code?: string; details?: Record<string, unknown> };
  assert.equal(error.code, 'ERR_ARCHIVE_NOT_FOUND', String(error));
  assert.equal(error.details?.type, type);
}

test('a FIFO, a symlink to one and a directory are refused as archives at once, package or bootstrap', async (t) => {
  const s = scratch(t);
  const fifo = join(s.dir, 'PKG-FIFO-001-1.0.0.tar.gz');
  execFileSync('mkfifo', [fifo]);
  const link = join(s.dir, 'link.tar.gz');
  symlinkSync(fifo, link);
  const directory = join(s.dir, 'dir.tar.gz');
  mkdirSync(directory);
  assertNotRegular(await settles(readPackageArchive(fifo), fifo), 'FIFO');
  assertNotRegular(await settles(readPackageArchive(link), fifo), 'FIFO');
  assertNotRegular(await settles(readBootstrapArchive(fifo), fifo), 'FIFO');
  assertNotRegular(await settles(readPackageArchive(directory), fifo), 'directory');
  // A regular file still reads, through a symlink too.
  const good = s.archive(
    rawTar([
      manifestEntry(manifestFor([{ path: 'HOT/kernel/a.js', data: 'a' }])),
      { name: 'HOT/kernel/a.js', data: 'a' },
    ]),
  );
  const goodLink = join(s.dir, 'good-link.tar.gz');
  symlinkSync(good, goodLink);
  assert.equal((await readPackageArchive(goodLink)).files.get('HOT/kernel/a.js')?.toString(), 'a');
});

test('installing from a FIFO is refused with a code, INSTALL_FAILED recorded, root unchanged', async (t) => {
  const s = scratch(t);
  const root = newRoot(s.dir);
  const session_ = await session(t, root);
  const fifo = join(s.dir, 'PKG-FIFO-001-1.0.0.tar.gz');
  execFileSync('mkfifo', [fifo]);
  const before = snapshot(root);
  const count = ledgerEntries(root).length;
  assertNotRegular(
    await settles(installOne(session_, { archivePath: fifo, mode: 'install', dev: true }), fifo),
    'FIFO',
  );
  assert.deepEqual(snapshot(root), before);
  const after = ledgerEntries(root);
  assert.equal(after.length, count + 1);
  assert.equal(after.at(-1)?.event_type, 'INSTALL_FAILED');
  assert.equal(after.at(-1)?.metadata.code, 'ERR_ARCHIVE_NOT_FOUND');
});
