import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { budgetRecordsOf } from '#budgeter/records.js';
import { Ledger, verifyLedger } from '#kernel/ledger/index.js';

const WORKER = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'multibyte-worker.js');
const PROCESSES = 8;
const CALLS = 12;
const TOKEN_LIMIT = 4000;
const COST_LIMIT = 0.01;
const LIMITS = {
  agent: { by_id: { 'AGENT-TOK': { max_tokens: TOKEN_LIMIT } } },
  session: { by_id: { 'SES-COST': { max_cost: COST_LIMIT } } },
};

function runWorker(dir: string, worker: number, startAt: number): Promise<Record<string, number>> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [WORKER, dir, String(worker), String(CALLS), JSON.stringify(LIMITS), String(startAt)],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
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

test(`${PROCESSES} processes routing CJK and emoji prompts with the most usage an honest provider can bill never settle past a token or cost limit`, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-router-multibyte-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  Ledger.open(join(dir, 'ledger.sqlite'), { create: true }).close();
  const startAt = Date.now() + 1500;
  const results = await Promise.all(Array.from({ length: PROCESSES }, (_, w) => runWorker(dir, w, startAt)));
  const total = (key: string): number => results.reduce((sum, r) => sum + (r[key] ?? 0), 0);
  const seen = JSON.stringify(results);
  assert.equal(total('success') + total('rejected:BUDGET_EXHAUSTED'), PROCESSES * CALLS, seen);
  assert.ok(total('success') > 0 && total('rejected:BUDGET_EXHAUSTED') > 0, `the limits were binding: ${seen}`);
  assert.ok(
    results.every((r) => Object.keys(r).every((k) => !k.startsWith('warning:'))),
    `no budget warnings: ${seen}`,
  );

  const db = new Database(join(dir, 'budget.sqlite'), { readonly: true });
  t.after(() => db.close());
  const pending = db.prepare("SELECT COUNT(*) FROM reservations WHERE state = 'reserved'").pluck().get();
  assert.equal(pending, 0, 'nothing left reserved');
  const settledIn = (scope: string) =>
    db
      .prepare(`SELECT SUM(charged_tokens) AS tokens, SUM(charged_cost) AS cost, COUNT(*) AS n, SUM(actual_tokens IS NULL) AS unknown
    FROM reservations WHERE state = 'settled' AND ${scope}`)
      .get() as { tokens: number; cost: number; n: number; unknown: number };
  const tok = settledIn("agent_id = 'AGENT-TOK'");
  const cost = settledIn("session_id = 'SES-COST'");
  const all = settledIn('1');
  assert.equal(all.n, total('success'));
  assert.equal(all.unknown, 0, 'every settlement had real usage');
  assert.ok(tok.tokens <= TOKEN_LIMIT, `settled ${tok.tokens} tokens > agent limit ${TOKEN_LIMIT}`);
  assert.ok(cost.cost <= COST_LIMIT * 1e9, `settled ${cost.cost / 1e9} > session cost limit ${COST_LIMIT}`);
  // The bound is tight enough to be useful: both limits are mostly spent, not reserved away.
  assert.ok(
    tok.tokens > TOKEN_LIMIT / 2 && cost.cost > (COST_LIMIT * 1e9) / 2,
    `settled ${tok.tokens} tokens, ${cost.cost} nano`,
  );

  const ledger = Ledger.open(join(dir, 'ledger.sqlite'));
  t.after(() => ledger.close());
  assert.equal(verifyLedger(ledger).ok, true);
  const records = budgetRecordsOf(ledger.query({ order: 'oldest' }), { event_type: 'BUDGET_SETTLED', limit: 10_000 });
  assert.equal(
    records.reduce((sum, e) => sum + (e.metadata.charged_tokens as number), 0),
    all.tokens,
  );
  const refusals = ledger
    .query({ event_type: 'BUDGET_EXCEEDED', limit: 10_000 })
    .filter((e) => e.decision === 'REFUSED');
  assert.ok(
    refusals.some((e) => e.metadata.agent_id === 'AGENT-TOK'),
    'the token limit refused calls',
  );
  assert.ok(
    refusals.some((e) => e.metadata.session_id === 'SES-COST'),
    'the cost limit refused calls',
  );
});
