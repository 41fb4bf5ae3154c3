// route() cost: with a durable ledger against the two appends it must make, and with relaxed durability
// its overhead over calling the provider directly.
import { join } from 'node:path';
import type { Ledger } from '../../../staging/PKG-KERNEL-001/HOT/kernel/ledger/index.js';
import type { Router } from '../../../staging/PKG-ROUTER-001/HOT/router/router.js';
import { fromDevRoot } from '../../lib/dev-root.js';
import { defineSuite, growthRow, percentile, timeEach, timeEachAsync, type BenchRow } from '../row.js';

const ledgerModule =
  await fromDevRoot<typeof import('../../../staging/PKG-KERNEL-001/HOT/kernel/ledger/index.js')>(
    'HOT/kernel/ledger/index.js',
  );
const routerModule =
  await fromDevRoot<typeof import('../../../staging/PKG-ROUTER-001/HOT/router/router.js')>('HOT/router/router.js');
const recordsModule =
  await fromDevRoot<typeof import('../../../staging/PKG-ROUTER-001/HOT/router/records.js')>('HOT/router/records.js');
const configModule =
  await fromDevRoot<typeof import('../../../staging/PKG-ROUTER-001/HOT/router/config.js')>('HOT/router/config.js');

const mockModule = await fromDevRoot<
  typeof import('../../../staging/PKG-PROVIDER-MOCK-001/HOT/providers/mock/provider.js')
>('HOT/providers/mock/provider.js');
const provider = new mockModule.MockProvider({ defaultResponse: 'The answer is 42' });
const request = (i: number): Record<string, unknown> => ({
  prompt: `bench prompt ${i}: what is six times seven?`,
  contract_id: 'PRC-BENCH',
  agent_id: 'AGENT-BENCH',
  session_id: `SES-${i % 16}`,
});

function openRouter(path: string, synchronous: 'FULL' | 'OFF'): { ledger: Ledger; router: Router } {
  const ledger = ledgerModule.Ledger.open(path, { create: true, synchronous });
  const router = new routerModule.Router({
    ledger,
    config: configModule.loadRouterConfig(),
    providers: [provider],
    devMode: true,
  });
  return { ledger, router };
}

export default defineSuite({
  name: 'router',
  async run({ quick, tmp, log }) {
    const n = quick ? 200 : 1000;
    const rows: BenchRow[] = [];

    const durable = openRouter(join(tmp, 'durable.sqlite'), 'FULL');
    // The baseline appends exactly the records route() must make, built by the router's own record builders.
    const answer = await provider.send({ model: 'mock-model-1', prompt: 'x', max_tokens: 1024 }, { timeoutMs: 60_000 });
    // Interleaved, so both see the same database size and the same WAL checkpoints.
    const appendPairs: number[] = [];
    const durableRoutes: number[] = [];
    for (let i = 0; i < n; i += 1) {
      appendPairs.push(
        ...timeEach(1, () => {
          const req = {
            ...request(i),
            contract_id: 'PRC-BENCH',
            agent_id: 'AGENT-BENCH',
            session_id: `SES-${i % 16}`,
            prompt: String(request(i).prompt),
          };
          const dispatch = durable.ledger.append(recordsModule.dispatchRecord(req, 'mock', 'mock-model-1'));
          const attempts = [
            { attempt: 1, outcome: 'success' as const, status: null, kind: null, latency_ms: 0, retry_after_ms: null },
          ];
          durable.ledger.append(
            recordsModule.exchangeRecord(
              {
                request: req,
                dispatchEntryId: dispatch.id,
                contextHash: 'a'.repeat(64),
                modelId: 'mock-model-1',
                latencyMs: 0,
                attempts,
              },
              answer,
            ),
          );
        }),
      );
      durableRoutes.push(
        ...(await timeEachAsync(1, async () => {
          await durable.router.route(request(i));
        })),
      );
    }
    durable.ledger.close();
    const routeP50 = percentile(durableRoutes, 50);
    const pairP50 = percentile(appendPairs, 50);
    rows.push({
      name: 'route_durable_vs_two_appends',
      value: routeP50,
      unit: 'ms p50',
      baseline: pairP50,
      ratio: routeP50 / pairP50,
      target: '<= 1.25',
      ok: routeP50 / pairP50 <= 1.25,
    });

    const relaxed = openRouter(join(tmp, 'relaxed.sqlite'), 'OFF');
    const m = quick ? 2000 : 10000;
    await timeEachAsync(200, async (i) => {
      await relaxed.router.route(request(i));
    });
    const direct = await timeEachAsync(m, async (i) => {
      await provider.send(
        { model: 'mock-model-1', prompt: String(request(i).prompt), max_tokens: 1024 },
        { timeoutMs: 60_000 },
      );
    });
    const routed = await timeEachAsync(m, async (i) => {
      await relaxed.router.route(request(i));
    });
    relaxed.ledger.close();
    for (const [p, target] of [
      [50, 150],
      [99, 1000],
    ] as const) {
      const overheadUs = (percentile(routed, p) - percentile(direct, p)) * 1000;
      rows.push({
        name: `route_overhead_p${p}`,
        value: overheadUs,
        unit: 'µs',
        baseline: percentile(direct, p) * 1000,
        ratio: null,
        target: `<= ${target} µs`,
        ok: overheadUs <= target,
      });
    }
    rows.push(await growth(join(tmp, 'growth.sqlite'), quick ? 5_000 : 50_000, log));
    return rows;
  },
});

/** One system prompt and a distinct question of one length (the piece memo's worst case), 64 sessions. */
const SYSTEM = 'You are a careful assistant. Answer briefly and cite the file you read. '.repeat(20);
const growthRequest = (i: number): Record<string, unknown> => ({
  prompt: `${SYSTEM}Question ${String(i).padStart(7, '0')}: what does this function return?`,
  contract_id: 'PRC-BENCH',
  agent_id: 'AGENT-BENCH',
  session_id: `SES-${i % 64}`,
});

/**
 * route_overhead_growth: route()'s overhead over the provider over its last 1,000 of `calls` calls against its
 * first 1,000 (relaxed ledger); each timed call beside a direct one, the calls between only build the history.
 */
async function growth(path: string, calls: number, log: (line: string) => void): Promise<BenchRow> {
  const started = Date.now();
  const { ledger, router } = openRouter(path, 'OFF');
  const window = async (from: number): Promise<number> => {
    const direct: number[] = [];
    const routed: number[] = [];
    for (let i = from; i < from + 1000; i += 1) {
      const request = growthRequest(i);
      direct.push(
        ...(await timeEachAsync(1, async () => {
          await provider.send(
            { model: 'mock-model-1', prompt: String(request.prompt), max_tokens: 1024 },
            { timeoutMs: 60_000 },
          );
        })),
      );
      routed.push(...(await timeEachAsync(1, () => router.route(request).then(() => {}))));
    }
    return percentile(routed, 50) - percentile(direct, 50);
  };
  try {
    const first = await window(0);
    for (let i = 1000; i < calls - 1000; i += 1) await router.route(growthRequest(i));
    const last = await window(calls - 1000);
    log(`bench: route_overhead_growth took ${((Date.now() - started) / 1000).toFixed(0)} s for ${calls} calls`);
    return growthRow('route_overhead_growth', calls, first, last);
  } finally {
    ledger.close();
  }
}
