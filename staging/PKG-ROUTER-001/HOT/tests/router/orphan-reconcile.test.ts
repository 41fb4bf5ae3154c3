import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Budgeter } from '#budgeter/index.js';
import { budgetRecordsOf } from '#budgeter/records.js';
import { reconcileStaleReservations } from '#budgeter/reconcile.js';
import { runCli } from '#cli/main.js';
import { Ledger, ledgerPathForRoot, listOrphans, verifyLedger } from '#kernel/ledger/index.js';
import { configPath, rootPaths } from '#kernel/root/layout.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const WORKER = join(HERE, 'fixtures', 'blocking-route-worker.js');

function makeRoot(t: { after: (fn: () => void) => void }): string {
  const root = mkdtempSync(join(tmpdir(), 'cp-orphan-root-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(rootPaths(root).config, { recursive: true });
  copyFileSync(join(HERE, '..', '..', 'config', 'budget.json'), configPath(root, 'budget.json'));
  return root;
}

/** Start a route that blocks in the provider, wait until it has dispatched, then SIGKILL it. */
function killMidCall(root: string, requestId: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [WORKER, root, requestId], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.stdout.on('data', (d: Buffer) => {
      if (d.toString().includes('SENT')) child.kill('SIGKILL');
    });
    child.on('close', (code, signal) =>
      signal === 'SIGKILL' ? resolve() : reject(new Error(`route exited ${code} before it was killed: ${err}`)),
    );
  });
}

async function cli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli({
    argv,
    stdout: (s) => {
      out += `${s}\n`;
    },
    stderr: (s) => {
      err += `${s}\n`;
    },
  });
  return { code, out, err };
}

function pendingOf(root: string): { pending: number; reserved: number; settled: number } {
  const b = Budgeter.open({ root, readonly: true });
  try {
    const status = b.status({ session_id: 'SES-ORPHAN' });
    const session = status.scopes.find((s) => s.scope === 'session');
    return {
      pending: status.pending_reservations,
      reserved: session?.reserved_tokens ?? 0,
      settled: session?.settled_tokens ?? 0,
    };
  } finally {
    b.close();
  }
}

test('a route killed mid-call leaves an orphan whose reservation `ledger orphans --reconcile` charges as unknown, recorded, once', async (t) => {
  const root = makeRoot(t);
  await killMidCall(root, 'REQ-KILLED');
  const before = pendingOf(root);
  assert.equal(before.pending, 1, 'the killed call left its reservation pending');
  assert.ok(before.reserved > 0);

  // Within the orphan timeout the call may still be in flight: nothing is touched.
  const early = await cli(['ledger', 'orphans', '--root', root, '--reconcile', '--json']);
  assert.equal(early.code, 0, early.err);
  assert.deepEqual(JSON.parse(early.out), { orphans: [], reconciled: [] });
  assert.equal(pendingOf(root).pending, 1);

  const late = await cli(['ledger', 'orphans', '--root', root, '--reconcile', '--timeout-ms', '0', '--json']);
  assert.equal(late.code, 0, late.err);
  const result = JSON.parse(late.out) as {
    orphans: { id: string }[];
    reconciled: {
      request_id: string;
      dispatch_entry_id: string;
      exchange_entry_id: null;
      reason: string;
      charged_tokens: number;
    }[];
  };
  assert.equal(result.orphans.length, 1);
  const orphanId = result.orphans[0]?.id;
  assert.equal(result.reconciled.length, 1);
  assert.deepEqual(
    [
      result.reconciled[0]?.request_id,
      result.reconciled[0]?.dispatch_entry_id,
      result.reconciled[0]?.exchange_entry_id,
    ],
    ['REQ-KILLED', orphanId, null],
  );
  assert.equal(result.reconciled[0]?.charged_tokens, before.reserved, 'kept charged at the reservation, not released');
  assert.deepEqual(pendingOf(root), { pending: 0, reserved: 0, settled: before.reserved });

  const ledger = Ledger.open(ledgerPathForRoot(root), { readonly: true });
  t.after(() => ledger.close());
  assert.equal(verifyLedger(ledger).ok, true);
  const [settled, ...more] = budgetRecordsOf(ledger.query({ order: 'oldest' }), { event_type: 'BUDGET_SETTLED' });
  assert.equal(more.length, 0);
  assert.equal(settled?.submission_id, 'REQ-KILLED');
  assert.equal(settled?.decision, 'SETTLED_USAGE_UNKNOWN');
  assert.equal(settled?.metadata.dispatch_entry_id, orphanId);
  assert.match(
    String((settled?.metadata.usage_problems as string[] | undefined)?.[0]),
    /^call orphaned: DISPATCH LED-[a-f0-9]+ has no EXCHANGE/,
  );

  const again = await cli(['ledger', 'orphans', '--root', root, '--reconcile', '--timeout-ms', '0']);
  assert.equal(again.code, 0, again.err);
  assert.match(again.out, /reconciled 0 pending reservation/);
  assert.equal(
    budgetRecordsOf(ledger.query({ order: 'oldest' }), { event_type: 'BUDGET_SETTLED' }).length,
    1,
    'reconciling twice records once',
  );
});

test('the reconcile a router runs at start (router/open.ts) charges a killed call once the orphan timeout has passed, and leaves calls within it alone', async (t) => {
  const root = makeRoot(t);
  await killMidCall(root, 'REQ-OLD');
  const budget = Budgeter.open({ root });
  const ledger = Ledger.open(ledgerPathForRoot(root), { create: true });
  t.after(() => {
    budget.close();
    ledger.close();
  });
  assert.deepEqual(
    reconcileStaleReservations(budget, ledger),
    [],
    'a call younger than the orphan timeout may still be running',
  );
  const [orphan] = listOrphans(ledger, { timeoutMs: 0 });
  const later = Date.now() + 5 * 60_000 + 1;
  const done = reconcileStaleReservations(budget, ledger, { now: later });
  assert.deepEqual(
    done.map((r) => [r.request_id, r.dispatch_entry_id]),
    [['REQ-OLD', orphan?.id]],
  );
  assert.equal(done[0]?.ledger_entry_ids.length, 1, 'recorded in the ledger');
  assert.equal(budget.status({ session_id: 'SES-ORPHAN' }).pending_reservations, 0);
  assert.deepEqual(reconcileStaleReservations(budget, ledger, { now: later }), []);
});

test("--reconcile acts on a root's budget, so a bare --ledger file is a usage error", async (t) => {
  const root = makeRoot(t);
  const r = await cli(['ledger', 'orphans', '--ledger', join(root, 'l.sqlite'), '--reconcile']);
  assert.equal(r.code, 2);
  assert.match(r.err, /ERR_USAGE/);
});
