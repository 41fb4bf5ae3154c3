import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DispatchRuntime } from '../../dispatch/runtime.js';
import { dispatchStorePath } from '../../dispatch/snapshot-store.js';
import { Ledger, ledgerPathForRoot, verifyLedger } from '#kernel/ledger/index.js';
import { SAMPLE_TASKS, steppingClock, tempDir, writeTasks } from './helpers.js';

const RUNTIME_URL = pathToFileURL(
  join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'dispatch', 'runtime.js'),
).href;

/** One child process ingesting `count` blocked outcomes into the same run. */
function ingester(root: string, count: number): Promise<number> {
  const script = `
    const { DispatchRuntime } = await import(${JSON.stringify(RUNTIME_URL)});
    const runtime = new DispatchRuntime({ root: ${JSON.stringify(root)} });
    for (let i = 0; i < ${count}; i += 1) runtime.ingestOutput({ runId: 'shared', taskId: '3', output: { role: 'implementer', outcome: 'blocked' } });
    runtime.close();`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    child.on('error', reject);
    child.on('exit', (code) => resolve(code ?? 1));
  });
}

test('two processes ingesting into one run serialise: no lost stall increments, one unforked ledger chain', async (t) => {
  const root = tempDir(t);
  const tasksPath = writeTasks(join(root, 'spec', 'tasks.md'), SAMPLE_TASKS);
  const runtime = new DispatchRuntime({ root });
  t.after(() => runtime.close());
  runtime.initRun({ runId: 'shared', tasksPath });
  const codes = await Promise.all([ingester(root, 8), ingester(root, 8)]);
  assert.deepEqual(codes, [0, 0]);
  const status = runtime.status({ runId: 'shared' });
  assert.equal(status.snapshot_revision, 17);
  assert.equal(status.task_ledgers[0]?.stalled.consecutive_non_progress, 16);
  const ledger = Ledger.open(ledgerPathForRoot(root), { readonly: true });
  t.after(() => ledger.close());
  assert.equal(verifyLedger(ledger).ok, true);
  assert.equal(ledger.query({ event_type: 'DISPATCH_OUTPUT_INGESTED' }).length, 16);
});

test('an unusable kernel ledger refuses init before any dispatch state is written', (t) => {
  const root = tempDir(t);
  const tasksPath = writeTasks(join(root, 'spec', 'tasks.md'), SAMPLE_TASKS);
  mkdirSync(dirname(ledgerPathForRoot(root)), { recursive: true });
  writeFileSync(ledgerPathForRoot(root), 'this is not a ledger database, only some text bytes.');
  const runtime = new DispatchRuntime({ root });
  t.after(() => runtime.close());
  assert.throws(() => runtime.initRun({ runId: 'r', tasksPath }), { code: 'ERR_LEDGER_NOT_A_LEDGER' });
  assert.equal(existsSync(dispatchStorePath(root)), false);
});

test('a telemetry append failure after the state was saved is reported with the committed revision', (t) => {
  const root = tempDir(t);
  const tasksPath = writeTasks(join(root, 'spec', 'tasks.md'), SAMPLE_TASKS);
  const ledger = Ledger.open(join(root, 'other-ledger.sqlite'), { create: true });
  ledger.close();
  const runtime = new DispatchRuntime({ root, ledger, clock: steppingClock() });
  t.after(() => runtime.close());
  assert.throws(
    () => runtime.initRun({ runId: 'r', tasksPath }),
    (error: { code: string; details: Record<string, unknown> }) => {
      assert.equal(error.code, 'ERR_DISPATCH_TELEMETRY_FAILED');
      assert.equal(error.details.snapshot_revision, 1);
      return true;
    },
  );
  assert.equal(runtime.status({ runId: 'r' }).snapshot_revision, 1, 'the state the error names is really there');
});
