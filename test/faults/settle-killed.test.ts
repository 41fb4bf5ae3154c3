// A route killed after its budget settlement committed and before the ledger took its BUDGET_SETTLED record: the
// moment is made exact by holding the root's own SQLite write locks in turn (the route waits on them, as it would
// on a slow disk), then the process is SIGKILLed. The settlement's record must not be lost: reconciliation
// delivers it from the budget database, once, and the chain still verifies.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { cleanupBuild, CPLANE, copyRoot, run } from './harness.js';

after(cleanupBuild);

/** One value read by a fresh connection (the route's commits are seen as soon as they are made). */
function read<T>(path: string, sql: string, ...params: unknown[]): T | undefined {
  if (!existsSync(path)) return undefined;
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return db
      .prepare(sql)
      .pluck()
      .get(...params) as T | undefined;
  } catch {
    // The table is laid out by the route's first transaction.
    return undefined;
  } finally {
    db.close();
  }
}

async function until<T>(what: string, probe: () => T | undefined, child: ChildProcess): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== null) return value;
    if (child.exitCode !== null) throw new Error(`the route exited (${child.exitCode}) before ${what}`);
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

test('a route SIGKILLed between its settlement and its ledger append: reconciliation delivers the BUDGET_SETTLED record once', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-settle-killed-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const root = copyRoot(join(dir, 'root'));
  const ledgerPath = join(root, 'HOT', 'ledger', 'ledger.sqlite');
  const budgetPath = join(root, 'HOT', 'registries', 'budget.sqlite');
  const settledCount = (requestId: string): number | undefined =>
    read<number>(
      ledgerPath,
      "SELECT count(*) FROM entries WHERE event_type = 'BUDGET_SETTLED' AND submission_id = ?",
      requestId,
    );
  const dispatches = (): number =>
    read<number>(ledgerPath, "SELECT count(*) FROM entries WHERE event_type = 'DISPATCH'") ?? 0;
  const before = dispatches();

  const ledgerLock = new Database(ledgerPath);
  let budgetLock: Database.Database | undefined;
  t.after(() => {
    if (ledgerLock.inTransaction) ledgerLock.exec('ROLLBACK');
    ledgerLock.close();
    if (budgetLock?.inTransaction) budgetLock.exec('ROLLBACK');
    budgetLock?.close();
  });
  ledgerLock.exec('BEGIN IMMEDIATE');
  const child = spawn(process.execPath, [CPLANE, 'route', '--root', root, '--prompt', 'settle, then die', '--dev'], {
    stdio: 'ignore',
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
  t.after(() => child.kill('SIGKILL'));

  // 1. The reservation commits; the route then waits for the ledger to append its allocation and DISPATCH.
  const requestId = await until(
    'the reservation',
    () => read<string>(budgetPath, "SELECT request_id FROM reservations WHERE state = 'reserved'"),
    child,
  );
  // 2. Hold the budget so the settlement waits, and let the DISPATCH through.
  budgetLock = new Database(budgetPath);
  budgetLock.exec('BEGIN IMMEDIATE');
  ledgerLock.exec('COMMIT');
  await until('the DISPATCH', () => (dispatches() > before ? true : undefined), child);
  // 3. Hold the ledger again, let the settlement commit, and kill the route while it waits to append its record.
  ledgerLock.exec('BEGIN IMMEDIATE');
  budgetLock.exec('COMMIT');
  await until(
    'the settlement',
    () =>
      read<string>(budgetPath, "SELECT state FROM reservations WHERE request_id = ? AND state = 'settled'", requestId),
    child,
  );
  child.kill('SIGKILL');
  assert.equal(await exited, 'SIGKILL');
  ledgerLock.exec('ROLLBACK');

  // Charged in the budget, absent from the chain: the record waits in the budget database.
  assert.equal(settledCount(requestId), 0);
  assert.equal(read<number>(budgetPath, 'SELECT count(*) FROM record_outbox WHERE request_id = ?', requestId), 1);
  const charged = read<number>(budgetPath, 'SELECT charged_tokens FROM reservations WHERE request_id = ?', requestId);

  const reconcile = run(['ledger', 'orphans', '--root', root, '--reconcile', '--timeout-ms', '0', '--json']);
  assert.equal(reconcile.status, 0, reconcile.stderr);
  const report = JSON.parse(reconcile.stdout) as { reconciled: { request_id: string; ledger_entry_ids: string[] }[] };
  assert.deepEqual(
    report.reconciled.filter((r) => r.request_id === requestId).map((r) => r.ledger_entry_ids.length),
    [1],
  );
  assert.equal(settledCount(requestId), 1);
  const metadata = JSON.parse(
    read<string>(
      ledgerPath,
      "SELECT metadata FROM entries WHERE event_type = 'BUDGET_SETTLED' AND submission_id = ?",
      requestId,
    ) as string,
  ) as { charged_tokens: number };
  assert.equal(metadata.charged_tokens, charged, 'the record the settlement made, with its charge');
  assert.equal(read<number>(budgetPath, 'SELECT count(*) FROM record_outbox'), 0);

  // A second pass delivers nothing again; the chain verifies.
  assert.equal(run(['ledger', 'orphans', '--root', root, '--reconcile', '--timeout-ms', '0']).status, 0);
  assert.equal(settledCount(requestId), 1);
  const verified = run(['ledger', 'verify', '--root', root]);
  assert.equal(verified.status, 0, verified.stdout + verified.stderr);
});
