// The three durability levels through a real ledger and budget file: the durable commits (fsyncs) each call costs,
// counted by the stores and, where strace is installed, by the kernel's own count of fsync calls; and a child
// SIGKILLed mid-load at each level loses nothing it acknowledged, its chain verifies, its budget holds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { Budgeter } from '#budgeter/index.js';
import { reconcileStaleReservations } from '#budgeter/reconcile.js';
import { chainBudgetRecords } from '#budgeter/records.js';
import { CpError } from '#kernel/errors.js';
import { Ledger, verifyLedger } from '#kernel/ledger/index.js';
import { loadRouterConfig, parseRouterConfig } from '../../router/config.js';
import { DURABILITY_LEVELS, type Durability, parseDurability } from '../../router/durability.js';
import { DURABILITY_WORKER, type Load, runLoad, SESSION_LIMIT, TOKENS_PER_CALL } from './fixtures/durability-load.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const HOT = join(HERE, '..', '..');
const CALLS = 10;
const PER_CALL: Record<Durability, number> = { full: 2, exchange: 1, relaxed: 0 };

const hasStrace = spawnSync('strace', ['-V']).status === 0;

function workDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'cp-durability-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The fsync and fdatasync calls the trace shows between the worker's two markers of a run. */
function tracedSyncs(trace: string, name: string): number {
  const lines = trace.split('\n');
  const begin = lines.findIndex((l) => l.includes(`mark-${name}-begin`));
  const end = lines.findIndex((l) => l.includes(`mark-${name}-end`));
  assert.ok(begin >= 0 && end > begin, `markers of ${name} in the trace`);
  return lines.slice(begin, end).filter((l) => /\b(fsync|fdatasync)\(/.test(l)).length;
}

for (const level of DURABILITY_LEVELS) {
  test(`${level}: ${PER_CALL[level]} durable commits per call through route() and the gateway's admit/conclude, counted`, (t) => {
    const dir = workDir(t);
    const args = [DURABILITY_WORKER, dir, level, 'count', String(CALLS)];
    const trace = join(dir, 'trace.txt');
    const r = hasStrace
      ? spawnSync(
          'strace',
          ['-f', '-o', trace, '-e', 'trace=fsync,fdatasync,access,faccessat,faccessat2', process.execPath, ...args],
          { encoding: 'utf8' },
        )
      : spawnSync(process.execPath, args, { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const counted = JSON.parse(r.stdout) as { route: number; governed: number };
    assert.deepEqual(counted, { route: PER_CALL[level] * CALLS, governed: PER_CALL[level] * CALLS });
    if (!hasStrace) {
      t.diagnostic('strace is not installed: the fsyncs themselves were not traced');
      return;
    }
    const text = readFileSync(trace, 'utf8');
    assert.equal(tracedSyncs(text, 'route'), counted.route, 'each durable commit is one fsync, and nothing else syncs');
    assert.equal(tracedSyncs(text, 'governed'), counted.governed);
  });
}

/** The worker under load at `level`; SIGKILLed once `killAfter` answers were acknowledged (never, when null). */
function load(dir: string, level: Durability, killAfter: number | null, mode = 'load'): Promise<Load> {
  return runLoad([dir, level, mode, '10000'], killAfter);
}

/** Rows a database file holds on its own: a copy read without the -wal the killed process left beside it. */
function rowsWithoutWal(dir: string, file: string, table: string): number {
  const copy = join(dir, `copy-of-${file}`);
  copyFileSync(join(dir, file), copy);
  const db = new Database(copy, { readonly: true });
  try {
    return db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number;
  } finally {
    db.close();
  }
}

/**
 * After `killed`: every acknowledged EXCHANGE is in a chain that verifies; then a restarted worker calls until the
 * budget refuses, and the budget file charges what the chain records, within `limit` tokens.
 */
async function nothingLost(dir: string, level: Durability, killed: Load, mode: string, limit: number): Promise<void> {
  assert.equal(killed.signal, 'SIGKILL');
  assert.equal(killed.ended, null, 'killed mid-load, not after it');
  const ledgerPath = join(dir, 'ledger.sqlite');
  {
    const ledger = Ledger.open(ledgerPath);
    try {
      for (const id of killed.acked) assert.equal(ledger.get(id)?.event_type, 'EXCHANGE', `acknowledged ${id}`);
      assert.equal(verifyLedger(ledger).ok, true);
    } finally {
      ledger.close();
    }
  }
  // Restarted: calls go on until the budget refuses one, on what the killed process left.
  const resumed = await load(dir, level, null, mode);
  assert.equal(resumed.ended, 'BUDGET_EXHAUSTED');
  const ledger = Ledger.open(ledgerPath);
  const budget = Budgeter.open({
    dbPath: join(dir, 'budget.sqlite'),
    config: JSON.parse(readFileSync(join(HOT, 'config', 'budget.json'), 'utf8')) as unknown,
  });
  try {
    // The calls the kill cut short are charged at their bound, as a router's start would.
    reconcileStaleReservations(budget, ledger, { timeoutMs: 0 });
    const verified = verifyLedger(ledger);
    assert.equal(verified.ok, true);
    for (const id of [...killed.acked, ...resumed.acked]) assert.ok(ledger.get(id), `acknowledged ${id}`);
    // Settlements as the chain holds them: folded into their EXCHANGEs, standalone where a reconciliation made them.
    const settled = chainBudgetRecords(ledger.query({ order: 'oldest' })).filter(
      (e) => e.event_type === 'BUDGET_SETTLED',
    );
    const chainCharged = settled.reduce((sum, e) => sum + Number(e.metadata.charged_tokens ?? 0), 0);
    const db = new Database(join(dir, 'budget.sqlite'), { readonly: true });
    const dbCharged = db
      .prepare("SELECT coalesce(sum(charged_tokens), 0) FROM reservations WHERE session_id = 'SES-D'")
      .pluck()
      .get() as number;
    const pending = db.prepare("SELECT count(*) FROM reservations WHERE state = 'reserved'").pluck().get() as number;
    db.close();
    assert.equal(pending, 0);
    assert.equal(dbCharged, chainCharged, 'the budget file charges what the chain records');
    assert.ok(chainCharged <= limit, `charged ${chainCharged} of ${limit}`);
    assert.equal(
      killed.acked.length + resumed.acked.length <= limit / TOKENS_PER_CALL,
      true,
      'no more answers than the budget allows',
    );
  } finally {
    budget.close();
    ledger.close();
  }
}

for (const level of DURABILITY_LEVELS) {
  test(`${level}: SIGKILLed mid-load, nothing acknowledged is lost, the chain verifies, the budget is not overspent`, async (t) => {
    const dir = workDir(t);
    await nothingLost(dir, level, await load(dir, level, 12), 'load', SESSION_LIMIT);
  });
}

test("relaxed, checkpoints on worker threads as cplane serve runs them: SIGKILLed past both files' checkpoints, nothing acknowledged is lost", async (t) => {
  const dir = workDir(t);
  // 1,200 calls write some 12,000 ledger and 1,800 budget WAL frames (the steps of the calls in flight share
  // transactions, and so their pages): each file's worker has checkpointed by then.
  const killed = await load(dir, 'relaxed', 1200, 'load-background');
  assert.ok(rowsWithoutWal(dir, 'ledger.sqlite', 'entries') > 0, 'the ledger was checkpointed before the kill');
  assert.ok(
    rowsWithoutWal(dir, 'budget.sqlite', 'reservations') > 0,
    'the budget file was checkpointed before the kill',
  );
  await nothingLost(dir, 'relaxed', killed, 'load-background', 8 * SESSION_LIMIT);
});

test('a durability that is not a level is refused naming the value, in the config and as a flag', () => {
  const config = loadRouterConfig(join(HOT, 'config', 'router.json'));
  assert.equal(config.durability, 'full', 'the package default');
  assert.throws(
    () => parseRouterConfig({ ...config, durability: 'fast' }),
    (error: unknown) =>
      error instanceof CpError &&
      error.code === 'ERR_ROUTER_CONFIG_INVALID' &&
      /durability must be one of full, exchange, relaxed, got "fast"/.test(error.message),
  );
  assert.throws(
    () => parseDurability('FULL', '--durability'),
    (error: unknown) => error instanceof CpError && error.code === 'ERR_USAGE' && /got "FULL"/.test(error.message),
  );
  assert.equal(parseRouterConfig({ ...config, durability: 'relaxed' }).durability, 'relaxed');
});
