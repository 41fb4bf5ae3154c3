// One contract, every budget backend (hono-style): the SQLite budgeter behind its port and the PostgreSQL budgeter
// run the same tests. A throwaway PostgreSQL server is started from the installed binaries; without them the
// PostgreSQL half prints one SKIP line (in CI, where .ci/run installs them, a missing server fails the suite).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { createDatabase, pgSkip, startPgServer, type PgServer } from '../../scripts/lib/pg-server.js';
import { fromDevRoot } from '../../scripts/lib/dev-root.js';
import type { BudgetPort } from '../../staging/PKG-BUDGETER-001/HOT/budgeter/port.js';
import type { PgBudgeter as PgBudgeterT } from '../../staging/PKG-BUDGETER-001/HOT/budgeter/pg/pg-budgeter.js';
import type {
  CallLedger as CallLedgerT,
  ReconciledReservation,
} from '../../staging/PKG-BUDGETER-001/HOT/budgeter/reconcile.js';
import type { AppendInput } from '../../staging/PKG-KERNEL-001/HOT/kernel/ledger/index.js';

// From the dev root, as the root runs them (and as coverage counts them).
const { CpError } =
  await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/errors.js')>('HOT/kernel/errors.js');
const { Budgeter } =
  await fromDevRoot<typeof import('../../staging/PKG-BUDGETER-001/HOT/budgeter/budgeter.js')>(
    'HOT/budgeter/budgeter.js',
  );
const { sqliteBudgetPort } =
  await fromDevRoot<typeof import('../../staging/PKG-BUDGETER-001/HOT/budgeter/port.js')>('HOT/budgeter/port.js');
const { PgBudgeter } = await fromDevRoot<
  typeof import('../../staging/PKG-BUDGETER-001/HOT/budgeter/pg/pg-budgeter.js')
>('HOT/budgeter/pg/pg-budgeter.js');

const { copyBudgetState } = await fromDevRoot<
  typeof import('../../staging/PKG-BUDGETER-001/HOT/budgeter/pg/migrate-budget.js')
>('HOT/budgeter/pg/migrate-budget.js');

const { SnapshotState } =
  await fromDevRoot<typeof import('../../staging/PKG-BUDGETER-001/HOT/budgeter/pg/snapshot.js')>(
    'HOT/budgeter/pg/snapshot.js',
  );
const { reconcilePending, sqliteCallLedger } =
  await fromDevRoot<typeof import('../../staging/PKG-BUDGETER-001/HOT/budgeter/reconcile.js')>(
    'HOT/budgeter/reconcile.js',
  );
const { foldBudget } =
  await fromDevRoot<typeof import('../../staging/PKG-BUDGETER-001/HOT/budgeter/records.js')>('HOT/budgeter/records.js');
type AppendInputT = import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/index.js').AppendInput;
const { pgCallLedger } = await fromDevRoot<
  typeof import('../../staging/PKG-BUDGETER-001/HOT/budgeter/pg/reconcile-pg.js')
>('HOT/budgeter/pg/reconcile-pg.js');
const { Ledger } =
  await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/index.js')>(
    'HOT/kernel/ledger/index.js',
  );
const { PgLedger } = await fromDevRoot<typeof import('../../staging/PKG-KERNEL-001/HOT/kernel/ledger/pg/pg-ledger.js')>(
  'HOT/kernel/ledger/pg/pg-ledger.js',
);

const { scopeKeyOf } =
  await fromDevRoot<typeof import('../../staging/PKG-BUDGETER-001/HOT/budgeter/store.js')>('HOT/budgeter/store.js');

const skipPg = pgSkip();
const havePg = skipPg === false;

let server: PgServer | undefined;
let work: string;
let databases = 0;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'cp-budget-store-'));
  if (havePg) server = await startPgServer();
});
after(() => {
  server?.stop();
  rmSync(work, { recursive: true, force: true });
});

const T0 = Date.UTC(2026, 0, 1, 10);

function config(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    schema_version: '1',
    mode: 'enforce',
    currency: 'USD',
    pricing: {
      m1: {
        input_per_mtok: 2,
        output_per_mtok: 10,
        cache_read_per_mtok: 0.2,
        cache_write_5m_per_mtok: 2.5,
        cache_write_1h_per_mtok: 4,
      },
    },
    limits: {},
    rate_limits: {},
    ...overrides,
  };
}

function clockAt(start = T0): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return { now: () => t, advance: (ms) => void (t += ms) };
}

/** 100 input + 50 output: 150 tokens reserved. */
function request(id: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    request_id: id,
    session_id: 'S1',
    model: 'm1',
    estimated_input_tokens: 100,
    max_output_tokens: 50,
    ...extra,
  };
}

const coded =
  (code: string) =>
  (e: unknown): boolean =>
    e instanceof CpError && e.code === code;

/** A ledger beside a budget, as reconciliation uses it; `events` reads back what was appended. */
interface CallsLedger {
  calls: CallLedgerT;
  events(type: string): Promise<{ id: string; submission_id: string; metadata: Record<string, unknown> }[]>;
  close(): Promise<void>;
}

interface Backend {
  name: 'sqlite' | 'postgres';
  skip: string | false;
  /**
   * A fresh, empty budget; `open` opens another handle (another host's) on the same one; `ledger` opens a handle
   * on the ledger beside it (on PostgreSQL the same database, as a shared store has them).
   */
  fresh(
    config: unknown,
    clock?: () => number,
  ): Promise<{
    port: BudgetPort;
    open: () => Promise<BudgetPort>;
    ledger: () => Promise<CallsLedger>;
    /** One statement on the budget's reservations table (named `reservations` in `sql`, $1… parameters). */
    reservations: (sql: string, params: unknown[]) => Promise<Record<string, unknown>[]>;
  }>;
}

const backends: Backend[] = [
  {
    name: 'sqlite',
    skip: false,
    async fresh(cfg, clock) {
      const dbPath = join(work, `budget-${(databases += 1)}.sqlite`);
      const open = async (): Promise<BudgetPort> =>
        sqliteBudgetPort(Budgeter.open({ dbPath, config: cfg, ...(clock ? { clock } : {}) }));
      const ledgerPath = `${dbPath}.ledger.sqlite`;
      const ledger = async (): Promise<CallsLedger> => {
        const l = Ledger.open(ledgerPath, { create: true });
        return {
          calls: sqliteCallLedger(l),
          events: async (type) =>
            l
              .query({ event_type: type })
              .map((e) => ({ id: e.id, submission_id: e.submission_id, metadata: e.metadata })),
          close: async () => l.close(),
        };
      };
      const reservations = async (sql: string, params: unknown[]): Promise<Record<string, unknown>[]> => {
        const db = new Database(dbPath);
        try {
          const statement = db.prepare(sql.replace(/\$\d+/g, '?'));
          if (statement.reader) return statement.all(...params) as Record<string, unknown>[];
          statement.run(...params);
          return [];
        } finally {
          db.close();
        }
      };
      return { port: await open(), open, ledger, reservations };
    },
  },
  {
    name: 'postgres',
    skip: skipPg,
    async fresh(cfg, clock) {
      const url = await createDatabase(server as PgServer, `budget_${(databases += 1)}`);
      const open = (): Promise<BudgetPort> =>
        PgBudgeter.open(url, { config: cfg, create: true, ...(clock ? { clock } : {}) });
      const ledger = async (): Promise<CallsLedger> => {
        const l = await PgLedger.open(url, { create: true });
        return {
          calls: pgCallLedger(l),
          async events(type) {
            const r = await l.pool.query(
              'SELECT id, submission_id, metadata FROM cplane_entries WHERE event_type = $1 ORDER BY seq',
              [type],
            );
            return (r.rows as { id: string; submission_id: Buffer; metadata: string }[]).map((row) => ({
              id: row.id,
              submission_id: row.submission_id.toString('utf8'),
              metadata: JSON.parse(row.metadata) as Record<string, unknown>,
            }));
          },
          close: () => l.close(),
        };
      };
      const reservations = async (sql: string, params: unknown[]): Promise<Record<string, unknown>[]> => {
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        try {
          const r = await client.query(sql.replace(/\breservations\b/g, 'cplane_budget_reservations'), params);
          return r.rows as Record<string, unknown>[];
        } finally {
          await client.end();
        }
      };
      return { port: await open(), open, ledger, reservations };
    },
  },
];

const usage = { input_tokens: 80, output_tokens: 20 };

for (const backend of backends) {
  describe(`budget store contract: ${backend.name}`, { skip: backend.skip }, () => {
    test('steps made at once: a refused or conflicting one changes nothing, the others land as if made alone', async () => {
      // On PostgreSQL these are one group (one transaction): a step that throws must be undone alone.
      const { port } = await backend.fresh(config({ limits: { session: { default: { max_tokens: 400 } } } }));
      try {
        assert.equal((await port.reserve(request('c0'))).ok, true);
        const settled = await Promise.allSettled([
          port.reserve(request('c1')),
          port.reserve(request('c0', { max_output_tokens: 51 })),
          port.reserve(request('c2')),
          port.settle({ request_id: 'c0', usage }),
          port.release('nope'),
        ]);
        const [c1, conflict, c2, settle, unknown] = settled;
        assert.equal(c1?.status === 'fulfilled' && c1.value.ok, true);
        assert.ok(conflict?.status === 'rejected' && coded('ERR_BUDGET_REQUEST_CONFLICT')(conflict.reason));
        // 150 + 150 reserved of 400 after c0 settled at 100: c2 would make 400 + 50 over the limit only if the
        // conflicting step had charged anything.
        assert.equal(c2?.status === 'fulfilled' && c2.value.ok, false, 'c0 150 + c1 150 + c2 150 > 400');
        assert.equal(settle?.status === 'fulfilled' && settle.value.cost !== undefined, true);
        assert.ok(unknown?.status === 'rejected' && coded('ERR_BUDGET_UNKNOWN_REQUEST')(unknown.reason));
        // What stands: c0 settled at its usage (100), c1 reserved (150); c2 and the conflict charged nothing.
        const after = await port.reserve(request('c3', { estimated_input_tokens: 100, max_output_tokens: 50 }));
        assert.equal(after.ok, true, '100 + 150 + 150 = 400 fits');
        const over = await port.reserve(request('c4', { estimated_input_tokens: 0, max_output_tokens: 1 }));
        assert.equal(over.ok, false, 'the limit is exactly used');
      } finally {
        await port.close();
      }
    });

    test('reserve then settle charges the real usage; reserve then release gives it all back', async () => {
      const { port } = await backend.fresh(config({ limits: { session: { default: { max_tokens: 1000 } } } }));
      try {
        const granted = await port.reserve(request('r1'));
        assert.equal(granted.ok, true);
        assert.ok(granted.ok);
        assert.equal(granted.replayed, false);
        assert.equal(granted.reservation.reserved_tokens, 150);
        assert.equal(granted.remaining_tokens, 850);
        assert.deepEqual(
          granted.records.map((r) => r.event_type),
          ['BUDGET_ALLOCATED'],
        );
        const settled = await port.settle({ request_id: 'r1', usage });
        assert.equal(settled.reservation.state, 'settled');
        assert.equal(settled.reservation.charged_tokens, 100);
        assert.equal(settled.usage_known, true);
        assert.equal(settled.remaining_tokens, 900);
        await port.reserve(request('r2'));
        const released = await port.release('r2');
        assert.equal(released.reservation.state, 'released');
        const third = await port.reserve(request('r3'));
        assert.ok(third.ok);
        // r2 gave its 150 back: 1000 - 100 settled - 150 for r3.
        assert.equal(third.remaining_tokens, 750);
      } finally {
        await port.close();
      }
    });

    test('a settlement priced at another model (a routed call answered by a cheaper target) costs that model', async () => {
      const cheap = {
        input_per_mtok: 1,
        output_per_mtok: 1,
        cache_read_per_mtok: 0,
        cache_write_5m_per_mtok: 0,
        cache_write_1h_per_mtok: 0,
      };
      const { port } = await backend.fresh(config({ pricing: { ...(config().pricing as object), m2: cheap } }));
      try {
        assert.ok((await port.reserve(request('r1'))).ok);
        const settled = await port.settle({ request_id: 'r1', usage, model: 'm2' });
        // 80 input + 20 output at 1 per million: 100e-6, not m1's 80 × 2 + 20 × 10 = 360e-6.
        assert.ok(Math.abs((settled.cost ?? 0) - 100e-6) < 1e-12, `cost ${settled.cost}`);
        assert.ok((await port.reserve(request('r2'))).ok);
        assert.ok(Math.abs(((await port.settle({ request_id: 'r2', usage })).cost ?? 0) - 360e-6) < 1e-12);
        await assert.rejects(
          port.settle({ request_id: 'r2', usage, model: 'has space' }),
          coded('ERR_BUDGET_INPUT_INVALID'),
        );
      } finally {
        await port.close();
      }
    });

    test('reserve, settle and release replay per request id: replayed, no second record, no second charge', async () => {
      const { port } = await backend.fresh(config({ limits: { session: { default: { max_tokens: 1000 } } } }));
      try {
        const first = await port.reserve(request('r1'));
        const again = await port.reserve(request('r1'));
        assert.ok(first.ok && again.ok);
        assert.equal(again.replayed, true);
        assert.deepEqual(again.records, []);
        assert.equal(again.remaining_tokens, 850);
        assert.deepEqual(again.reservation, first.reservation);
        await port.settle({ request_id: 'r1', usage });
        const settledAgain = await port.settle({ request_id: 'r1', usage });
        assert.equal(settledAgain.replayed, true);
        assert.deepEqual(settledAgain.records, []);
        assert.equal(settledAgain.remaining_tokens, 900);
        await port.reserve(request('r2'));
        await port.release('r2');
        const releasedAgain = await port.release('r2');
        assert.equal(releasedAgain.replayed, true);
        assert.deepEqual(releasedAgain.records, []);
        const next = await port.reserve(request('r3'));
        assert.ok(next.ok);
        assert.equal(next.remaining_tokens, 750);
      } finally {
        await port.close();
      }
    });

    test('a reused request id with other values is a conflict; an unknown one is refused; bad input is coded', async () => {
      const { port } = await backend.fresh(config());
      try {
        await port.reserve(request('r1'));
        await assert.rejects(
          port.reserve(request('r1', { max_output_tokens: 51 })),
          coded('ERR_BUDGET_REQUEST_CONFLICT'),
        );
        await port.settle({ request_id: 'r1', usage });
        await assert.rejects(
          port.settle({ request_id: 'r1', usage: { input_tokens: 1, output_tokens: 1 } }),
          coded('ERR_BUDGET_REQUEST_CONFLICT'),
        );
        await assert.rejects(port.release('r1'), coded('ERR_BUDGET_REQUEST_STATE'));
        await assert.rejects(port.settle({ request_id: 'nope', usage }), coded('ERR_BUDGET_UNKNOWN_REQUEST'));
        await assert.rejects(port.release('nope'), coded('ERR_BUDGET_UNKNOWN_REQUEST'));
        await assert.rejects(port.reserve(request('r2', { max_output_tokens: -1 })), coded('ERR_BUDGET_INPUT_INVALID'));
        await assert.rejects(port.release('has space'), coded('ERR_BUDGET_INPUT_INVALID'));
      } finally {
        await port.close();
      }
    });

    test('a settled row keeps its usage once and a digest of its values; replays match it, and rows written whole', async () => {
      const { port, reservations } = await backend.fresh(config());
      try {
        await port.reserve(request('r1'));
        await port.reserve(request('r2'));
        const cached = { input_tokens: 80, output_tokens: 20, cache_read_tokens: 7, cache_write_5m_tokens: 3 };
        const first = await port.settle({ request_id: 'r1', usage: cached });
        const [row] = await reservations(
          'SELECT params_key, usage, usage_key FROM reservations WHERE request_id = $1',
          ['r1'],
        );
        assert.equal(row?.usage, null);
        assert.equal(String(row?.params_key).length, 22);
        const again = await port.settle({ request_id: 'r1', usage: cached });
        assert.equal(again.replayed, true);
        assert.deepEqual(again.reservation.usage, first.reservation.usage);
        assert.deepEqual(again.reservation.usage, {
          input_tokens: 80,
          output_tokens: 20,
          cache_read_tokens: 7,
          cache_write_5m_tokens: 3,
          cache_write_1h_tokens: 0,
        });
        // Rows as a budget written before the digest holds them: the whole key, the usage as JSON.
        const wholeKey = JSON.stringify(['S1', null, null, 'm1', 100, 50]);
        await reservations('UPDATE reservations SET params_key = $1 WHERE request_id IN ($2, $3)', [
          wholeKey,
          'r1',
          'r2',
        ]);
        await reservations('UPDATE reservations SET usage = $1 WHERE request_id = $2', [
          JSON.stringify(first.reservation.usage),
          'r1',
        ]);
        const replayed = await port.reserve(request('r2'));
        assert.ok(replayed.ok && replayed.replayed);
        await assert.rejects(
          port.reserve(request('r2', { max_output_tokens: 51 })),
          coded('ERR_BUDGET_REQUEST_CONFLICT'),
        );
        const old = await port.settle({ request_id: 'r1', usage: cached });
        assert.equal(old.replayed, true);
        assert.deepEqual(old.reservation.usage, first.reservation.usage);
        await assert.rejects(port.settle({ request_id: 'r1', usage }), coded('ERR_BUDGET_REQUEST_CONFLICT'));
      } finally {
        await port.close();
      }
    });

    test('a session token limit refuses with BUDGET_EXHAUSTED, charging nothing', async () => {
      const { port } = await backend.fresh(config({ limits: { session: { default: { max_tokens: 300 } } } }));
      try {
        assert.equal((await port.reserve(request('r1'))).ok, true);
        assert.equal((await port.reserve(request('r2'))).ok, true);
        const refused = await port.reserve(request('r3'));
        assert.ok(!refused.ok);
        assert.equal(refused.code, 'BUDGET_EXHAUSTED');
        assert.equal(refused.retry_after_ms, null);
        assert.deepEqual(
          refused.records.map((r) => r.event_type),
          ['BUDGET_EXCEEDED'],
        );
        await port.release('r2');
        assert.equal((await port.reserve(request('r3'))).ok, true);
      } finally {
        await port.close();
      }
    });

    test('a rate limit refuses with RATE_LIMITED until its window ends', async () => {
      const clock = clockAt();
      const { port } = await backend.fresh(
        config({ rate_limits: { session: { window_ms: 60_000, max_requests: 2 } } }),
        clock.now,
      );
      try {
        assert.equal((await port.reserve(request('r1'))).ok, true);
        clock.advance(1000);
        assert.equal((await port.reserve(request('r2'))).ok, true);
        const refused = await port.reserve(request('r3'));
        assert.ok(!refused.ok);
        assert.equal(refused.code, 'RATE_LIMITED');
        assert.equal(refused.retry_after_ms, 59_000);
        // A release gives its slot back.
        await port.release('r2');
        assert.equal((await port.reserve(request('r3'))).ok, true);
        assert.equal((await port.reserve(request('r4'))).ok, false);
        clock.advance(59_000);
        assert.equal((await port.reserve(request('r4'))).ok, true);
      } finally {
        await port.close();
      }
    });

    test('a rate window holds what a settled call used, not its reservation; unknown usage stays charged in full', async () => {
      const clock = clockAt();
      const { port } = await backend.fresh(
        config({ rate_limits: { session: { window_ms: 60_000, max_tokens: 300 } } }),
        clock.now,
      );
      try {
        assert.equal((await port.reserve(request('w1'))).ok, true, '150 reserved');
        await port.settle({ request_id: 'w1', usage });
        assert.equal((await port.reserve(request('w2'))).ok, true, 'w1 counts its 100 used, not its 150: 250 of 300');
        const refused = await port.reserve(request('w3'));
        assert.ok(!refused.ok);
        assert.equal(refused.code, 'RATE_LIMITED');
        assert.equal(
          refused.violations[0]?.used,
          250,
          'the window shows the settled usage (100) and w2 in flight (150)',
        );
        await port.chargeUnknown('w2', 'usage never arrived');
        const still = await port.reserve(request('w3'));
        assert.ok(!still.ok);
        assert.equal(still.violations[0]?.used, 250, 'unknown usage keeps its whole reservation in the window');
        // A call settled after its window rolled over changes nothing in the new one.
        assert.equal(
          (await port.reserve(request('w4', { estimated_input_tokens: 0, max_output_tokens: 50 }))).ok,
          true,
        );
        clock.advance(60_000);
        await port.settle({ request_id: 'w4', usage: { input_tokens: 0, output_tokens: 1 } });
        assert.equal(
          (await port.reserve(request('w5', { estimated_input_tokens: 250, max_output_tokens: 50 }))).ok,
          true,
        );
      } finally {
        await port.close();
      }
    });

    test("a key's 6th request in a minute at 5 requests a minute is RATE_LIMITED with retry-after; another key is served", async () => {
      const clock = clockAt();
      const { port } = await backend.fresh(
        config({ rate_limits: { key: { window_ms: 60_000, max_requests: 5 } } }),
        clock.now,
      );
      try {
        for (let i = 0; i < 5; i += 1) {
          const granted = await port.reserve(request(`k${i}`, { budget_scope: 'key:A' }));
          assert.equal(granted.ok, true, `request ${i + 1}`);
          await port.settle({ request_id: `k${i}`, usage });
          clock.advance(1000);
        }
        const sixth = await port.reserve(request('k5', { budget_scope: 'key:A' }));
        assert.ok(!sixth.ok);
        assert.equal(sixth.code, 'RATE_LIMITED');
        assert.equal(sixth.violations[0]?.scope, 'key');
        assert.equal(sixth.violations[0]?.limit, 'max_requests');
        assert.equal(sixth.retry_after_ms, 55_000);
        assert.equal((await port.reserve(request('b1', { budget_scope: 'key:B' }))).ok, true, 'another key is served');
        clock.advance(55_000);
        assert.equal((await port.reserve(request('k5', { budget_scope: 'key:A' }))).ok, true, 'the next minute');
      } finally {
        await port.close();
      }
    });

    test('max_in_flight 2: the third call in flight is RATE_LIMITED; a settle, a release or chargeUnknown frees a place', async () => {
      const clock = clockAt();
      const { port, open } = await backend.fresh(
        config({ rate_limits: { key: { window_ms: 60_000, max_in_flight: 2 } } }),
        clock.now,
      );
      const other = await open();
      try {
        const key = { budget_scope: 'key:A' };
        assert.equal((await port.reserve(request('f1', key))).ok, true);
        assert.equal((await other.reserve(request('f2', key))).ok, true, 'another host, the same key');
        const third = await port.reserve(request('f3', key));
        assert.ok(!third.ok);
        assert.equal(third.code, 'RATE_LIMITED');
        assert.equal(third.violations[0]?.limit, 'max_in_flight');
        assert.equal(third.violations[0]?.used, 2);
        assert.equal(third.retry_after_ms, 1000);
        assert.match(third.message, /max_in_flight 2: used 2 in flight/);
        assert.equal((await port.reserve(request('g1', { budget_scope: 'key:B' }))).ok, true, 'another key');
        await port.settle({ request_id: 'f1', usage });
        assert.equal((await other.reserve(request('f3', key))).ok, true, 'a settled call frees its place');
        assert.equal((await port.reserve(request('f4', key))).ok, false);
        await other.release('f3');
        assert.equal((await port.reserve(request('f4', key))).ok, true, 'so does a released one');
        await port.chargeUnknown('f2', 'host died');
        assert.equal((await port.reserve(request('f5', key))).ok, true, 'and one charged as unknown');
        assert.equal((await port.reserve(request('f6', key))).ok, false);
      } finally {
        await other.close();
        await port.close();
      }
    });

    test("a key's own rate limit (by_id) overrides its kind's; other keys keep the kind's", async () => {
      const clock = clockAt();
      const { port } = await backend.fresh(
        config({
          rate_limits: {
            key: { window_ms: 60_000, max_requests: 3, by_id: { 'team-a': { max_requests: 1, max_in_flight: 1 } } },
          },
        }),
        clock.now,
      );
      try {
        const team = { budget_scope: 'team-a' };
        assert.equal((await port.reserve(request('t1', team))).ok, true);
        const inFlight = await port.reserve(request('t2', team));
        assert.ok(!inFlight.ok);
        assert.deepEqual(
          inFlight.violations.map((v) => v.limit),
          ['max_requests', 'max_in_flight'],
        );
        await port.settle({ request_id: 't1', usage });
        const rpm = await port.reserve(request('t2', team));
        assert.ok(!rpm.ok);
        assert.deepEqual(
          rpm.violations.map((v) => [v.limit, v.limit_value]),
          [['max_requests', 1]],
        );
        for (const id of ['o1', 'o2', 'o3'])
          assert.equal((await port.reserve(request(id, { budget_scope: 'other' }))).ok, true);
        assert.equal((await port.reserve(request('o4', { budget_scope: 'other' }))).ok, false, 'the kind default: 3');
        assert.equal(
          (await port.reserve(request('p1', { budget_scope: '__proto__' }))).ok,
          true,
          'no prototype lookup',
        );
      } finally {
        await port.close();
      }
    });

    test('a monthly budget resets at the UTC month boundary; a reservation across it settles in the old month', async () => {
      // 23:59:00 on the last day of January, UTC.
      const clock = clockAt(Date.UTC(2026, 0, 31, 23, 59));
      const { port } = await backend.fresh(
        config({ limits: { key: { period: 'month', default: { max_tokens: 350 } } } }),
        clock.now,
      );
      const team = { budget_scope: 'team-a' };
      try {
        assert.ok((await port.reserve(request('j1', team))).ok);
        await port.settle({ request_id: 'j1', usage });
        assert.ok((await port.reserve(request('j2', team))).ok, '100 settled + 150 reserved of 350');
        const full = await port.reserve(request('j3', team));
        assert.ok(!full.ok, '100 + 150 + 150 > 350 in January');
        assert.equal(full.code, 'BUDGET_EXHAUSTED');
        let status = await port.status();
        const january = status.scopes.find((s) => s.scope === 'key');
        assert.deepEqual(january?.period, {
          every: 'month',
          start: '2026-01-01T00:00:00.000Z',
          end: '2026-02-01T00:00:00.000Z',
        });
        assert.deepEqual([january?.settled_tokens, january?.reserved_tokens], [100, 150]);
        clock.advance(60_000);
        // February: the limit starts again at zero while j2, reserved in January, is still in flight.
        const february = await port.reserve(request('f1', team));
        assert.ok(february.ok);
        assert.equal(february.remaining_tokens, 200, "only February's own reservation counts");
        const settled = await port.settle({ request_id: 'j2', usage: { input_tokens: 350, output_tokens: 0 } });
        assert.equal(settled.reservation.charged_tokens, 350);
        assert.deepEqual(
          settled.exceeded.map((v) => [v.limit, v.used]),
          [['max_tokens', 450]],
          "January's totals",
        );
        status = await port.status();
        const now = status.scopes.find((s) => s.scope === 'key');
        assert.deepEqual(now?.period, {
          every: 'month',
          start: '2026-02-01T00:00:00.000Z',
          end: '2026-03-01T00:00:00.000Z',
        });
        assert.deepEqual(
          [now?.settled_tokens, now?.reserved_tokens, now?.requests],
          [0, 150, 1],
          "j2's settlement stayed in January",
        );
        assert.ok((await port.reserve(request('f2', team))).ok, '150 + 150 of 350 in February');
        assert.ok(!(await port.reserve(request('f3', team))).ok, '450 > 350');
        // A session's lifetime limit (no period) shows none.
        assert.equal(status.scopes.find((s) => s.scope === 'session')?.period, null);
      } finally {
        await port.close();
      }
    });

    test('a step that takes a scope past its warn fraction or to its limit says so, named by scope and period', async () => {
      const clock = clockAt(Date.UTC(2026, 0, 31, 12));
      const { port } = await backend.fresh(
        config({ warn_at_fraction: 0.5, limits: { key: { period: 'month', default: { max_tokens: 300 } } } }),
        clock.now,
      );
      const team = { budget_scope: 'team-a' };
      try {
        const first = await port.reserve(request('c1', team));
        assert.deepEqual(
          first.crossed?.map((c) => [c.alert, c.scope, c.scope_id, c.period?.start, c.used_fraction, c.dedupe_key]),
          [['budget_warn', 'key', 'team-a', '2026-01-01T00:00:00.000Z', 0.5, 'budget_warn/key///team-a/2026-01-01']],
        );
        const settled = await port.settle({ request_id: 'c1', usage });
        assert.equal(settled.crossed, undefined, 'down to a third: nothing crossed');
        assert.ok((await port.reserve(request('c2', team))).ok);
        const refused = await port.reserve(request('c3', team));
        assert.ok(!refused.ok);
        assert.deepEqual(
          refused.crossed?.map((c) => c.dedupe_key),
          ['budget_exhausted/key///team-a/2026-01-01'],
        );
        const exhausted = await port.settle({ request_id: 'c2', usage: { input_tokens: 200, output_tokens: 0 } });
        assert.deepEqual(
          exhausted.crossed?.map((c) => [c.alert, c.used_fraction]),
          [['budget_exhausted', 1]],
        );
      } finally {
        await port.close();
      }
    });

    test("a key's own limit (by_id) with its own period: weekly from Monday, daily for the kind", async () => {
      // Sunday 2026-01-04 23:00 UTC.
      const clock = clockAt(Date.UTC(2026, 0, 4, 23));
      const { port } = await backend.fresh(
        config({
          limits: {
            key: {
              period: 'day',
              default: { max_tokens: 150 },
              by_id: {
                big: { max_tokens: 300, period: 'week' },
                fixed: { max_tokens: 150, period: { days: 3, from: '2026-01-03' } },
              },
            },
          },
        }),
        clock.now,
      );
      try {
        const as = (id: string) => ({ budget_scope: id });
        assert.ok((await port.reserve(request('d1', as('small')))).ok);
        assert.ok(!(await port.reserve(request('d2', as('small')))).ok, 'the kind default: 150 a day');
        assert.ok((await port.reserve(request('w1', as('big')))).ok);
        assert.ok((await port.reserve(request('w2', as('big')))).ok, 'its own 300');
        assert.ok((await port.reserve(request('x1', as('fixed')))).ok);
        clock.advance(3_600_000);
        // Monday 00:00: a new day and a new ISO week; the 3-day period from 2026-01-03 runs to the 6th.
        assert.ok((await port.reserve(request('d2', as('small')))).ok, 'a new day');
        assert.ok((await port.reserve(request('w3', as('big')))).ok, 'a new week');
        assert.ok(!(await port.reserve(request('x2', as('fixed')))).ok, 'the 3-day period goes on');
        const status = await port.status();
        const fixed = status.scopes.find((s) => s.scope_id === 'fixed');
        assert.deepEqual(fixed?.period, {
          every: '3 days',
          start: '2026-01-03T00:00:00.000Z',
          end: '2026-01-06T00:00:00.000Z',
        });
        assert.equal(status.scopes.find((s) => s.scope_id === 'big')?.period?.start, '2026-01-05T00:00:00.000Z');
      } finally {
        await port.close();
      }
    });

    test('chargeUnknown keeps the reservation charged, once; stalePending lists what is still pending', async () => {
      const clock = clockAt();
      const { port } = await backend.fresh(
        config({ limits: { session: { default: { max_tokens: 1000 } } } }),
        clock.now,
      );
      try {
        await port.reserve(request('a'));
        clock.advance(1000);
        await port.reserve(request('b'));
        clock.advance(1000);
        await port.reserve(request('c'));
        assert.deepEqual(await port.stalePending(T0 + 1000), ['a', 'b']);
        assert.deepEqual(await port.stalePending(T0 + 1000, 1), ['a']);
        const charged = await port.chargeUnknown('a', 'process died', { reconciled: true });
        assert.ok(charged);
        assert.equal(charged.usage_known, false);
        assert.equal(charged.reservation.state, 'settled');
        assert.equal(charged.reservation.charged_tokens, 150);
        assert.equal(charged.records[0]?.metadata?.reconciled, true);
        // Still charged: 3 × 150 of the 1000.
        assert.equal(charged.remaining_tokens, 550);
        assert.equal(await port.chargeUnknown('a', 'again'), null);
        await port.release('b');
        assert.equal(await port.chargeUnknown('b', 'released meanwhile'), null);
        assert.deepEqual(await port.stalePending(T0 + 5000), ['c']);
      } finally {
        await port.close();
      }
    });

    test('records a process died before appending are delivered once; ones that landed are dropped, never appended twice', async () => {
      const clock = clockAt();
      const { port, open, ledger } = await backend.fresh(config(), clock.now);
      const other = await open();
      const [one, two] = [await ledger(), await ledger()] as [CallsLedger, CallsLedger];
      try {
        for (const id of ['d1', 'd2', 'd3']) await one.calls.appendBatch((await port.reserve(request(id))).records);
        // d1: the process died after the settlement committed, before appending its record.
        const lost = await port.settle({ request_id: 'd1', usage });
        // d2: appended and reported; d3: released and appended, but the process died before reporting it.
        const landed = await port.settle({ request_id: 'd2', usage });
        await one.calls.appendBatch(landed.records);
        port.recorded(['d2']);
        await one.calls.appendBatch((await port.release('d3')).records);
        clock.advance(10_000);
        // The report rides on a later step's transaction (no commit of its own), so d2 may still be kept for now.
        assert.equal((await port.reserve(request('d4'))).ok, true);
        const now = T0 + 10_000;
        const due = (await port.recordsDue(now - 5000)).map((r) => r.request_id);
        assert.ok(due.includes('d1') && due.includes('d3'), `kept until reported: ${due.join(', ')}`);
        // Two hosts deliver at once: the ledger appends each record only if the chain does not hold it.
        const passes = (
          await Promise.all([
            reconcilePending(port, one.calls, { timeoutMs: 5000, now }),
            reconcilePending(other, two.calls, { timeoutMs: 5000, now }),
          ])
        ).flat();
        const appended = passes.filter((r) => r.ledger_entry_ids.length > 0);
        assert.deepEqual(
          passes.map((r) => r.request_id),
          ['d1'],
          'd1 appended once, by one host; d2 and d3 were in the chain already',
        );
        assert.match(appended[0]?.reason ?? '', /died before appending them; appended now$/);
        const settled = await one.events('BUDGET_SETTLED');
        assert.deepEqual(settled.map((r) => r.submission_id).sort(), ['d1', 'd2']);
        assert.deepEqual(
          settled.find((r) => r.submission_id === 'd1')?.metadata,
          lost.records[0]?.metadata,
          'the record the settlement made, as it made it',
        );
        assert.deepEqual(
          (await one.events('BUDGET_RELEASED')).map((r) => r.submission_id),
          ['d3'],
        );
        assert.deepEqual(await port.recordsDue(now + 60_000), [], 'nothing kept once delivered');
        assert.deepEqual(await reconcilePending(other, two.calls, { timeoutMs: 5000, now }), []);
      } finally {
        await one.close();
        await two.close();
        await other.close();
        await port.close();
      }
    });

    test('a call whose records ride folded: its landed settlement is never delivered again, its orphan DISPATCH is found', async () => {
      const clock = clockAt();
      const { port, ledger } = await backend.fresh(config(), clock.now);
      const one = await ledger();
      try {
        const dispatchOf = async (id: string): Promise<string> => {
          const reserved = await port.reserve(request(id));
          const allocation = reserved.records.find((r) => r.event_type === 'BUDGET_ALLOCATED') as AppendInputT;
          const dispatch = foldBudget(
            {
              event_type: 'DISPATCH',
              submission_id: 'PRC-1',
              decision: 'DISPATCHED',
              reason: 'Dispatching to mock/m1',
              metadata: { agent_id: 'A1', contract_id: 'PRC-1', session_id: 'S1' },
            },
            allocation,
          );
          return ((await one.calls.appendBatch([dispatch]))[0] as { id: string }).id;
        };
        // f1: its EXCHANGE landed carrying the settlement; the process died before reporting it.
        const f1 = await dispatchOf('f1');
        const settled = await port.settle({ request_id: 'f1', usage });
        const exchange = foldBudget(
          {
            event_type: 'EXCHANGE',
            submission_id: 'PRC-1',
            decision: 'SUCCESS',
            reason: 'Exchange completed',
            metadata: { agent_id: 'A1', contract_id: 'PRC-1', dispatch_entry_id: f1, session_id: 'S1' },
          },
          settled.records[0] as AppendInputT,
        );
        await one.calls.appendBatch([exchange]);
        // f2: the process died mid-call, after its DISPATCH.
        const f2 = await dispatchOf('f2');
        clock.advance(10_000);
        const now = T0 + 10_000;
        assert.deepEqual(
          (await port.recordsDue(now - 5000)).map((r) => r.request_id),
          ['f1'],
        );
        const passed = await reconcilePending(port, one.calls, { timeoutMs: 5000, now });
        assert.deepEqual(
          passed.map((r) => [r.request_id, r.dispatch_entry_id, r.exchange_entry_id]),
          [['f2', f2, null]],
          'f1 was in the chain already; f2 is an orphan of its folded DISPATCH',
        );
        assert.deepEqual(
          (await one.events('BUDGET_SETTLED')).map((r) => r.submission_id),
          ['f2'],
          'no standalone settlement of f1 beside the folded one',
        );
        assert.deepEqual(await port.recordsDue(now + 60_000), [], 'nothing kept');
      } finally {
        await one.close();
        await port.close();
      }
    });

    test('two hosts reconciling the same stale reservations at once: one charge and one BUDGET_SETTLED each', async () => {
      const outcome = await reconcileScenario(backend);
      const byId = new Map(outcome.reconciled.map((r) => [r.request_id, r]));
      // o4 was settled meanwhile and o5 is not stale: left alone. Each of the others once, by one of the hosts.
      assert.deepEqual([...byId.keys()].sort(), ['o1', 'o2', 'o3']);
      assert.equal(outcome.reconciled.length, 3, 'no reservation reconciled by both hosts');
      assert.equal(byId.get('o1')?.dispatch_entry_id, outcome.dispatches.o1);
      assert.equal(byId.get('o1')?.exchange_entry_id, null);
      assert.match(byId.get('o1')?.reason ?? '', /^call orphaned: DISPATCH /);
      assert.equal(byId.get('o2')?.exchange_entry_id, outcome.exchangeO2);
      assert.match(byId.get('o2')?.reason ?? '', /was recorded but its reservation never settled/);
      assert.equal(byId.get('o3')?.dispatch_entry_id, null);
      assert.match(byId.get('o3')?.reason ?? '', /with no DISPATCH in the ledger/);
      // Exactly one settlement record per reconciled reservation, naming its request and DISPATCH.
      assert.deepEqual(outcome.settledRecords.map((r) => [r.submission_id, r.metadata.dispatch_entry_id]).sort(), [
        ['o1', outcome.dispatches.o1],
        ['o2', outcome.dispatches.o2],
        ['o3', null],
      ]);
      for (const r of outcome.settledRecords) assert.equal(r.metadata.reconciled, true);
      // Still charged at the reservation's bound: 5 × 150 reserved or charged of the 1000, o4 at its usage (100).
      assert.deepEqual(outcome.after, { pending: ['o5'], remaining: 1000 - 4 * 150 - 100 });
      // A second pass finds nothing left to do.
      assert.deepEqual(outcome.again, []);
    });
  });
}

/**
 * Calls whose process died at every point (o1: DISPATCH, no EXCHANGE; o2: EXCHANGE, never settled; o3: reserved,
 * no DISPATCH), one settled meanwhile (o4) and one still young (o5); then two hosts reconcile at the same moment.
 */
async function reconcileScenario(backend: Backend) {
  const clock = clockAt();
  const { port, open, ledger } = await backend.fresh(
    config({ limits: { session: { default: { max_tokens: 1000 } } } }),
    clock.now,
  );
  const other = await open();
  const [one, two] = [await ledger(), await ledger()] as [CallsLedger, CallsLedger];
  try {
    const dispatches: Record<string, string> = {};
    const dispatch = (id: string): AppendInput => ({
      event_type: 'DISPATCH',
      submission_id: `PRC-${id}`,
      decision: 'DISPATCHED',
      reason: 'Dispatching to mock/m1',
      metadata: { contract_id: `PRC-${id}`, agent_id: 'A1', session_id: 'S1' },
    });
    for (const id of ['o1', 'o2', 'o4']) {
      const reserved = await port.reserve(request(id));
      assert.equal(reserved.ok, true);
      // Something else in the chain between two calls, as a busy ledger has.
      await one.calls.appendBatch([{ event_type: 'NOTE', submission_id: id, decision: 'x', reason: 'x' }]);
      const entries = await one.calls.appendBatch([...reserved.records, dispatch(id)]);
      dispatches[id] = (entries[entries.length - 1] as { id: string }).id;
    }
    assert.equal((await port.reserve(request('o3'))).ok, true);
    const [exchange] = await one.calls.appendBatch([
      {
        event_type: 'EXCHANGE',
        submission_id: 'PRC-o2',
        decision: 'SUCCESS',
        reason: 'Exchange completed',
        metadata: { session_id: 'S1', agent_id: 'A1', dispatch_entry_id: dispatches.o2 },
      },
    ]);
    clock.advance(10_000);
    await port.settle({ request_id: 'o4', usage: { input_tokens: 80, output_tokens: 20 } });
    assert.equal((await port.reserve(request('o5'))).ok, true);
    const now = T0 + 10_000;
    const passes = await Promise.all([
      reconcilePending(port, one.calls, { timeoutMs: 5000, now }),
      reconcilePending(other, two.calls, { timeoutMs: 5000, now }),
    ]);
    const again = await reconcilePending(other, two.calls, { timeoutMs: 5000, now });
    const status = (await port.reserve(request('probe', { estimated_input_tokens: 0, max_output_tokens: 1 }))) as {
      remaining_tokens: number | null;
    };
    await port.release('probe');
    return {
      reconciled: passes.flat() as ReconciledReservation[],
      again,
      dispatches,
      exchangeO2: exchange?.id,
      settledRecords: (await one.events('BUDGET_SETTLED')).filter((r) => r.metadata.reconciled === true),
      after: {
        pending: await port.stalePending(now + 60_000),
        remaining: (status.remaining_tokens ?? 0) + 1,
      },
    };
  } finally {
    await one.close();
    await two.close();
    await other.close();
    await port.close();
  }
}

test('a stale reservation reconciles to the same charge and record on SQLite and PostgreSQL', {
  skip: skipPg,
}, async () => {
  const outcomes = [];
  for (const backend of backends) {
    const o = await reconcileScenario(backend);
    // Entry ids differ between two chains; the decisions, the charges and the records' fields must not.
    outcomes.push({
      reconciled: o.reconciled
        .map((r) => ({
          ...r,
          dispatch_entry_id: r.dispatch_entry_id === null ? null : 'D',
          exchange_entry_id: r.exchange_entry_id === null ? null : 'E',
          reason: r.reason.replace(/LED-[0-9a-f]{8}/g, 'LED'),
          ledger_entry_ids: r.ledger_entry_ids.length,
        }))
        .sort((a, b) => (a.request_id < b.request_id ? -1 : 1)),
      records: o.settledRecords
        .map(
          (r): Record<string, unknown> => ({
            ...r.metadata,
            dispatch_entry_id: r.metadata.dispatch_entry_id === null ? null : 'D',
          }),
        )
        .sort((a, b) => (String(a.request_id) < String(b.request_id) ? -1 : 1)),
      after: o.after,
    });
  }
  // Entry ids quoted in reasons and usage problems differ too.
  const [sqlite, postgres] = outcomes.map((o) => JSON.parse(JSON.stringify(o).replace(/LED-[0-9a-f]{8}/g, 'LED')));
  assert.deepEqual(postgres, sqlite);
});

/** One sequence touching every path (scopes, cost, warn, rate, replay, errors); each step's outcome or error. */
async function sequence(port: BudgetPort, clock: { advance: (ms: number) => void }): Promise<unknown[]> {
  const out: unknown[] = [];
  const run = async (step: () => Promise<unknown>): Promise<void> => {
    try {
      out.push(await step());
    } catch (e) {
      out.push({ error: (e as { code?: string }).code, message: (e as Error).message });
    }
    clock.advance(700);
  };
  const ids = { work_order_id: 'WO1', agent_id: 'A1', budget_scope: 'K1' };
  for (let i = 0; i < 6; i += 1) await run(() => port.reserve(request(`q${i}`, ids)));
  await run(() => port.reserve(request('q0', ids)));
  await run(() => port.reserve(request('q0')));
  await run(() =>
    port.settle({ request_id: 'q0', usage: { input_tokens: 90, output_tokens: 45, cache_read_tokens: 7 } }),
  );
  await run(() =>
    port.settle({ request_id: 'q0', usage: { input_tokens: 90, output_tokens: 45, cache_read_tokens: 7 } }),
  );
  await run(() => port.settle({ request_id: 'q1', usage: { input_tokens: 'lots' } }));
  await run(() => port.settle({ request_id: 'q2', usage: { input_tokens: 5000, output_tokens: 5000 } }));
  await run(() => port.release('q3'));
  await run(() => port.release('q3'));
  await run(() => port.chargeUnknown('q4', 'lost', { dispatch_entry_id: null }));
  await run(() => port.reserve(request('big', { ...ids, max_output_tokens: 4000 })));
  await run(() => port.reserve(request('other', { session_id: 'S2', agent_id: 'A1', budget_scope: 'K1' })));
  await run(() => port.settle({ request_id: 'never', usage: {} }));
  await run(() => port.stalePending(T0 + 60_000));
  return out;
}

test('the same steps with the same clock give deep-equal outcomes on SQLite and PostgreSQL', {
  skip: skipPg,
}, async () => {
  for (const mode of ['enforce', 'warn'] as const) {
    const cfg = config({
      mode,
      limits: {
        session: { default: { max_tokens: 2000 } },
        work_order: { default: { max_cost: 0.004 } },
        agent: { by_id: { A1: { max_tokens: 900 } } },
        key: { default: { max_tokens: 1500 } },
      },
      rate_limits: { agent: { window_ms: 3000, max_requests: 3 }, key: { window_ms: 10_000, max_tokens: 5000 } },
    });
    const results: unknown[][] = [];
    for (const backend of backends) {
      const clock = clockAt();
      const { port } = await backend.fresh(cfg, clock.now);
      try {
        results.push(await sequence(port, clock));
      } finally {
        await port.close();
      }
    }
    assert.deepEqual(results[1], results[0], `mode ${mode}`);
    // The sequence did reach refusals and warnings, not only grants.
    const text = JSON.stringify(results[0]);
    assert.ok(text.includes(mode === 'enforce' ? 'RATE_LIMITED' : '"WARNED"'), text.slice(0, 400));
  }
});

test('three hosts racing 300 reserves against a limit for 100 calls: exactly 100 granted, never overspent', {
  skip: skipPg,
}, async () => {
  const limit = 100 * 150;
  const { port, open } = await (backends[1] as Backend).fresh(
    config({ limits: { session: { default: { max_tokens: limit } } } }),
  );
  const hosts = [port, await open(), await open()] as PgBudgeterT[];
  try {
    const outcomes = await Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        (hosts[i % 3] as PgBudgeterT).reserve(request(`h${i % 3}-${Math.floor(i / 3)}`)),
      ),
    );
    const granted = outcomes.filter((o) => o.ok);
    assert.equal(granted.length, 100);
    assert.equal(outcomes.filter((o) => !o.ok && o.code === 'BUDGET_EXHAUSTED').length, 200);
    const totals = async (): Promise<{ reserved: number; settled: number }> => {
      const r = await (hosts[0] as PgBudgeterT).pool.query(
        "SELECT reserved_tokens, settled_tokens FROM cplane_budget_scope_totals WHERE kind = 'session'",
      );
      return { reserved: Number(r.rows[0]?.reserved_tokens), settled: Number(r.rows[0]?.settled_tokens) };
    };
    assert.deepEqual(await totals(), { reserved: limit, settled: 0 });
    await Promise.all(
      granted.map((g, i) =>
        (hosts[i % 3] as PgBudgeterT).settle({
          request_id: g.ok ? g.reservation.request_id : '',
          usage: { input_tokens: 100, output_tokens: 50 },
        }),
      ),
    );
    assert.deepEqual(await totals(), { reserved: 0, settled: limit });
    assert.equal((await port.reserve(request('one-more'))).ok, false);
  } finally {
    for (const h of hosts) await h.close();
  }
});

test('three hosts mixing reserve, settle and release over overlapping scopes: no deadlock, a shared key never overspent', {
  skip: skipPg,
}, async () => {
  const keyLimit = 60 * 150;
  const { port, open } = await (backends[1] as Backend).fresh(
    config({ limits: { key: { default: { max_tokens: keyLimit } }, agent: { default: { max_tokens: 40 * 150 } } } }),
  );
  const hosts = [port, await open(), await open()] as PgBudgeterT[];
  try {
    // Each call charges its session, work order, agent and the one key: lock sets that overlap in every way.
    const calls = Array.from({ length: 240 }, async (_, i) => {
      const host = hosts[i % 3] as PgBudgeterT;
      const id = `m${i}`;
      const ids = { session_id: `S${i % 2}`, work_order_id: `WO${i % 3}`, agent_id: `A${i % 5}`, budget_scope: 'K1' };
      const reserved = await host.reserve(request(id, ids));
      if (!reserved.ok) return 'refused';
      if (i % 4 === 0) {
        await (hosts[(i + 1) % 3] as PgBudgeterT).release(id);
        return 'released';
      }
      await (hosts[(i + 2) % 3] as PgBudgeterT).settle({
        request_id: id,
        usage: { input_tokens: 100, output_tokens: 50 },
      });
      return 'settled';
    });
    const results = await Promise.all(calls);
    const settled = results.filter((r) => r === 'settled').length;
    const rows = (
      await (hosts[0] as PgBudgeterT).pool.query(
        'SELECT kind, SUM(reserved_tokens)::bigint AS reserved, SUM(settled_tokens)::bigint AS settled FROM cplane_budget_scope_totals GROUP BY kind ORDER BY kind',
      )
    ).rows.map((r) => [r.kind, Number(r.reserved), Number(r.settled)]);
    // Every kind counts the same calls; nothing is left reserved; the key's limit holds.
    for (const [, reserved, total] of rows) {
      assert.equal(reserved, 0);
      assert.equal(total, settled * 150);
    }
    assert.ok(settled * 150 <= keyLimit);
    assert.ok(results.includes('refused') && results.includes('released'), results.join(','));
    const agents = await (hosts[0] as PgBudgeterT).pool.query(
      "SELECT MAX(settled_tokens)::bigint AS most FROM cplane_budget_scope_totals WHERE kind = 'agent'",
    );
    assert.ok(Number(agents.rows[0]?.most) <= 40 * 150);
  } finally {
    for (const h of hosts) await h.close();
  }
});

test('PostgreSQL: a shared pool stays open; no password in the URL; a server away is ERR_STORE_UNAVAILABLE', {
  skip: skipPg,
}, async () => {
  const url = await createDatabase(server as PgServer, `budget_${(databases += 1)}`);
  await assert.rejects(PgBudgeter.open(url, { config: config() }), coded('ERR_BUDGET_DB'));
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  try {
    const shared = await PgBudgeter.open(pool, { config: config(), create: true });
    assert.equal((await shared.reserve(request('r1'))).ok, true);
    await shared.close();
    assert.equal((await pool.query('SELECT count(*)::int AS n FROM cplane_budget_reservations')).rows[0]?.n, 1);
    const reopened = await PgBudgeter.open(url, { config: config() });
    assert.equal((await reopened.reserve(request('r1'))).ok, true);
    await reopened.close();
  } finally {
    await pool.end();
  }
  await assert.rejects(
    PgBudgeter.open('postgres://cplane:hunter2@127.0.0.1:1/cplane', { config: config() }),
    (e: unknown) => coded('ERR_STORE_URL')(e) && !(e as Error).message.includes('hunter2'),
  );
  await assert.rejects(
    PgBudgeter.open('postgres://cplane@127.0.0.1:1/cplane', { config: config() }),
    coded('ERR_STORE_UNAVAILABLE'),
  );
  await assert.rejects(PgBudgeter.open(url, { config: { mode: 'enforce' } }), coded('ERR_BUDGET_CONFIG_INVALID'));
});

test('a PostgreSQL budget an earlier cplane laid out (format_version 2) opens and charges as before', {
  skip: skipPg,
}, async () => {
  const url = await createDatabase(server as PgServer, `budget_${(databases += 1)}`);
  const first = await PgBudgeter.open(url, { config: config(), create: true });
  assert.equal((await first.reserve(request('r1'))).ok, true);
  await first.close();
  // What cplane wrote before the SQLite file's layout changed (its tables here are the same).
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  try {
    await pool.query("UPDATE cplane_budget_meta SET value = '2' WHERE key = 'format_version'");
  } finally {
    await pool.end();
  }
  const reopened = await PgBudgeter.open(url, { config: config() });
  try {
    assert.equal((await reopened.reserve(request('r2'))).ok, true);
    assert.equal(
      (await reopened.settle({ request_id: 'r1', usage: { input_tokens: 1, output_tokens: 1 } })).replayed,
      false,
    );
  } finally {
    await reopened.close();
  }
});

test('a SQLite budget copies into PostgreSQL; a rerun adds only the reservations made since, each counted once', {
  skip: skipPg,
}, async () => {
  const cfg = config({ limits: { session: { default: { max_tokens: 1000 } } } });
  const dbPath = join(work, `budget-${(databases += 1)}.sqlite`);
  const sqlite = Budgeter.open({ dbPath, config: cfg });
  const url = await createDatabase(server as PgServer, `budget_${(databases += 1)}`);
  const target = await PgBudgeter.open(url, { config: cfg, create: true });
  const session = async (): Promise<Record<string, number>> => {
    const r = await target.pool.query(
      "SELECT reserved_tokens, settled_tokens, requests, unknown_cost_requests FROM cplane_budget_scope_totals WHERE kind = 'session'",
    );
    return Object.fromEntries(Object.entries(r.rows[0] ?? {}).map(([k, v]) => [k, Number(v)]));
  };
  try {
    const ids = { work_order_id: 'WO1', agent_id: 'A1', budget_scope: 'K1' };
    sqlite.reserve(request('r1', ids));
    sqlite.reserve(request('r2', ids));
    sqlite.reserve(request('r3'));
    sqlite.reserve(request('r5', ids));
    sqlite.settle({ request_id: 'r1', usage });
    sqlite.release('r2');
    sqlite.chargeUnknown('r5', 'lost', {}, null);
    const first = await copyBudgetState(dbPath, target);
    assert.deepEqual(first, {
      reservations: 4,
      reservations_present: 0,
      scopes: 4,
      rate_windows: 0,
      scopes_differing: 0,
      kept_records: 3,
    });
    // The records no ledger took yet (no ledger here at all) go with them, for the store's passes to deliver.
    assert.deepEqual(
      (await target.recordsDue(Date.now() + 60_000)).map((r) => [r.request_id, r.records.map((x) => x.event_type)]),
      [
        ['r1', ['BUDGET_SETTLED']],
        ['r2', ['BUDGET_RELEASED']],
        ['r5', ['BUDGET_SETTLED']],
      ],
    );
    // Every scope's totals are the SQLite file's.
    const file = new Database(dbPath, { readonly: true });
    const expected = file.prepare('SELECT * FROM scope_totals ORDER BY scope').all();
    file.close();
    const copied = (await target.pool.query('SELECT * FROM cplane_budget_scope_totals ORDER BY scope')).rows.map((r) =>
      Object.fromEntries(
        Object.entries(r).map(([k, v]) => [k, typeof v === 'string' && /^[0-9]+$/.test(v) ? Number(v) : v]),
      ),
    );
    assert.deepEqual(copied, expected);
    const again = await copyBudgetState(dbPath, target);
    assert.deepEqual(again, {
      reservations: 0,
      reservations_present: 4,
      scopes: 0,
      rate_windows: 0,
      scopes_differing: 0,
      kept_records: 0,
    });
    assert.deepEqual(await session(), {
      reserved_tokens: 150,
      settled_tokens: 250,
      requests: 3,
      unknown_cost_requests: 1,
    });
    // SQLite kept taking calls: r4 is new, r3 settled there after it was copied pending.
    sqlite.reserve(request('r4'));
    sqlite.settle({ request_id: 'r3', usage });
    const third = await copyBudgetState(dbPath, target);
    assert.equal(third.reservations, 1);
    assert.equal(third.reservations_present, 4);
    // r4 counted once; r3 still pending in PostgreSQL, charged in full (over, never under) until settled there.
    assert.deepEqual(await session(), {
      reserved_tokens: 300,
      settled_tokens: 250,
      requests: 4,
      unknown_cost_requests: 1,
    });
    await target.settle({ request_id: 'r3', usage });
    assert.deepEqual(await session(), {
      reserved_tokens: 150,
      settled_tokens: 350,
      requests: 4,
      unknown_cost_requests: 1,
    });
  } finally {
    sqlite.close();
    await target.close();
  }
});

test('a PostgreSQL step reading a row it did not lock is a bug, refused as ERR_INTERNAL', () => {
  const mine = scopeKeyOf('session', 'S1', '', '');
  const other = scopeKeyOf('session', 'S2', '', '');
  const state = new SnapshotState(new Map([['r1', undefined]]), [mine], [], new Map());
  assert.equal(state.totals([mine])[0]?.reserved_tokens, 0);
  assert.equal(state.window(mine), undefined);
  assert.throws(() => state.getReservation('r2'), coded('ERR_INTERNAL'));
  assert.throws(() => state.totals([other]), coded('ERR_INTERNAL'));
  assert.throws(() => state.addTotals([other], { requests: 1 }), coded('ERR_INTERNAL'));
  assert.throws(() => state.window(other), coded('ERR_INTERNAL'));
  assert.throws(() => state.putWindow(other, { window_start: 0, requests: 1, tokens: 1 }), coded('ERR_INTERNAL'));
});

// Last: it stops the server under the budgeter and starts it again.
test('a server going away mid-use is ERR_STORE_UNAVAILABLE; the same budgeter works once it is back', {
  skip: skipPg,
}, async () => {
  const { port } = await (backends[1] as Backend).fresh(config());
  try {
    assert.equal((await port.reserve(request('r1'))).ok, true);
    (server as PgServer).halt();
    try {
      await assert.rejects(port.reserve(request('r2')), coded('ERR_STORE_UNAVAILABLE'));
      await assert.rejects(port.stalePending(T0), coded('ERR_STORE_UNAVAILABLE'));
    } finally {
      (server as PgServer).start();
    }
    assert.equal((await port.reserve(request('r2'))).ok, true);
    assert.equal((await port.settle({ request_id: 'r1', usage })).reservation.state, 'settled');
  } finally {
    await port.close();
  }
});
