import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { acquireRootLock } from '../../../kernel/root/lock.js';
import { tempDir, newRoot } from '../installer/helpers.js';

const fixture = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'hold-lock.js');

function holdInChild(root: string, log: string, name: string, ms: number): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [fixture, root, log, name, String(ms)], { stdio: 'ignore' });
    child.on('exit', (code) => resolve(code ?? 1));
  });
}

test('two processes never hold the root lock at the same time', async (t) => {
  const dir = tempDir(t);
  const root = newRoot(dir);
  const log = join(dir, 'lock.log');
  const codes = await Promise.all([holdInChild(root, log, 'A', 400), holdInChild(root, log, 'B', 400)]);
  assert.deepEqual(codes, [0, 0]);
  const events = readFileSync(log, 'utf8')
    .trim()
    .split('\n')
    .map((line) => line.split(' '));
  assert.equal(events.length, 4);
  // Whoever started first must have ended before the other started.
  assert.equal(events[0]![0], events[1]![0], `interleaved: ${JSON.stringify(events)}`);
  assert.equal(events[1]![1], 'end');
  assert.ok(Number(events[2]![2]) >= Number(events[1]![2]));
});

test('a lock held by another process times out with ERR_ROOT_LOCKED; a killed holder leaves no stale lock', async (t) => {
  const dir = tempDir(t);
  const root = newRoot(dir);
  const child = spawn(process.execPath, [fixture, root, join(dir, 'log'), 'A', '60000'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
  assert.throws(
    () => acquireRootLock(root, { timeoutMs: 100 }),
    (e: { code?: string }) => e.code === 'ERR_ROOT_LOCKED',
  );
  const exited = new Promise((resolve) => child.on('exit', resolve));
  child.kill('SIGKILL');
  await exited;
  const lock = acquireRootLock(root, { timeoutMs: 2000 });
  lock.release();
  lock.release();
});

test('a directory that is not a root is refused', (t) => {
  const dir = tempDir(t);
  assert.throws(
    () => acquireRootLock(dir),
    (e: { code?: string }) => e.code === 'ERR_ROOT_NOT_A_ROOT',
  );
});
