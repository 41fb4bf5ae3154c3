import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { type Anchor, exportLines, Ledger, verifyLedger } from '../../../kernel/ledger/index.js';
import { CpError } from '../../../kernel/errors.js';
import { appendN, tempDir } from './helpers.js';

const coded = (code: string) => (e: unknown) => e instanceof CpError && e.code === code && e.message.includes('ledger');

/** A reader needs no file beside the ledger: it verifies, queries and exports what is there, leaving nothing behind. */
function assertReadable(path: string, head: Anchor): void {
  // Closed before the test's hooks run: a mount with a file open cannot be unmounted.
  const reader = Ledger.open(path, { readonly: true });
  try {
    assert.deepEqual(verifyLedger(reader, { anchor: head }), { ok: true, entries: head.seq, head });
    assert.equal(reader.query({ order: 'oldest' }).length, head.seq);
    assert.equal([...exportLines(reader)].length, head.seq);
  } finally {
    reader.close();
  }
  assert.deepEqual(
    readdirSync(dirname(path)).filter((name) => name.startsWith(basename(path))),
    [basename(path)],
  );
}

/**
 * A tmpfs of `size`, unmounted and removed after the test; undefined (the test skipped, saying why) when this
 * machine does not allow one.
 */
function tmpfs(t: { after: (fn: () => void) => void; skip: (why: string) => void }, size: string): string | undefined {
  const dir = mkdtempSync(join(tmpdir(), 'cp-ledger-mnt-'));
  const mount = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { encoding: 'utf8' });
  const mounted = mount.status === 0;
  // One hook, in this order: the mount must be gone before its directory is removed.
  t.after(() => {
    if (mounted) spawnSync('umount', [dir]);
    rmSync(dir, { recursive: true, force: true });
  });
  if (!mounted)
    t.skip(`cannot mount a tmpfs here (${`${mount.stderr || mount.error?.message || 'mount failed'}`.trim()})`);
  return mounted ? dir : undefined;
}

test('a ledger on a read-only filesystem is refused to writers with ERR_FS_READONLY, and still read and verified', (t) => {
  const mnt = tmpfs(t, '1m');
  if (mnt === undefined) return;
  const path = join(mnt, 'ledger.sqlite');
  const ledger = Ledger.open(path, { create: true });
  appendN(ledger, 3);
  const head = ledger.head();
  ledger.close();
  assert.equal(spawnSync('mount', ['-o', 'remount,ro', mnt]).status, 0);
  assert.throws(() => Ledger.open(path), coded('ERR_FS_READONLY'));
  assertReadable(path, head);
});

test('creating a ledger on a full disk is ERR_DISK_FULL, not an open failure blamed on the driver', (t) => {
  const mnt = tmpfs(t, '256k');
  if (mnt === undefined) return;
  const stat = statfsSync(mnt);
  writeFileSync(join(mnt, 'filler'), Buffer.alloc(Math.max(0, stat.bavail * stat.bsize - 4096)));
  assert.throws(() => Ledger.open(join(mnt, 'ledger.sqlite'), { create: true }), coded('ERR_DISK_FULL'));
});

test('a writer asking for a WAL reservation on a disk too small for it opens without it, and appends', (t) => {
  const mnt = tmpfs(t, '1m');
  if (mnt === undefined) return;
  const path = join(mnt, 'ledger.sqlite');
  // The reservation (about 2.5 MiB) cannot fit on 1 MiB: SQLite's spill hits the full disk, and the open goes on.
  const ledger = Ledger.open(path, { create: true, reserveWal: true });
  try {
    appendN(ledger, 3);
    assert.equal(verifyLedger(ledger).ok, true);
    assert.equal(ledger.query({ order: 'oldest' }).length, 3);
  } finally {
    ledger.close();
  }
});

/**
 * Makes `dir` unwritable to this process and returns how to undo it: a mode without write for a user, and for
 * root (whom modes do not stop) the immutable attribute, which refuses writes to root too (EPERM). A string says
 * why neither is possible here.
 */
function lockDirectory(dir: string): (() => void) | string {
  if (process.getuid?.() !== 0) {
    chmodSync(dir, 0o555);
    return () => chmodSync(dir, 0o755);
  }
  const locked = spawnSync('chattr', ['+i', dir], { encoding: 'utf8' });
  if (locked.status !== 0)
    return `root may write any directory, and chattr +i failed (${locked.stderr || locked.error?.message})`;
  return () => {
    spawnSync('chattr', ['-i', dir]);
  };
}

test('a ledger whose directory the user may not write is ERR_PERMISSION to writers, and still read and verified', (t) => {
  const dir = join(tempDir(t), 'locked');
  const path = join(dir, 'ledger.sqlite');
  const ledger = Ledger.open(path, { create: true });
  appendN(ledger, 3);
  const head = ledger.head();
  ledger.close();
  const unlock = lockDirectory(dir);
  if (typeof unlock === 'string') {
    t.skip(unlock);
    return;
  }
  try {
    assert.throws(() => Ledger.open(path), coded('ERR_PERMISSION'));
    assertReadable(path, head);
  } finally {
    // Before the temp directory is removed (an after hook would run too late).
    unlock();
  }
});
