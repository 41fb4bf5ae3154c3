// The gateway the benches drive in-process: the dev root's router, budgeter, Anthropic provider and Gateway at a
// durability level (default the router config's, `full`), in front of a local upstream.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Ledger as LedgerT } from '../../../staging/PKG-KERNEL-001/HOT/kernel/ledger/index.js';
import { fromDevRoot } from '../../lib/dev-root.js';
import { DEV_ROOT } from '../../lib/repo.js';
import { UPSTREAM_KEY } from './anthropic-reply.js';

export const { Ledger } =
  await fromDevRoot<typeof import('../../../staging/PKG-KERNEL-001/HOT/kernel/ledger/index.js')>(
    'HOT/kernel/ledger/index.js',
  );
const { Budgeter } =
  await fromDevRoot<typeof import('../../../staging/PKG-BUDGETER-001/HOT/budgeter/index.js')>('HOT/budgeter/index.js');
const { Router } =
  await fromDevRoot<typeof import('../../../staging/PKG-ROUTER-001/HOT/router/router.js')>('HOT/router/router.js');
const { issueToken } =
  await fromDevRoot<typeof import('../../../staging/PKG-ROUTER-001/HOT/router/auth.js')>('HOT/router/auth.js');
const { durableCommits } =
  await fromDevRoot<typeof import('../../../staging/PKG-ROUTER-001/HOT/router/durability.js')>(
    'HOT/router/durability.js',
  );
const { loadRouterConfig } =
  await fromDevRoot<typeof import('../../../staging/PKG-ROUTER-001/HOT/router/config.js')>('HOT/router/config.js');
const { AnthropicProvider } = await fromDevRoot<
  typeof import('../../../staging/PKG-PROVIDER-ANTHROPIC-001/HOT/providers/anthropic/provider.js')
>('HOT/providers/anthropic/provider.js');
const { OpenAiProvider } = await fromDevRoot<
  typeof import('../../../staging/PKG-PROVIDER-OPENAI-001/HOT/providers/openai/provider.js')
>('HOT/providers/openai/provider.js');
const { Gateway } =
  await fromDevRoot<typeof import('../../../staging/PKG-GATEWAY-001/HOT/gateway/server.js')>('HOT/gateway/server.js');
const { GATEWAY_LIMITS } =
  await fromDevRoot<typeof import('../../../staging/PKG-GATEWAY-001/HOT/gateway/settings.js')>(
    'HOT/gateway/settings.js',
  );
const { GatewayTracer } =
  await fromDevRoot<typeof import('../../../staging/PKG-GATEWAY-001/HOT/gateway/traces/tracer.js')>(
    'HOT/gateway/traces/tracer.js',
  );
const { traceSettingsFromConfig } =
  await fromDevRoot<typeof import('../../../staging/PKG-GATEWAY-001/HOT/gateway/traces/config.js')>(
    'HOT/gateway/traces/config.js',
  );

const { PgLedger } = await fromDevRoot<
  typeof import('../../../staging/PKG-KERNEL-001/HOT/kernel/ledger/pg/pg-ledger.js')
>('HOT/kernel/ledger/pg/pg-ledger.js');
const { PgBudgeter } = await fromDevRoot<
  typeof import('../../../staging/PKG-BUDGETER-001/HOT/budgeter/pg/pg-budgeter.js')
>('HOT/budgeter/pg/pg-budgeter.js');

export { UPSTREAM_KEY };

export interface InProcessGateway {
  url: string;
  /** A cplane key for agent AGENT-BENCH. */
  key: string;
  /** The SQLite ledger (null on a PostgreSQL store). */
  ledger: LedgerT | null;
  /** Durable commits (fsyncs, WAL flushes) its ledger and budget store made so far, counted by the stores. */
  durableCommits(): number;
  close(): Promise<void>;
}

export async function inProcessGateway(options: {
  tmp: string;
  name: string;
  upstreamUrl: string;
  bodyLimitBytes?: number;
  /** The root's budget config, changed for the run (default: as the dev root has it). */
  budget?: (config: Record<string, unknown>) => Record<string, unknown>;
  /** A postgres:// URL: ledger and budgets there (as `cplane serve --store`) instead of SQLite files. */
  store?: string;
  /** The router config's durability (default: the config's own, `full`). */
  durability?: 'full' | 'exchange' | 'relaxed';
  /** An OpenAI-format upstream too (the same URL): `gpt-*` models go there, translated for Anthropic clients. */
  openai?: boolean;
  /** OpenTelemetry spans exported to this OTLP/HTTP URL (as `gateway.traces.endpoint`); absent: no tracer. */
  tracesUrl?: string;
}): Promise<InProcessGateway> {
  const base = JSON.parse(readFileSync(join(DEV_ROOT, 'HOT', 'config', 'budget.json'), 'utf8')) as Record<
    string,
    unknown
  >;
  const budgetConfig = options.budget ? options.budget(base) : base;
  const secret = 'bench-auth-secret-0123456789';
  let ledger: LedgerT | null = null;
  let closeStores: () => Promise<void>;
  let stores: Pick<ConstructorParameters<typeof Router>[0], 'ledger' | 'budget' | 'store'>;
  if (options.store === undefined) {
    // WAL checkpoints on worker threads, as `cplane serve` opens its stores (gateway/open.ts).
    const sqlite = Ledger.open(join(options.tmp, `${options.name}-ledger.sqlite`), {
      create: true,
      synchronous: 'FULL',
      walCheckpoints: 'background',
    });
    const budget = Budgeter.open({
      dbPath: join(options.tmp, `${options.name}-budget.sqlite`),
      config: budgetConfig,
      walCheckpoints: 'background',
    });
    ledger = sqlite;
    stores = { ledger: sqlite, budget };
    closeStores = async () => {
      budget.close();
      sqlite.close();
    };
  } else {
    const pgLedger = await PgLedger.open(options.store, { create: true, poolSize: 8 });
    const budget = await PgBudgeter.open(options.store, { config: budgetConfig, create: true, poolSize: 8 });
    stores = { store: { ledger: pgLedger, budget } };
    closeStores = async () => {
      await budget.close();
      await pgLedger.close();
    };
  }
  const traced = options.tracesUrl === undefined ? null : traceSettingsFromConfig({ endpoint: options.tracesUrl }, {});
  const tracer = traced === null ? null : new GatewayTracer(traced);
  const router = new Router({
    ...stores,
    ...(tracer === null ? {} : { observer: tracer }),
    config: { ...loadRouterConfig(), ...(options.durability === undefined ? {} : { durability: options.durability }) },
    providers: [],
    authKeys: { default: secret },
  });
  const provider = new AnthropicProvider({ config: { base_url: options.upstreamUrl, api_key: UPSTREAM_KEY }, env: {} });
  const providers = new Map<'anthropic' | 'openai', InstanceType<typeof AnthropicProvider | typeof OpenAiProvider>>([
    ['anthropic', provider],
  ]);
  if (options.openai === true)
    providers.set(
      'openai',
      new OpenAiProvider({ config: { base_url: options.upstreamUrl, api_key: UPSTREAM_KEY }, env: {} }),
    );
  const gateway = new Gateway({
    router,
    providers,
    bodyLimitBytes: options.bodyLimitBytes ?? 1 << 20,
    drainTimeoutMs: 1000,
    ...GATEWAY_LIMITS,
    upstreamTimeoutMs: 60_000,
    log: () => {},
    ready: () => null,
    ...(tracer === null ? {} : { traces: tracer }),
  });
  const address = await gateway.listen('127.0.0.1', 0);
  const now = Math.floor(Date.now() / 1000);
  const key = issueToken({ sub: 'AGENT-BENCH', scopes: ['route:*'], iat: now, exp: now + 3600 }, { default: secret });
  return {
    url: `http://127.0.0.1:${address.port}`,
    key,
    ledger,
    durableCommits: () =>
      'store' in stores && stores.store !== undefined
        ? durableCommits({ ledger: stores.store.ledger, budget: stores.store.budget })
        : durableCommits({ ledger: stores.ledger ?? null, budget: stores.budget ?? null }),
    async close() {
      await gateway.drain();
      await tracer?.shutdown().catch(() => {});
      await closeStores();
    },
  };
}
