import type { GovernedObserver } from './observer.js';
import { existsSync } from 'node:fs';
import { writeFileAtomic } from '#kernel/atomic.js';
import { type Warning, type WarningCode, warning } from '#kernel/catalogue/define.js';
import { CpError, show, toCpError } from '#kernel/errors.js';
import { READ_LIMITS, readTextBounded } from '#kernel/bounded-read.js';
import { assertRootShape } from '#kernel/root/shape.js';
import { Ledger, ledgerPathForRoot, type Synchronous } from '#kernel/ledger/index.js';
import { Budgeter, loadBudgetConfigForRoot } from '#budgeter/index.js';
import { reconcileStaleReservations } from '#budgeter/reconcile.js';
import type { BudgetCrossing } from '#budgeter/crossings.js';
import { contributionFolders, importContribution, type Contribution } from '#kernel/loader/discover.js';
import type { Provider, ProviderPackage } from '#providers/spec.js';
import type { WireSurface } from '#providers/wire/spec.js';
import type { AuthKeys } from './auth.js';
import type { BreakerSnapshot } from './breaker.js';
import { routerCheckpointer, storeCheckpointer } from './checkpoints.js';
import type { RefusalSampler } from './refusal-sampler.js';
import { BUILTIN_SECRET_PATTERNS, secretPatternsNamed, type SecretPattern } from './secret-patterns.js';
import { loadRouterConfigForRoot } from './config.js';
import { type Durability, durableCommits, parseDurability } from './durability.js';
import { effectiveMs, revocationList } from './revocations.js';
import { authKeysFor, providerSettings } from './secrets.js';
import { Router } from './router.js';
import { spoolDirs } from './spool.js';
import { openSharedStore, type SharedStore } from './pg/shared-store.js';
import { configPath, rootPaths } from '#kernel/root/layout.js';
import { effectiveConfig } from '#kernel/config/effective.js';
import { validateSection } from '#kernel/config/section-schema.js';

export interface OpenRouterOptions {
  /** Which provider to construct (only the one asked for: the HTTP ones need keys). */
  provider: string;
  devMode?: boolean;
  env?: NodeJS.ProcessEnv;
  /** The mock provider's answer (the smoke test's "The answer is 42"). */
  mockResponse?: string;
  /** Use this ledger file instead of the root's (the G7 gate checks in a scratch ledger). */
  ledgerPath?: string;
  /** Where breaker states persist between processes; default HOT/registries/breakers.json, none with a scratch ledger. */
  breakerStatePath?: string | null;
  synchronous?: Synchronous;
  /** Grow the SQLite ledger's WAL to its steady size at open: the gateway's appends then never grow the file. */
  reserveWal?: boolean;
  /** Run the SQLite ledger's and budget file's WAL checkpoints on worker threads, off the call path (kernel/ledger/wal-checkpointer.ts). */
  walCheckpoints?: 'inline' | 'background';
  /** Providers constructed by the caller (the gateway's wire providers), registered beside `provider`. */
  providers?: readonly Provider[];
  /** Refusals without an authentic key recorded at a bounded rate (the gateway's); none: all recorded. */
  refusalSampler?: RefusalSampler | null;
  /** A postgres:// URL: ledger, budgets, breaker state and revocations on a database several hosts share. */
  store?: string | null;
  /** Overrides the router config's `durability` (`cplane serve --durability`). */
  durability?: Durability;
  /** More values never written to a record (the keys of the gateway's routing deployments). */
  secrets?: readonly string[];
  /** Told of every governed call and refusal (the gateway's metrics). */
  observer?: GovernedObserver;
  /** Told of every scope a budget step took past its warn fraction or to its limit (the gateway's alerts). */
  budgetWatch?: (crossed: readonly BudgetCrossing[]) => void;
  /** Told of spooled entries a drain set aside as unreadable (their quarantine paths): the gateway's alerts. */
  onQuarantine?: (paths: readonly string[]) => void;
  /** The clock keys, revocations and budgets are judged by (tests inject one); default Date.now. */
  clock?: () => number;
}

export interface OpenedRouter {
  router: Router;
  /** The root's SQLite ledger; null when the router runs on a shared store. */
  ledger: Ledger | null;
  /** The shared store (PostgreSQL) the router runs on, if any. */
  shared: SharedStore | null;
  /** Provider packages the module loader refused: skipped, each named once. */
  warnings: Warning[];
  /** The keys this router verifies with (kid → secret): the key admin API signs new keys with them. */
  authKeys: AuthKeys;
  clock: () => number;
  /** Durable commits (fsyncs, WAL flushes) this process made through the ledger and budget store (durability.ts). */
  durableCommits(): number;
  /** Saves breaker state and closes; returns what failed (as warnings) instead of throwing. */
  close(): Promise<Warning[]>;
}

/** Auth keys without a root: $CPLANE_AUTH_SECRET is the "default" key (a root's config may name another source). */
export function authKeysFrom(env: NodeJS.ProcessEnv): AuthKeys {
  return authKeysFor(null, undefined, env);
}

export function breakerStatePath(root: string): string {
  return rootPaths(root).breakers;
}

export function readBreakerStates(path: string): BreakerSnapshot[] {
  try {
    return JSON.parse(
      readTextBounded(path, { maxBytes: READ_LIMITS.state, what: 'the breaker state' }),
    ) as BreakerSnapshot[];
  } catch {
    return [];
  }
}

/** The router of an installed root: its config, its ledger, its installed providers, its breaker states. */
export async function openRouter(root: string, options: OpenRouterOptions): Promise<OpenedRouter> {
  assertRootShape(root);
  const paths = rootPaths(root);
  if (!existsSync(configPath(root, 'router.json'))) {
    throw new CpError('ERR_ROOT_NOT_A_ROOT', `${show(root)} has no router installed (no HOT/config/router.json)`, {
      hint: 'bootstrap the root first (cplane bootstrap --root R), or check --root',
      details: { root },
    });
  }
  const rootConfig = loadRouterConfigForRoot(root);
  const config =
    options.durability === undefined
      ? rootConfig
      : { ...rootConfig, durability: parseDurability(options.durability, 'durability') };
  const env = options.env ?? process.env;
  const settings = options.provider === 'mock' ? null : providerSettings(root, options.provider, env);
  const { provider, warnings } = await loadProvider(paths.providers, options, settings?.config);
  // Everything that can refuse is read before the shared store is opened, so a refusal leaves no pool behind.
  const authKeys = authKeysFor(root, config.auth, env);
  const secretPatterns = loadSecretPatterns(root);
  const shared =
    options.store && !options.ledgerPath
      ? await openSharedStore(options.store, {
          budgetConfig: loadBudgetConfigForRoot(root),
          ...(options.clock === undefined ? {} : { clock: options.clock }),
        })
      : null;
  const ledger = shared
    ? null
    : Ledger.open(options.ledgerPath ?? ledgerPathForRoot(root), {
        create: true,
        synchronous: options.synchronous ?? 'FULL',
        reserveWal: options.reserveWal ?? false,
        walCheckpoints: options.walCheckpoints ?? 'inline',
      });
  // A scratch ledger (the G7 gate) gets no budget: it must not spend the root's.
  const budget =
    options.ledgerPath || shared
      ? null
      : Budgeter.open({
          root,
          walCheckpoints: options.walCheckpoints ?? 'inline',
          ...(options.clock === undefined ? {} : { clock: options.clock }),
        });
  // Each host spools to its own root: an answer that arrived while the shared store was away.
  const spool = options.ledgerPath ? null : spoolDirs(root);
  const router = new Router({
    ...(shared ? { store: shared.store } : { ledger: ledger as Ledger, budget }),
    config,
    providers: [provider, ...(options.providers ?? [])],
    budget,
    devMode: options.devMode ?? false,
    authKeys,
    revocations: options.ledgerPath
      ? null
      : (shared?.revocations ??
        revocationList(root, () =>
          (ledger as Ledger)
            .query({ event_type: 'KEY_REVOKED' })
            .map((e) => ({ key_id: e.submission_id, effective_ms: effectiveMs(e.metadata.effective_at) })),
        )),
    spoolDir: spool?.dir ?? null,
    spoolQuarantineDir: spool?.quarantineDir ?? null,
    // The keys the HTTP providers read from the environment: scrubbed from every record if echoed back.
    secrets: [env.ANTHROPIC_API_KEY, env.OPENAI_API_KEY, settings?.config.api_key, ...(options.secrets ?? [])],
    refusalSampler: options.refusalSampler ?? null,
    secretPatterns,
    ...(options.observer === undefined ? {} : { observer: options.observer }),
    ...(options.budgetWatch === undefined ? {} : { budgetWatch: options.budgetWatch }),
    ...(options.onQuarantine === undefined ? {} : { onQuarantine: options.onQuarantine }),
    ...(options.clock === undefined ? {} : { clock: options.clock }),
    // A scratch ledger (the G7 gate) is not the root's: nothing to checkpoint. On a shared store this root signs
    // the shared chain's head (every host its own root).
    ...(options.ledgerPath
      ? {}
      : shared
        ? { afterRoute: storeCheckpointer({ root, store: shared.chain, config: config.checkpoint }) }
        : { afterRoute: routerCheckpointer({ root, ledger: ledger as Ledger, config: config.checkpoint }) }),
  });
  // On a shared store the breaker state lives in the database, shared with the other hosts.
  const statePath = shared
    ? null
    : options.breakerStatePath !== undefined
      ? options.breakerStatePath
      : options.ledgerPath
        ? null
        : breakerStatePath(root);
  if (statePath) router.breakers.restore(readBreakerStates(statePath));
  if (shared) {
    try {
      await shared.shareBreakers(router.breakers);
    } catch (error) {
      await shared.close();
      throw error;
    }
  }
  if (!options.ledgerPath) await router.recoverSpool();
  if (budget && ledger) reconcileStaleReservations(budget, ledger);
  // As on SQLite, a host opening settles what a host that died mid-call left pending. Not fatal here: the store
  // just answered, and a pass that fails now is made again by the next host to open or by a long-running host.
  if (shared) {
    try {
      await shared.reconcile();
    } catch (error) {
      warnings.push(warning('BUDGET_RECONCILE_FAILED', reconcileProblem(error)));
    }
  }
  return {
    router,
    ledger,
    shared,
    warnings,
    authKeys,
    clock: options.clock ?? Date.now,
    durableCommits: () => (shared ? durableCommits(shared.store) : durableCommits({ ledger, budget: budget ?? null })),
    async close() {
      // Runs after an answer may already be in hand: a failure here is reported, never lets it be lost.
      const problems: Warning[] = [];
      const attempt = (what: WarningCode, fn: () => void): void => {
        try {
          fn();
        } catch (error) {
          problems.push(warning(what, error instanceof Error ? error.message : String(error)));
        }
      };
      if (statePath)
        attempt('BREAKER_STATE_NOT_SAVED', () =>
          writeFileAtomic(statePath, `${JSON.stringify(router.breakerStates(), null, 2)}\n`),
        );
      if (budget) attempt('BUDGET_CLOSE_FAILED', () => budget.close());
      if (ledger) attempt('LEDGER_CLOSE_FAILED', () => ledger.close());
      if (shared) {
        try {
          await shared.close();
        } catch (error) {
          problems.push(warning('LEDGER_CLOSE_FAILED', error instanceof Error ? error.message : String(error)));
        }
      }
      return problems;
    },
  };
}

/** Why a reconciliation pass failed, for a warning: the coded error's code and message. */
export function reconcileProblem(error: unknown): string {
  const coded = toCpError(error);
  return `orphaned budget reservations were not reconciled (${coded.code}: ${coded.message}); the next pass tries again`;
}

/** One installed provider of a root, constructed from the environment (refused when it is not installed). */
export async function loadInstalledProvider(root: string, id: string, env: NodeJS.ProcessEnv): Promise<Provider> {
  const settings = id === 'mock' ? null : providerSettings(root, id, env);
  return (await loadProvider(rootPaths(root).providers, { provider: id, env }, settings?.config)).provider;
}

/**
 * An installed provider constructed with an endpoint of the caller's ({base_url, api_key}) rather than its config
 * section's: a routing deployment of the gateway.
 */
export async function createInstalledProvider(
  root: string,
  id: string,
  env: NodeJS.ProcessEnv,
  endpoint: { base_url: string; api_key: string },
): Promise<Provider> {
  return (await loadProvider(rootPaths(root).providers, { provider: id, env }, endpoint)).provider;
}

/** A provider package installed in a root, and the surfaces it offers the gateway (`ProviderPackage.serves`). */
export interface InstalledProvider {
  id: string;
  serves: readonly WireSurface[];
  /** Serves a gateway family only when the operator names it (`ProviderPackage.optIn`). */
  optIn?: boolean;
}

/**
 * Every provider package installed in a root (discovered like commands and gates; none constructed, so no key is
 * read): the gateway builds its registry from them. One the module loader refuses, or that exports no package, is
 * left out with a warning.
 */
export async function installedProviders(
  root: string,
): Promise<{ providers: InstalledProvider[]; warnings: Warning[] }> {
  const found = contributionFolders(rootPaths(root).providers, 'provider.js');
  const providers: InstalledProvider[] = [];
  const warnings = skipped(found);
  for (const folder of found) {
    if (folder.refusal !== undefined) continue;
    const contributed = await providerPackage(folder);
    if (contributed === undefined)
      warnings.push(
        warning('PROVIDER_SKIPPED', `HOT/providers/${folder.name}/provider.js exports no provider package`),
      );
    else
      providers.push({
        id: folder.name,
        serves: contributed.serves ?? [],
        ...(contributed.optIn === true ? { optIn: true } : {}),
      });
  }
  return { providers, warnings };
}

function skipped(found: readonly Contribution[]): Warning[] {
  return found.flatMap((p) =>
    p.refusal === undefined
      ? []
      : [warning('PROVIDER_SKIPPED', `${p.refusal.code}: ${p.refusal.message} (provider ${p.name} skipped)`)],
  );
}

/** A folder's default export when it has the shape of a provider package (a `create`, and `serves` a list if any). */
async function providerPackage(folder: Contribution): Promise<ProviderPackage | undefined> {
  const contributed = (await importContribution(folder)).default as Partial<ProviderPackage> | undefined;
  if (typeof contributed?.create !== 'function') return undefined;
  if (contributed.serves !== undefined && !Array.isArray(contributed.serves)) return undefined;
  return contributed as ProviderPackage;
}

/**
 * The provider asked for, from the provider packages installed in the root (`HOT/providers/<id>/provider.js`,
 * discovered like commands and gates): only that one is imported. One the module loader refused is skipped
 * with a warning, and refused when it is the one asked for.
 */
async function loadProvider(
  providersDir: string,
  options: OpenRouterOptions,
  config?: unknown,
): Promise<{ provider: Provider; warnings: Warning[] }> {
  const found = contributionFolders(providersDir, 'provider.js');
  const warnings = skipped(found);
  const installed = found.filter((p) => p.refusal === undefined).map((p) => p.name);
  const asked = found.find((p) => p.name === options.provider);
  if (asked === undefined) {
    throw new CpError(
      'ERR_ROUTER_PROVIDER_UNAVAILABLE',
      `provider ${show(options.provider)} is not installed in this root`,
      {
        hint: `installed providers: ${installed.join(', ') || 'none'}`,
        details: { provider: options.provider, installed },
      },
    );
  }
  const contributed = await providerPackage(asked);
  const provider = contributed?.create({
    id: asked.name,
    env: options.env ?? process.env,
    ...(config === undefined ? {} : { config }),
    ...(options.mockResponse === undefined ? {} : { mockResponse: options.mockResponse }),
  });
  if (provider?.id !== asked.name) {
    throw new CpError(
      'ERR_ROUTER_PROVIDER_UNAVAILABLE',
      `provider ${show(asked.name)} does not export a provider package answering to its id (HOT/providers/${asked.name}/provider.js)`,
      {
        hint: `reinstall the package that owns HOT/providers/${asked.name}/; installed providers: ${installed.join(', ')}`,
        details: { provider: asked.name, installed },
      },
    );
  }
  return { provider, warnings };
}

/** The root's effective `scrub` section (package default with the operator's overrides); a root without one: all. */
export function loadSecretPatterns(root: string): readonly SecretPattern[] {
  if (!existsSync(configPath(root, 'scrub.json'))) return BUILTIN_SECRET_PATTERNS;
  const value = effectiveConfig(root, 'scrub');
  const verdict = validateSection(root, 'scrub', value);
  if (!verdict.ok) {
    throw new CpError(
      'ERR_ROUTER_CONFIG_INVALID',
      `the scrub config is invalid at ${verdict.pointer}: ${verdict.message}`,
      {
        hint: 'see `cplane config show scrub`; fix the override with `cplane config set` or `cplane config unset`',
        details: { section: 'scrub', pointer: verdict.pointer },
      },
    );
  }
  return secretPatternsNamed((value as { patterns: string[] }).patterns);
}
