// WAL checkpoints on a worker thread (wal-checkpointer.ts): the WAL is checkpointed and starts over as SQLite's
// autocheckpoint would have it, a killed writer loses nothing it committed, and a dead worker hands checkpoints
// back to the writer's connection.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, openSync, readSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ledger, verifyLedger } from '../../../kernel/ledger/index.js';
import { tempDir } from './helpers.js';

/** Checkpoints every 1,000 frames here (the server's are rarer, CHECKPOINT_FRAMES): the same mechanism, sooner. */
const FRAMES = 1000;

const pad = 'p'.repeat(1500);

/** Appends `n` entries one at a time, yielding between them as a server does between calls. */
async function appendYielding(ledger: Ledger, n: number, durable: boolean, from = 0): Promise<void> {
  for (let i = from; i < from + n; i += 1) {
    ledger.appendBatch(
      [{ event_type: 'TEST', submission_id: `S${i}`, decision: 'OK', reason: 'r', metadata: { i, pad } }],
      {
        durable,
      },
    );
    await new Promise(setImmediate);
  }
}

/** The frames in the WAL: the wal-index header's mxFrame (SQLite's walformat, native byte order). */
function walFrames(path: string): number {
  const fd = openSync(`${path}-shm`, 'r');
  try {
    const word = new Uint32Array(1);
    readSync(fd, new Uint8Array(word.buffer), 0, 4, 16);
    return word[0] as number;
  } finally {
    closeSync(fd);
  }
}

/** The entries the database file holds on its own, read from a copy without the -wal beside it. */
function entriesWithoutWal(dir: string, path: string): number {
  const copy = join(dir, `copy-${Math.random().toString(36).slice(2)}.sqlite`);
  copyFileSync(path, copy);
  const reopened = Ledger.open(copy);
  try {
    return reopened.head().seq;
  } finally {
    reopened.close();
  }
}

const LEVELS = [
  { name: 'durable appends (full)', synchronous: 'FULL', durable: true },
  { name: 'lazy appends on a FULL connection (exchange, relaxed)', synchronous: 'FULL', durable: false },
  { name: 'a NORMAL connection', synchronous: 'NORMAL', durable: false },
] as const;

for (const level of LEVELS) {
  test(`background checkpoints, ${level.name}: the WAL is checkpointed into the file and starts over`, async (t) => {
    const dir = tempDir(t);
    const path = join(dir, 'ledger.sqlite');
    const ledger = Ledger.open(path, {
      create: true,
      synchronous: level.synchronous,
      walCheckpoints: 'background',
      checkpointFrames: FRAMES,
    });
    t.after(() => ledger.close());
    const checkpointer = ledger.walCheckpointer;
    assert.ok(checkpointer !== null);
    assert.equal(ledger.db.pragma('wal_autocheckpoint', { simple: true }), 0, 'SQLite checkpoints nothing inline');
    // Appends until three checkpoints were asked for, waiting for the worker's answer after each ask, so how fast
    // the worker runs changes when the appends go on, never what the files hold.
    let count = 0;
    while (checkpointer.stats.requested < 3) {
      await appendYielding(ledger, 1, level.durable, count);
      count += 1;
      if (checkpointer.stats.answered < checkpointer.stats.requested) await checkpointer.settled();
      assert.ok(count < 20_000, 'the appends cross the threshold');
    }
    assert.equal(checkpointer.stats.inline, 0, 'no checkpoint ran inside a commit');
    assert.equal(checkpointer.stats.complete, 3, JSON.stringify(checkpointer.stats));
    // The worker's checkpoint and the writer's tail after it copied every commit into the database file itself,
    // and the next commit starts the WAL over.
    assert.equal(entriesWithoutWal(dir, path), count);
    await appendYielding(ledger, 1, level.durable, count);
    count += 1;
    assert.ok(walFrames(path) < 50, `WAL restarted: ${walFrames(path)} frames`);
    // Closing stops the worker and checkpoints the rest: the file holds every entry without its WAL.
    ledger.close();
    assert.equal(entriesWithoutWal(dir, path), count);
    const reopened = Ledger.open(path);
    t.after(() => reopened.close());
    assert.equal(verifyLedger(reopened).entries, count);
  });
}

test('a dead checkpoint worker hands checkpoints back to the connection: the WAL stays bounded', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'ledger.sqlite');
  const ledger = Ledger.open(path, {
    create: true,
    synchronous: 'FULL',
    walCheckpoints: 'background',
    checkpointFrames: FRAMES,
  });
  t.after(() => ledger.close());
  const worker = ledger.walCheckpointer?.worker;
  assert.ok(worker);
  await appendYielding(ledger, 100, false);
  const exited = once(worker, 'exit');
  await worker.terminate();
  await exited;
  assert.equal(ledger.walCheckpointer?.worker, null);
  assert.equal(ledger.db.pragma('wal_autocheckpoint', { simple: true }), FRAMES);
  let most = 0;
  for (let i = 0; i < 1500; i += 1) {
    await appendYielding(ledger, 1, false, 100 + i);
    most = Math.max(most, walFrames(path));
  }
  // SQLite's own checkpoint, after the commit that crosses FRAMES, starts the WAL over.
  assert.ok(most < FRAMES + 50, `at most ${most} frames in the WAL`);
  ledger.close();
  assert.equal(entriesWithoutWal(dir, path), 1600);
});

const WRITER = fileURLToPath(new URL('./fixtures/checkpoint-writer.js', import.meta.url));

for (const durable of [false, true]) {
  test(`a writer SIGKILLed while its worker checkpoints loses no committed append (durable: ${durable})`, async (t) => {
    const dir = tempDir(t);
    const path = join(dir, 'ledger.sqlite');
    const child = spawn(process.execPath, [WRITER, path, durable ? '1' : '0', String(FRAMES)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const acked: string[] = [];
    let buffered = '';
    const exited = once(child, 'exit');
    // Killed once it has crossed several checkpoint thresholds (each append writes at least two frames).
    const target = 4 * FRAMES;
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) acked.push(line.split(' ')[0] as string);
      if (acked.length >= target) child.kill('SIGKILL');
    });
    const [, signal] = await exited;
    assert.equal(signal, 'SIGKILL');
    const ledger = Ledger.open(path);
    t.after(() => ledger.close());
    const report = verifyLedger(ledger);
    assert.equal(report.ok, true);
    assert.ok(report.entries >= acked.length, `${report.entries} entries, ${acked.length} acknowledged`);
    for (const id of [acked[0], acked[Math.floor(acked.length / 2)], acked[acked.length - 1]]) {
      assert.ok(ledger.get(id as string), `acknowledged entry ${id} is there`);
    }
  });
}
