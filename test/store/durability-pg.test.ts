// The three durability levels on PostgreSQL (synchronous_commit per transaction): the durable commits each call
// costs through route() and the gateway's admit/conclude, counted by the stores; and a child SIGKILLed mid-load at
// each level loses nothing it acknowledged, the shared chain verifies, the budget is not overspent.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDatabase, pgQuery, pgSkip, startPgServer, type PgServer } from '../../scripts/lib/pg-server.js';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';

const { PgLedger } = await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/pg/pg-ledger.js')>(
  'HOT/kernel/ledger/pg/pg-ledger.js',
);
const { verifyStore } =
  await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/store.js')>(
    'HOT/kernel/ledger/store.js',
  );
const { chainBudgetRecords } =
  await fromDevRoot<typeof import('../../staging/PKG-BUDGETER-001/HOT/budgeter/records.js')>('HOT/budgeter/records.js');
const { openSharedStore } = await fromDevRoot<
  typeof import('../../staging/PKG-ROUTER-001/HOT/router/pg/shared-store.js')
>('HOT/router/pg/shared-store.js');

const { DURABILITY_WORKER, runLoad, SESSION_LIMIT } = await fromDevRoot<
  typeof import('../../staging/PKG-ROUTER-001/HOT/tests/router/fixtures/durability-load.js')
>('HOT/tests/router/fixtures/durability-load.js');
type Load = import('../../staging/PKG-ROUTER-001/HOT/tests/router/fixtures/durability-load.js').Load;
const LEVELS = ['full', 'exchange', 'relaxed'] as const;
const PER_CALL = { full: 2, exchange: 1, relaxed: 0 } as const;
const CALLS = 10;

const skip = pgSkip();
let server: PgServer | undefined;
let work: string;
before(async () => {
  work = mkdtempSync(join(tmpdir(), 'cp-durability-pg-'));
  if (skip === false) server = await startPgServer();
});
after(() => {
  server?.stop();
  rmSync(work, { recursive: true, force: true });
});

let databases = 0;
const database = (): Promise<string> => createDatabase(server as PgServer, `durability_${(databases += 1)}`);

for (const level of LEVELS) {
  test(`PostgreSQL, ${level}: ${PER_CALL[level]} durable commits per call, counted`, { skip }, async () => {
    const url = await database();
    const r = spawnSync(process.execPath, [DURABILITY_WORKER, work, level, 'count', String(CALLS), url], {
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { route: PER_CALL[level] * CALLS, governed: PER_CALL[level] * CALLS });
  });
}

/** The worker under load on the store at `url`; SIGKILLed once `killAfter` answers were acknowledged (never, when null). */
function load(url: string, level: string, killAfter: number | null): Promise<Load> {
  return runLoad([work, level, 'load', '1000', url], killAfter);
}

for (const level of LEVELS) {
  test(`PostgreSQL, ${level}: SIGKILLed mid-load, nothing acknowledged is lost, the chain verifies, the budget holds`, {
    skip,
  }, async () => {
    const url = await database();
    const killed = await load(url, level, 12);
    assert.equal(killed.signal, 'SIGKILL');
    assert.equal(killed.ended, null, 'killed mid-load, not after it');
    const resumed = await load(url, level, null);
    assert.equal(resumed.ended, 'BUDGET_EXHAUSTED');
    // The calls the kill cut short are charged at their bound, as the next host to open would.
    const shared = await openSharedStore(url, {
      budgetConfig: { schema_version: '1', mode: 'enforce', currency: 'USD', pricing: {}, limits: {}, rate_limits: {} },
      orphanTimeoutMs: 0,
    });
    await shared.reconcile();
    await shared.close();
    const ledger = await PgLedger.open(url);
    try {
      for (const id of [...killed.acked, ...resumed.acked])
        assert.equal((await ledger.get(id))?.event_type, 'EXCHANGE', `acknowledged ${id}`);
      assert.equal((await verifyStore(ledger)).ok, true);
      // Settlements as the chain holds them: folded into their EXCHANGEs, standalone where a reconciliation made them.
      const settled = chainBudgetRecords(await ledger.query({ order: 'oldest' })).filter(
        (e) => e.event_type === 'BUDGET_SETTLED',
      );
      const chainCharged = settled.reduce((sum, e) => sum + Number(e.metadata.charged_tokens ?? 0), 0);
      const db = await pgQuery(
        url,
        "SELECT coalesce(sum(charged_tokens), 0)::int AS charged, count(*) FILTER (WHERE state = 'reserved')::int AS pending FROM cplane_budget_reservations",
      );
      const row = db.rows[0] as { charged: number; pending: number };
      assert.equal(row.pending, 0);
      assert.equal(row.charged, chainCharged, 'the budget tables charge what the chain records');
      assert.ok(chainCharged <= SESSION_LIMIT, `charged ${chainCharged} of ${SESSION_LIMIT}`);
    } finally {
      await ledger.close();
    }
  });
}
