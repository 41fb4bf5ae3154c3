// budget_cycle_vs_durable_append: one reserve + settle (budget DB in WAL, synchronous=NORMAL, records
// returned for the caller to batch) against one durable kernel-ledger append (synchronous=FULL), both
// measured in this run. The router's budget work must stay small next to its two durable appends.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DEV_ROOT } from '../../lib/repo.js';
import { countingRows, reservationRows } from '../reservation-rows.js';
import { defineSuite, medianOf, percentile, timeEach } from '../row.js';
import type * as BudgeterModule from '../../../staging/PKG-BUDGETER-001/HOT/budgeter/index.js';
import type * as LedgerModule from '../../../staging/PKG-KERNEL-001/HOT/kernel/ledger/index.js';

const CONFIG = {
  schema_version: '1',
  mode: 'enforce',
  currency: 'USD',
  durability: 'normal',
  pricing: {
    'gpt-4.1': {
      input_per_mtok: 2,
      output_per_mtok: 8,
      cache_read_per_mtok: 0.5,
      cache_write_5m_per_mtok: 2,
      cache_write_1h_per_mtok: 2,
    },
    'claude-sonnet-4-5': {
      input_per_mtok: 3,
      output_per_mtok: 15,
      cache_read_per_mtok: 0.3,
      cache_write_5m_per_mtok: 3.75,
      cache_write_1h_per_mtok: 6,
    },
    mock: {
      input_per_mtok: 1,
      output_per_mtok: 5,
      cache_read_per_mtok: 0.1,
      cache_write_5m_per_mtok: 1.25,
      cache_write_1h_per_mtok: 2,
    },
  },
  limits: { session: { default: { max_tokens: 1e12, max_cost: 1e6 } }, work_order: { default: { max_tokens: 1e12 } } },
  rate_limits: { session: { window_ms: 60_000, max_requests: 1e9 } },
};

export default defineSuite({
  name: 'budgeter',
  async run({ quick, tmp, log }) {
    const hot = join(DEV_ROOT, 'HOT');
    const { Budgeter } = (await import(pathToFileURL(join(hot, 'budgeter', 'index.js')).href)) as typeof BudgeterModule;
    const { Ledger } = (await import(
      pathToFileURL(join(hot, 'kernel', 'ledger', 'index.js')).href
    )) as typeof LedgerModule;
    const n = quick ? 200 : 2000;
    const rounds = quick ? 3 : 5;
    const cycles: number[] = [];
    const appends: number[] = [];
    for (let round = 0; round < rounds; round += 1) {
      const budgeter = Budgeter.open({ dbPath: join(tmp, `budget-${round}.sqlite`), config: CONFIG });
      const ledger = Ledger.open(join(tmp, `ledger-${round}.sqlite`), { create: true, synchronous: 'FULL' });
      try {
        const cycle = timeEach(n, (i) => {
          const id = `R${round}-${i}`;
          budgeter.reserve({
            request_id: id,
            session_id: `S${i % 8}`,
            work_order_id: 'WO',
            agent_id: 'A',
            model: 'mock',
            estimated_input_tokens: 1200,
            max_output_tokens: 400,
          });
          budgeter.settle({
            request_id: id,
            usage: { input_tokens: 1100, output_tokens: 300, cache_read_tokens: 5000 },
          });
          // As the router does once the settlement's record is in the ledger: its kept copy goes with the next step.
          budgeter.recorded([id]);
        });
        const append = timeEach(n, (i) => {
          ledger.append({
            event_type: 'DISPATCH',
            submission_id: `C${i}`,
            decision: 'DISPATCHED',
            reason: 'bench',
            metadata: { session_id: `S${i % 8}`, agent_id: 'A', contract_id: `C${i}` },
          });
        });
        cycles.push(percentile(cycle, 50));
        appends.push(percentile(append, 50));
      } finally {
        budgeter.close();
        ledger.db.close();
      }
    }
    const cycleMs = medianOf(cycles);
    const appendMs = medianOf(appends);
    log(
      `budgeter: reserve+settle p50 ${(cycleMs * 1000).toFixed(1)} µs, durable append p50 ${(appendMs * 1000).toFixed(1)} µs`,
    );
    const ratio = cycleMs / appendMs;
    // Counting first: its cold count is of texts the tokenizer has not seen (its merge cache is the process's).
    const counting = await countingRows(log);
    const sessionBudget = Budgeter.open({ dbPath: join(tmp, 'budget-session.sqlite'), config: CONFIG });
    let reservationRowsOut: Awaited<ReturnType<typeof reservationRows>>;
    try {
      reservationRowsOut = await reservationRows(sessionBudget, quick ? 20 : 40, log);
    } finally {
      sessionBudget.close();
    }
    return [
      ...reservationRowsOut,
      ...counting,
      {
        name: 'budget_cycle_vs_durable_append',
        value: cycleMs * 1000,
        unit: 'µs',
        baseline: appendMs * 1000,
        ratio,
        target: '<= 0.25',
        ok: ratio <= 0.25,
      },
    ];
  },
});
