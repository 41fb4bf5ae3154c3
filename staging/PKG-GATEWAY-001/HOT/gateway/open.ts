import type { Warning } from '#kernel/catalogue/define.js';
import { accessSync, constants } from 'node:fs';
import { isCpError, toCpError } from '#kernel/errors.js';
import { ledgerPathForRoot } from '#kernel/ledger/index.js';
import { budgetDbPathForRoot, loadBudgetConfigForRoot } from '#budgeter/config.js';
import { priceFor } from '#budgeter/pricing.js';
import { loadRouterConfigForRoot } from '#router/config.js';
import type { Provider } from '#providers/spec.js';
import { isWireProvider, type WireProvider } from '#providers/wire/spec.js';
import {
  installedProviders,
  loadInstalledProvider,
  openRouter,
  reconcileProblem,
  type InstalledProvider,
  type OpenedRouter,
} from '#router/open.js';
import { warning, warningText } from '#kernel/catalogue/define.js';
import { routerCheckpointer, storeCheckpointer } from '#router/checkpoints.js';
import { RefusalSampler } from '#router/refusal-sampler.js';
import type { Durability } from '#router/durability.js';
import { loadConsoleAssets } from './console/assets.js';
import type { ConsoleData } from './console/data.js';
import { PgConsoleData } from './console/pg-data.js';
import { SqliteConsoleData } from './console/sqlite-data.js';
import { PgBudgeter } from '#budgeter/pg/pg-budgeter.js';
import { ConsoleRoutes } from './console/routes.js';
import type { RequestLog } from './log.js';
import { GatewayMetrics } from './metrics/gateway-metrics.js';
import { type OpenedAlerts, openAlerts } from './alerts/open-alerts.js';
import { PgAlertClaims } from './alerts/pg-claims.js';
import { sqliteLedgerStore } from '#kernel/ledger/store.js';
import { gatewayTraceSettings } from './traces/config.js';
import { GatewayTracer } from './traces/tracer.js';
import { observers } from '#router/observer.js';
import { KeyAdminRoutes } from './admin-keys.js';
import { inputCountsOption } from './input-counts.js';
import { warmTokenizer } from './tokenizer-warmup.js';
import { keyAdminPorts } from './key-admin-ports.js';
import { type KeyAdminPorts, listKeys } from '#router/key-admin.js';
import type { GatewayConfig } from './settings.js';
import { type GatewayWitnesses, gatewayWitnesses } from './witnesses.js';
import { Gateway } from './server.js';
import type { Family } from './surfaces.js';
import {
  type GatewayRouting,
  gatewayRouting,
  parseRouting,
  routingProviders,
  type RoutingProviders,
} from './routing.js';

export interface OpenedGateway {
  gateway: Gateway;
  opened: OpenedRouter;
  /** Families without an upstream, and why (no key configured, provider not installed). */
  unavailable: string[];
  close(): Promise<Warning[]>;
}

/**
 * How often a gateway on a shared store settles reservations orphaned by a host that died mid-call (while the
 * others keep running), beside the pass every host makes when it opens. A reservation becomes stale after the
 * orphan timeout (5 minutes), so it is settled within 6; an idle pass is one indexed query, and the hosts take
 * turns (one pass at a time across them).
 */
export const RECONCILE_EVERY_MS = 60_000;

/**
 * The gateway of an installed root: its router (ledger, budget, breakers, auth keys) and a wire provider per
 * family whose package is installed and whose endpoint the environment configures (keys never leave it).
 */
export async function openGateway(
  root: string,
  env: NodeJS.ProcessEnv,
  /**
   * The gateway section, the durability `cplane serve --durability` asks for (else the router config's), and the
   * clock keys, revocations and budgets are judged by (tests inject one; default Date.now).
   */
  settings: GatewayConfig & { durability?: Durability; clock?: () => number },
  log: (e: RequestLog) => void,
  /** Problems met while serving that concern no one request (a failed reconciliation pass). */
  warn: (w: Warning) => void = () => {},
): Promise<OpenedGateway> {
  const { providers, constructed, unavailable } = await providerRegistry(root, env, settings.upstreams);
  const routingConfig = parseRouting(settings.routing, env);
  const deployments = routingConfig === null ? null : await routingProviders(root, env, routingConfig);
  if (deployments !== null) upstreamsOfDeployments(providers, deployments, unavailable);
  warmTokenizer(providers, deployments?.providers.values() ?? []);
  let router: OpenedRouter | null = null;
  let data: ConsoleData | null = null;
  let witnesses: GatewayWitnesses | null = null;
  const alerts = openAlerts(root, settings.alerts, env, settings.clock ?? Date.now);
  const traced = gatewayTraceSettings(settings.traces, env);
  const tracer = traced === null ? null : new GatewayTracer(traced);
  const metrics = gatewayMetrics(
    root,
    constructed,
    () => router,
    () => data,
    tracer,
    alerts,
    () => witnesses,
  );
  const opened = await openRouter(root, {
    observer: observers(metrics, tracer ?? undefined),
    ...(alerts === null ? {} : { budgetWatch: alerts.budgetWatch, onQuarantine: alerts.quarantineWatch }),
    provider: 'mock',
    providers: constructed,
    env,
    refusalSampler: new RefusalSampler({ perSecond: settings.unauthenticated_refusals_per_second }),
    store: settings.store ?? null,
    reserveWal: true,
    walCheckpoints: 'background',
    ...(settings.durability === undefined ? {} : { durability: settings.durability }),
    ...(deployments === null ? {} : { secrets: deployments.secrets }),
    ...(settings.clock === undefined ? {} : { clock: settings.clock }),
  }).catch((error: unknown) => {
    alerts?.close();
    throw error;
  });
  router = opened;
  if (alerts !== null)
    await watchForAlerts(alerts, opened).catch(async (error: unknown) => {
      alerts.close();
      await opened.close();
      throw error;
    });
  data = consoleData(root, opened, unavailable);
  const keyPorts = keyAdminPorts(root, opened, data);
  const consoleRoutes = data === null ? null : openConsole(root, opened, data, unavailable, keyPorts);
  const routing = deployments === null ? null : gatewayRouting(deployments, opened.router.breakers, modelPrice(root));
  await joinSharedStore(opened, routing, warn);
  witnesses = gatewayWitnesses(root, opened, settings, warn);
  const gateway = new Gateway({
    router: opened.router,
    providers,
    bodyLimitBytes: settings.body_limit_bytes,
    drainTimeoutMs: settings.drain_timeout_ms,
    maxConnections: settings.max_connections,
    headersTimeoutMs: settings.headers_timeout_ms,
    requestTimeoutMs: settings.request_timeout_ms,
    ...afterExchange(root, opened, settings, witnesses),
    upstreamTimeoutMs: opened.router.config.timeout_ms,
    callDeadlineMs: settings.call_deadline_ms,
    log,
    ...(consoleRoutes === null ? {} : { console: consoleRoutes }),
    ...(routing === null ? {} : { routing }),
    metrics,
    ...(tracer === null ? {} : { traces: tracer }),
    keyAdmin: new KeyAdminRoutes(opened.router, keyPorts),
    ...inputCountsOption(settings.count_input_tokens),
    ready: readiness(root, opened),
  });
  return { gateway, opened, unavailable, close: () => closeGateway(opened, alerts, tracer, witnesses) };
}

/**
 * A shared store's hooks: cooldowns shared across hosts, the spool recovered once the database answers again, and
 * orphaned reservations reconciled on a schedule. A failure to share the cooldowns closes the router and throws.
 */
async function joinSharedStore(
  opened: OpenedRouter,
  routing: GatewayRouting | null,
  warn: (w: Warning) => void,
): Promise<void> {
  const { shared } = opened;
  // On a shared store a 429 one host sees rests the deployment on every host, as its breakers are shared, and a
  // deployment's RPM/TPM is counted once across the hosts.
  if (routing !== null && shared)
    try {
      await shared.shareRouting(routing.resolver);
    } catch (error) {
      await opened.close();
      throw error;
    }
  // An answer spooled while the database was away is appended once it answers again.
  shared?.onHealthy(() => {
    if (opened.router.spooled() > 0) void opened.router.recoverSpool();
  });
  shared?.reconcileEvery(RECONCILE_EVERY_MS, (error) =>
    warn(warning('BUDGET_RECONCILE_FAILED', reconcileProblem(error))),
  );
}

/** What /readyz asks: null when the ledger and the budget store are open and writable, else what is wrong. */
function readiness(root: string, opened: OpenedRouter): () => string | null {
  const ledgerPath = ledgerPathForRoot(root);
  const budgetPath = budgetDbPathForRoot(root);
  const { shared } = opened;
  return () => {
    if (shared) return shared.problem();
    try {
      accessSync(ledgerPath, constants.W_OK);
      accessSync(budgetPath, constants.W_OK);
      opened.ledger?.head();
      return null;
    } catch (error) {
      // Said to whoever asks /readyz, without credentials: what is wrong and its code, never the root's paths.
      const code = (error as { code?: unknown } | null)?.code;
      return `the ledger or the budget file cannot be written${typeof code === 'string' ? ` (${code})` : ''}`;
    }
  };
}

/** The gateway's close: the unrecorded refusals' count summarised, then the router closed. */
async function closeGateway(
  opened: OpenedRouter,
  alerts: OpenedAlerts | null,
  tracer: GatewayTracer | null,
  witnesses: GatewayWitnesses | null,
): Promise<Warning[]> {
  const problems: Warning[] = [];
  try {
    await opened.router.flushRefusals();
  } catch (error) {
    const coded = toCpError(error);
    problems.push(
      warning('REFUSALS_NOT_SUMMARISED', `the count of unrecorded refusals was lost (${coded.code}: ${coded.message})`),
    );
  }
  alerts?.close();
  // Pushes in flight end (their retries cut short) before the ledger they read closes.
  await witnesses?.pusher.close();
  // Spans still queued get one try (bounded by the exporter's timeout) after the last call concluded.
  await tracer?.shutdown().catch(() => {});
  return [...problems, ...(await opened.close())];
}

/** The metrics observer, reading the router and the console data once they are open (the router needs it first). */
function gatewayMetrics(
  root: string,
  constructed: readonly Provider[],
  router: () => OpenedRouter | null,
  data: () => ConsoleData | null,
  tracer: GatewayTracer | null,
  alerts: OpenedAlerts | null,
  witnesses: () => GatewayWitnesses | null,
): GatewayMetrics {
  return new GatewayMetrics(
    {
      breakers: () => router()?.router.breakerStates() ?? [],
      spooled: () => router()?.router.spooled() ?? 0,
      headSeq: async () => headSeq(router()),
      budgets: async () => {
        const read = data();
        if (read === null) throw new Error('no budget data');
        return read.budgets();
      },
      ...(tracer === null ? {} : { spans: () => tracer.counts }),
      ...(alerts === null ? {} : { alerts: () => alerts.counts() }),
      witnesses: () => witnesses()?.counts() ?? [],
    },
    { models: metricModels(root), providers: ['mock', ...constructed.map((p) => p.id)] },
  );
}

/**
 * Breaker transitions go to the alert webhook, and each delivery is an ALERT_SENT record in the router's ledger. On
 * a shared store the hosts claim each alert there, so one of them sends it (gateway/alerts/pg-claims.ts).
 */
async function watchForAlerts(alerts: OpenedAlerts, opened: OpenedRouter): Promise<void> {
  opened.router.breakers.onTransition(alerts.breakerWatch);
  const chain = opened.shared?.chain ?? null;
  const claims = chain === null ? null : await PgAlertClaims.open(chain.pool);
  const ledger = opened.ledger !== null ? sqliteLedgerStore(opened.ledger) : chain;
  if (ledger !== null) alerts.recordTo((records) => ledger.appendBatch(records), claims);
}

const FAMILIES: readonly Family[] = ['anthropic', 'openai', 'gemini'];

/**
 * A family no installed provider is configured for (no key in the environment) is served by a deployment that
 * speaks it: its aliases work, and a model that is no alias goes to that deployment's upstream.
 */
function upstreamsOfDeployments(
  providers: Map<Family, WireProvider>,
  deployments: RoutingProviders,
  unavailable: string[],
): void {
  for (const provider of deployments.providers.values())
    for (const family of FAMILIES) {
      if (providers.has(family) || !provider.surfaces.some((s) => familyOfSurface(s) === family)) continue;
      providers.set(family, provider);
      const at = unavailable.findIndex((line) => line.startsWith(`${family}:`));
      if (at >= 0) unavailable.splice(at, 1);
    }
}

/** A model's price weight (input + output per Mtok) from the budget config, to reserve for a routed call's dearest target. */
function modelPrice(root: string): (model: string) => number | null {
  const config = loadBudgetConfigForRoot(root);
  return (model) => {
    const price = priceFor(config, model);
    return price === null ? null : price.input_per_mtok + price.output_per_mtok;
  };
}

/**
 * The models a metric may name: the price table's and the router's default; any other model a client asks for is
 * counted as `other`, so the number of series is fixed by the operator's config, not by clients.
 */
function metricModels(root: string): string[] {
  const models = [loadRouterConfigForRoot(root).default_model];
  try {
    models.push(...Object.keys(loadBudgetConfigForRoot(root).pricing));
  } catch {
    // A root without a readable budget config prices nothing: its models are the router's default only.
  }
  return models;
}

async function headSeq(opened: OpenedRouter | null): Promise<number | null> {
  if (opened === null) return null;
  if (opened.ledger !== null) return opened.ledger.head().seq;
  return opened.shared === null ? null : (await opened.shared.chain.headAnchor()).seq;
}

/** The API family a surface belongs to (`anthropic.messages` → anthropic), or null for one this gateway has none. */
function familyOfSurface(surface: string): Family | null {
  const prefix = surface.slice(0, surface.indexOf('.'));
  return FAMILIES.find((family) => family === prefix) ?? null;
}

/**
 * For each family, the installed providers that offer one of its surfaces, in the order they are tried: the one the
 * operator names for it (`gateway.upstreams`) alone, else the one named after the family first, then the others by
 * id, leaving out the opt-in ones. A package that serves nothing (the mock) is never a candidate.
 */
export function familyCandidates(
  installed: readonly InstalledProvider[],
  upstreams: Readonly<Partial<Record<Family, string>>> = {},
): Map<Family, string[]> {
  const byFamily = new Map<Family, string[]>();
  for (const family of FAMILIES) {
    const named = upstreams[family];
    const ids = installed
      .filter((p) => p.serves.some((surface) => familyOfSurface(surface) === family))
      .filter((p) => (named === undefined ? p.optIn !== true : p.id === named))
      .map((p) => p.id)
      .sort((a, b) => Number(b === family) - Number(a === family) || a.localeCompare(b));
    if (ids.length > 0) byFamily.set(family, ids);
  }
  return byFamily;
}

/**
 * The gateway's providers, from what is installed: each family is served by an installed package that offers its
 * surfaces (`serves`), the one named after the family first, then the others by id; a package is constructed from
 * its config section and the environment, and one that cannot be (no key configured) leaves the family to the next,
 * or unavailable, saying why.
 */
async function providerRegistry(
  root: string,
  env: NodeJS.ProcessEnv,
  upstreams: GatewayConfig['upstreams'],
): Promise<{ providers: Map<Family, WireProvider>; constructed: Provider[]; unavailable: string[] }> {
  const byFamily = familyCandidates((await installedProviders(root)).providers, upstreams);
  const providers = new Map<Family, WireProvider>();
  const constructed = new Map<string, WireProvider & Provider>();
  const unavailable: string[] = [];
  for (const family of FAMILIES) {
    const problems: string[] = [];
    for (const id of byFamily.get(family) ?? []) {
      const provider = constructed.get(id) ?? (await construct(root, id, env, problems));
      if (provider === null) continue;
      constructed.set(id, provider);
      providers.set(family, provider);
      break;
    }
    if (!providers.has(family))
      unavailable.push(
        problems.length > 0
          ? `${family}: ${problems.join('; ')}`
          : upstreams?.[family] !== undefined
            ? `${family}: gateway.upstreams names ${upstreams[family]}, which is not an installed provider serving it`
            : `${family}: no installed provider serves it`,
      );
  }
  return { providers, constructed: [...constructed.values()], unavailable };
}

/** One installed provider with its wire call, or null with the reason added to `problems`. */
async function construct(
  root: string,
  id: string,
  env: NodeJS.ProcessEnv,
  problems: string[],
): Promise<(WireProvider & Provider) | null> {
  try {
    const provider = await loadInstalledProvider(root, id, env);
    if (isWireProvider(provider)) return provider;
    problems.push(`${id}: the installed provider has no wire call`);
  } catch (error) {
    if (!isCpError(error)) throw error;
    problems.push(`${error.code}: ${error.message}`);
  }
  return null;
}

/**
 * What the console (and the key inventory's spend) reads, on the store the router writes: the root's SQLite ledger,
 * or the shared chain and budgets (through the router's own pools); null (and said why) when the router has neither.
 */
function consoleData(root: string, opened: OpenedRouter, unavailable: string[]): ConsoleData | null {
  const { ledger, shared } = opened;
  const breakers = () => opened.router.breakers.snapshot();
  if (ledger !== null) return new SqliteConsoleData({ root, ledger, breakers });
  if (shared !== null && shared.store.budget instanceof PgBudgeter)
    return new PgConsoleData({ root, ledger: shared.chain, budget: shared.store.budget, breakers });
  unavailable.push('console: this gateway has no ledger it can read');
  return null;
}

/** The read-only console on that data. */
function openConsole(
  root: string,
  opened: OpenedRouter,
  data: ConsoleData,
  unavailable: string[],
  keyPorts: KeyAdminPorts,
): ConsoleRoutes {
  const assets = loadConsoleAssets(root);
  if (!assets.ok) unavailable.push(`console: ${assets.problem}`);
  return new ConsoleRoutes({
    data,
    assets,
    verify: (token) => opened.router.verifyConsoleKey(token),
    // The keys view reads the inventory as GET /admin/keys does, on the same store.
    keys: () => listKeys(keyPorts),
  });
}

/** The gateway's checkpoint schedule (its config's `checkpoint`), run after each recorded exchange, on either store. */
function afterExchange(
  root: string,
  opened: OpenedRouter,
  settings: GatewayConfig,
  witnesses: GatewayWitnesses | null,
): { afterExchange?: () => string | null | Promise<string | null> } {
  const onWritten = witnesses === null ? {} : { onWritten: (seq: number) => witnesses.written(seq) };
  if (opened.shared) {
    // The shared chain's head, signed into this host's root (each host its own root, its own checkpoints).
    const checkpoint = storeCheckpointer({
      root,
      store: opened.shared.chain,
      config: settings.checkpoint,
      ...onWritten,
    });
    if (checkpoint === undefined) return {};
    return {
      afterExchange: async () => {
        const problem = await checkpoint();
        return problem === null ? null : warningText(problem);
      },
    };
  }
  if (opened.ledger === null) return {};
  const checkpoint = routerCheckpointer({ root, ledger: opened.ledger, config: settings.checkpoint, ...onWritten });
  if (checkpoint === undefined) return {};
  return {
    afterExchange: () => {
      const problem = checkpoint();
      return problem === null ? null : warningText(problem);
    },
  };
}
