import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Budgeter } from '#budgeter/index.js';
import { Ledger, verifyLedger } from '#kernel/ledger/index.js';

const WORKER = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'route-worker.js');

function runWorker(dir: string, worker: number, n: number): Promise<Record<string, number>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [WORKER, dir, String(worker), String(n)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.on('close', (code) =>
      code === 0
        ? resolve(JSON.parse(out) as Record<string, number>)
        : reject(new Error(`worker ${worker} exited ${code}: ${err}`)),
    );
  });
}

test('4 processes routing against one budget never settle more than it allows; every refusal is a recorded BUDGET_EXHAUSTED', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-router-race-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const perWorker = 10;
  Ledger.open(join(dir, 'ledger.sqlite'), { create: true }).close();
  const results = await Promise.all([0, 1, 2, 3].map((w) => runWorker(dir, w, perWorker)));
  const total = (key: string): number => results.reduce((sum, r) => sum + (r[key] ?? 0), 0);
  assert.equal(total('success') + total('rejected:BUDGET_EXHAUSTED'), 4 * perWorker, JSON.stringify(results));
  assert.ok(total('success') > 0 && total('rejected:BUDGET_EXHAUSTED') > 0, JSON.stringify(results));

  const ledger = Ledger.open(join(dir, 'ledger.sqlite'));
  t.after(() => ledger.close());
  assert.equal(verifyLedger(ledger).ok, true, 'one unbroken chain across all processes');
  const rejected = ledger.query({ event_type: 'PROMPT_REJECTED' });
  assert.equal(rejected.length, total('rejected:BUDGET_EXHAUSTED'));
  assert.ok(rejected.every((e) => e.metadata.error_code === 'BUDGET_EXHAUSTED'));
  assert.equal(ledger.query({ event_type: 'EXCHANGE' }).length, total('success'));

  const shipped = JSON.parse(
    readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'config', 'budget.json'), 'utf8'),
  ) as object;
  const budget = Budgeter.open({
    dbPath: join(dir, 'budget.sqlite'),
    config: { ...shipped, limits: { session: { default: { max_tokens: 3000 } } } },
  });
  t.after(() => budget.close());
  const session = budget.status({ session_id: 'SES-SHARED' }).scopes.find((s) => s.scope === 'session');
  assert.ok(session, 'the shared session has a budget row');
  assert.ok(
    session.settled_tokens + session.reserved_tokens <= 3000,
    `settled ${session.settled_tokens} + reserved ${session.reserved_tokens} exceeds 3000`,
  );
  assert.equal(session.reserved_tokens, 0, 'nothing left reserved');
  assert.equal(
    session.settled_tokens,
    total('success') * 150,
    'each success settled at its real usage (10 in + 140 out)',
  );
});
