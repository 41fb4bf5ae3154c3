import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { Budgeter } from '../../budgeter/index.js';
import { Ledger, verifyLedger } from '#kernel/ledger/index.js';
import { tempDir, testConfig } from './helpers.js';

const WORKER = fileURLToPath(new URL('./fixtures/worker.js', import.meta.url));
const WORKERS = 4;
const CALLS = 25;
const SESSION_LIMIT = 3000;
const COST_LIMIT = 0.012;

interface Line {
  request_id: string;
  refused?: string;
  released?: boolean;
  replayed?: boolean;
  settled_tokens?: number;
  cost?: number;
}

function runWorker(args: object): Promise<Line[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [WORKER, JSON.stringify(args)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`worker exited ${code}: ${err}`));
      else
        resolve(
          out
            .trim()
            .split('\n')
            .map((line) => JSON.parse(line) as Line),
        );
    });
  });
}

test(`${WORKERS} processes spending against one budget never settle more than it allows; every refusal is BUDGET_EXHAUSTED`, async (t) => {
  const dir = tempDir(t);
  const dbPath = join(dir, 'budget.sqlite');
  const ledgerPath = join(dir, 'ledger.sqlite');
  const config = testConfig({ limits: { session: { default: { max_tokens: SESSION_LIMIT, max_cost: COST_LIMIT } } } });
  // Create both files up front so the workers race on spending, not on schema creation.
  Budgeter.open({ dbPath, config }).close();
  Ledger.open(ledgerPath, { create: true }).db.close();

  const results = await Promise.all(
    Array.from({ length: WORKERS }, (_, worker) =>
      runWorker({ dbPath, ledgerPath, config, worker, calls: CALLS, sessionId: 'S-shared' }),
    ),
  );
  const sharedLines = results.flat().filter((l) => l.request_id === 'SHARED');
  const lines = results.flat().filter((l) => l.request_id !== 'SHARED');
  assert.equal(lines.length, WORKERS * CALLS);
  assert.equal(sharedLines.length, WORKERS, 'the shared request was granted to every worker');
  assert.equal(
    sharedLines.filter((l) => !l.replayed).length,
    1,
    'and settled by exactly one of them; the rest replayed it',
  );

  const settledByWorkers =
    lines.reduce((sum, l) => sum + (l.settled_tokens ?? 0), 0) + (sharedLines[0]?.settled_tokens ?? 0);
  const costByWorkers = [...lines, ...sharedLines.slice(0, 1)].reduce((sum, l) => sum + (l.cost ?? 0), 0);
  const refusals = lines.filter((l) => l.refused !== undefined);
  assert.ok(refusals.length > 0, 'the budget was binding (some calls refused)');
  assert.ok(
    lines.some((l) => l.settled_tokens !== undefined),
    'some calls were allowed',
  );
  assert.deepEqual([...new Set(refusals.map((l) => l.refused))], ['BUDGET_EXHAUSTED']);
  assert.ok(settledByWorkers <= SESSION_LIMIT, `settled ${settledByWorkers} tokens > limit ${SESSION_LIMIT}`);
  assert.ok(costByWorkers <= COST_LIMIT + 1e-12, `settled cost ${costByWorkers} > limit ${COST_LIMIT}`);

  // The shared state agrees with what the workers saw, and no reservation is left behind.
  const db = new Database(dbPath, { readonly: true });
  t.after(() => db.close());
  const fromRows = db
    .prepare("SELECT COALESCE(SUM(charged_tokens), 0) FROM reservations WHERE state = 'settled'")
    .pluck()
    .get();
  assert.equal(fromRows, settledByWorkers);
  const budgeter = Budgeter.open({ dbPath, config, readonly: true });
  t.after(() => budgeter.close());
  const [session] = budgeter.status({ session_id: 'S-shared' }).scopes;
  assert.equal(session?.settled_tokens, settledByWorkers);
  assert.equal(session?.reserved_tokens, 0);
  assert.equal(session?.requests, lines.filter((l) => l.settled_tokens !== undefined).length + 1);
  assert.ok(Math.abs((session?.settled_cost ?? 0) - costByWorkers) < 1e-9);

  // The ledger tells the same story: one record per state change, a single unforked chain.
  const ledger = Ledger.open(ledgerPath, { readonly: true });
  t.after(() => ledger.db.close());
  const settledRecords = ledger.query({ event_type: 'BUDGET_SETTLED', limit: 10_000 });
  assert.equal(
    settledRecords.reduce((sum, e) => sum + (e.metadata.charged_tokens as number), 0),
    settledByWorkers,
  );
  assert.equal(ledger.query({ event_type: 'BUDGET_EXCEEDED', limit: 10_000 }).length, refusals.length);
  const rowCount = (state: string) =>
    db.prepare('SELECT COUNT(*) FROM reservations WHERE state = ?').pluck().get(state);
  assert.equal(
    ledger.query({ event_type: 'BUDGET_ALLOCATED', limit: 10_000 }).length,
    db.prepare('SELECT COUNT(*) FROM reservations').pluck().get(),
  );
  assert.equal(settledRecords.length, rowCount('settled'));
  assert.equal(ledger.query({ event_type: 'BUDGET_RELEASED', limit: 10_000 }).length, rowCount('released'));
  assert.deepEqual(
    ledger.query({ submission_id: 'SHARED', order: 'oldest' }).map((e) => e.event_type),
    ['BUDGET_ALLOCATED', 'BUDGET_SETTLED'],
  );
  assert.equal(verifyLedger(ledger).ok, true);
});
