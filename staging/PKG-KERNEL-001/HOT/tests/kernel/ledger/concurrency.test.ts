import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Ledger, verifyLedger, GENESIS_HASH } from '../../../kernel/ledger/index.js';
import { tempDir } from './helpers.js';

const WORKER = fileURLToPath(new URL('./fixtures/append-worker.js', import.meta.url));
const WORKERS = 4;
const APPENDS = 60;
// Every 10th append is a batch of two, so each worker writes APPENDS + APPENDS/10 entries.
const PER_WORKER = APPENDS + APPENDS / 10;

function runWorker(path: string, tag: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [WORKER, path, tag, String(APPENDS)], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`worker ${tag} exited ${code}: ${stderr}`))));
  });
}

test(`${WORKERS} processes appending to one new ledger at once never fork the chain`, async (t) => {
  // The ledger does not exist yet: the workers also race to create it.
  const path = join(tempDir(t), 'shared', 'ledger.sqlite');
  const tags = Array.from({ length: WORKERS }, (_, i) => `W${i}`);
  const done = Promise.all(tags.map((tag) => runWorker(path, tag)));
  let settled = false;
  done.then(
    () => {
      settled = true;
    },
    () => {
      settled = true;
    },
  );
  while (!settled && !tags.every((tag) => existsSync(`${path}.ready-${tag}`))) await delay(20);
  writeFileSync(`${path}.go`, '');
  await done;

  const ledger = Ledger.open(path);
  t.after(() => {
    ledger.close();
  });
  const result = verifyLedger(ledger);
  assert.equal(result.ok, true, JSON.stringify(result.first_bad));
  assert.equal(result.entries, WORKERS * PER_WORKER);

  const entries = ledger.query({ order: 'oldest' });
  assert.equal(entries[0]?.previous_hash, GENESIS_HASH);
  for (const [i, entry] of entries.slice(1).entries()) assert.equal(entry.previous_hash, entries[i]?.entry_hash);
  assert.equal(new Set(entries.map((e) => e.id)).size, entries.length, 'ids are unique');
  for (const tag of tags) {
    const mine = entries.filter((e) => e.submission_id === tag).map((e) => e.reason);
    const expected = Array.from({ length: APPENDS }, (_, i) =>
      i % 10 === 9 ? [`${tag}-${i}.0`, `${tag}-${i}.1`] : [`${tag}-${i}`],
    ).flat();
    assert.deepEqual(mine, expected, `every entry of ${tag} is present, in its own order`);
  }
  const workersSeen = new Set(entries.slice(0, entries.length / 2).map((e) => e.submission_id));
  assert.ok(workersSeen.size > 1, 'the appends interleaved (the workers really ran concurrently)');
});
