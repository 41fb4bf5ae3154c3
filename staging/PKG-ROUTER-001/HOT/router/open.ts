import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { writeFileAtomic } from '../kernel/atomic.js';
import { CpError, show } from '../kernel/errors.js';
import { READ_LIMITS, readTextBounded } from '../kernel/bounded-read.js';
import { assertRootShape } from '../kernel/root/shape.js';
import { Ledger, ledgerPathForRoot, type Synchronous } from '../kernel/ledger/index.js';
import { Budgeter } from '../budgeter/index.js';
import { reconcileStaleReservations } from '../budgeter/reconcile.js';
import type { Provider } from '../providers/spec.js';
import type { AuthKeys } from './auth.js';
import type { BreakerSnapshot } from './breaker.js';
import { routerCheckpointer } from './checkpoints.js';
import { loadRouterConfigForRoot } from './config.js';
import { revocationList } from './revocations.js';
import { authKeysFor, providerSettings, type ProviderSettings } from './secrets.js';
import { Router } from './router.js';
import { spoolDirs } from './spool.js';

/** Provider packages the router can use when they are installed in the root (module, export, options). */
const PROVIDER_MODULES = [
  { id: 'mock', module: 'providers/mock/provider.js', export: 'MockProvider' },
  { id: 'anthropic', module: 'providers/anthropic/provider.js', export: 'AnthropicProvider' },
  { id: 'openai', module: 'providers/openai/provider.js', export: 'OpenAiProvider' },
] as const;

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
}

export interface OpenedRouter {
  router: Router;
  ledger: Ledger;
  /** Saves breaker state and closes; returns what failed (as warnings) instead of throwing. */
  close(): string[];
}

/** Auth keys without a root: $CPLANE_AUTH_SECRET is the "default" key (a root's config may name another source). */
export function authKeysFrom(env: NodeJS.ProcessEnv): AuthKeys {
  return authKeysFor(null, undefined, env);
}

export function breakerStatePath(root: string): string {
  return join(root, 'HOT', 'registries', 'breakers.json');
}

export function readBreakerStates(path: string): BreakerSnapshot[] {
  try {
    return JSON.parse(readTextBounded(path, { maxBytes: READ_LIMITS.state, what: 'the breaker state' })) as BreakerSnapshot[];
  } catch {
    return [];
  }
}

/** The router of an installed root: its config, its ledger, its installed providers, its breaker states. */
export async function openRouter(root: string, options: OpenRouterOptions): Promise<OpenedRouter> {
  assertRootShape(root);
  const hot = join(root, 'HOT');
  if (!existsSync(join(hot, 'config', 'router.json'))) {
    throw new CpError('ERR_ROOT_NOT_A_ROOT', `${show(root)} has no router installed (no HOT/config/router.json)`, {
      hint: 'bootstrap the root first (cplane bootstrap --root R), or check --root', details: { root },
    });
  }
  const config = loadRouterConfigForRoot(root);
  const env = options.env ?? process.env;
  const settings = options.provider === 'mock' ? null : providerSettings(root, options.provider, env);
  const provider = await loadProvider(hot, options, settings?.config ?? {});
  const ledger = Ledger.open(options.ledgerPath ?? ledgerPathForRoot(root), { create: true, synchronous: options.synchronous ?? 'FULL' });
  // A scratch ledger (the G7 gate) gets no budget: it must not spend the root's.
  const budget = options.ledgerPath ? null : Budgeter.open({ root });
  const spool = options.ledgerPath ? null : spoolDirs(root);
  const router = new Router({
    ledger, config, providers: [provider], budget, devMode: options.devMode ?? false,
    authKeys: authKeysFor(root, config.auth, env),
    revocations: options.ledgerPath ? null : revocationList(root),
    spoolDir: spool?.dir ?? null, spoolQuarantineDir: spool?.quarantineDir ?? null,
    // The keys the HTTP providers read from the environment: scrubbed from every record if echoed back.
    secrets: [env.ANTHROPIC_API_KEY, env.OPENAI_API_KEY, settings?.config.api_key],
    // A scratch ledger (the G7 gate) is not the root's: nothing to checkpoint.
    ...(options.ledgerPath ? {} : { afterRoute: routerCheckpointer({ root, ledger, config: config.checkpoint }) }),
  });
  const statePath = options.breakerStatePath !== undefined ? options.breakerStatePath : options.ledgerPath ? null : breakerStatePath(root);
  if (statePath) router.breakers.restore(readBreakerStates(statePath));
  if (!options.ledgerPath) router.recoverSpool();
  if (budget) reconcileStaleReservations(budget, ledger);
  return {
    router,
    ledger,
    close() {
      // Runs after an answer may already be in hand: a failure here is reported, never lets it be lost.
      const problems: string[] = [];
      const attempt = (what: string, fn: () => void): void => {
        try {
          fn();
        } catch (error) {
          problems.push(`${what}: ${error instanceof Error ? error.message : String(error)}`);
        }
      };
      if (statePath) attempt('BREAKER_STATE_NOT_SAVED', () => writeFileAtomic(statePath, `${JSON.stringify(router.breakerStates(), null, 2)}\n`));
      if (budget) attempt('BUDGET_CLOSE_FAILED', () => budget.close());
      attempt('LEDGER_CLOSE_FAILED', () => ledger.close());
      return problems;
    },
  };
}

async function loadProvider(
  hot: string,
  options: OpenRouterOptions,
  config: ProviderSettings['config'],
): Promise<Provider> {
  const known = PROVIDER_MODULES.find((p) => p.id === options.provider);
  const installed = PROVIDER_MODULES.filter((p) => existsSync(join(hot, p.module))).map((p) => p.id);
  if (!known || !installed.includes(known.id)) {
    throw new CpError('ERR_ROUTER_PROVIDER_UNAVAILABLE', `provider ${show(options.provider)} is not installed in this root`, {
      hint: `installed providers: ${installed.join(', ') || 'none'}`, details: { provider: options.provider, installed },
    });
  }
  const mod = (await import(pathToFileURL(join(hot, known.module)).href)) as Record<string, new (o: Record<string, unknown>) => Provider>;
  const Ctor = mod[known.export] as new (o: Record<string, unknown>) => Provider;
  return known.id === 'mock'
    ? new Ctor({ defaultResponse: options.mockResponse ?? 'Mock response' })
    : new Ctor({ env: options.env ?? process.env, config });
}
