import { PgLedger } from '#kernel/ledger/pg/pg-ledger.js';
import { PgBudgeter } from '#budgeter/pg/pg-budgeter.js';
import { reconcileSharedPass } from '#budgeter/pg/reconcile-pg.js';
import type { ReconciledReservation } from '#budgeter/reconcile.js';
import { DEFAULT_ORPHAN_TIMEOUT_MS } from '#kernel/ledger/index.js';
import type { BreakerRegistry } from '../breaker.js';
import type { RouterStore } from '../router.js';
import type { RevocationCheck } from '../revocations.js';
import { PgRevocations } from './revocations.js';
import { SharedBreakers } from './shared-breakers.js';
import { type CooldownTarget, SharedCooldowns } from './shared-cooldowns.js';
import { type LimitsTarget, SharedRateCounts } from './shared-limits.js';

/** How often a host asks the database whether it answers (readyz), and how long an answer may take. */
export const HEALTH_EVERY_MS = 1000;
const HEALTH_TIMEOUT_MS = 2000;
/**
 * Stale reservations settled in one reconciliation pass at most (oldest first): a pass holds one connection and
 * makes a few indexed queries per reservation, so a backlog (a host that died with many calls in flight) is worked
 * off over several passes instead of in one long one.
 */
export const RECONCILE_BATCH = 200;

export interface SharedStore {
  /** The ledger and budgets the router writes through. */
  store: RouterStore;
  /** The shared chain itself (its head is what this host's root checkpoints). */
  chain: PgLedger;
  revocations: RevocationCheck;
  /** This router's breakers, shared with the other hosts (opened on one, refused on all). */
  shareBreakers(registry: BreakerRegistry): Promise<void>;
  /**
   * Share the routing deployments' 429 cooldowns (router/pg/shared-cooldowns.ts) and their RPM/TPM counts
   * (router/pg/shared-limits.ts) with the other hosts.
   */
  shareRouting(target: CooldownTarget & LimitsTarget): Promise<void>;
  /** Null while the database answers, else why it does not (readyz reports not-ready). */
  problem(): string | null;
  /** Called after each health check that found the database answering (the spool is drained then). */
  onHealthy(listener: () => void): void;
  /**
   * One pass settling the reservations pending beyond the orphan timeout (their host died mid-call) as unknown
   * usage, with their BUDGET_SETTLED records; null when another host's pass was under way (it does the work).
   * One pass at a time in this process: a call while one runs shares it.
   */
  reconcile(): Promise<ReconciledReservation[] | null>;
  /**
   * Run `reconcile` every `everyMs` until close (a long-running host: a host that dies while the others keep
   * running has its reservations settled without waiting for a host to start). A pass that fails is reported to
   * `onProblem` and tried again at the next tick.
   */
  reconcileEvery(everyMs: number, onProblem: (error: unknown) => void): void;
  close(): Promise<void>;
}

/**
 * One PostgreSQL database shared by several gateway hosts: the chain, budgets, breaker state and revocations,
 * through one pool per host. The password never appears in the URL (refused there): PGPASSWORD or a .pgpass file.
 */
export async function openSharedStore(
  url: string,
  options: { budgetConfig: unknown; clock?: () => number; orphanTimeoutMs?: number },
): Promise<SharedStore> {
  const clock = options.clock ?? Date.now;
  const ledger = await PgLedger.open(url, { create: true, clock, poolSize: 8 });
  let budget: PgBudgeter | null = null;
  let revocations: PgRevocations | null = null;
  let breakers: SharedBreakers | null = null;
  let cooldowns: SharedCooldowns | null = null;
  let limits: { counts: SharedRateCounts; target: LimitsTarget } | null = null;
  try {
    budget = await PgBudgeter.open(url, { config: options.budgetConfig, clock, create: true, poolSize: 8 });
    revocations = await PgRevocations.open(ledger.pool, { clock });
  } catch (error) {
    await budget?.close();
    await ledger.close();
    throw error;
  }
  let problem: string | null = null;
  const listeners: Array<() => void> = [];
  const check = async (): Promise<void> => {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        ledger.pool.query('SELECT 1'),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer within ${HEALTH_TIMEOUT_MS} ms`)), HEALTH_TIMEOUT_MS);
        }),
      ]);
      problem = null;
      for (const listener of listeners) listener();
    } catch (error) {
      // Said to whoever asks /readyz, without credentials: the code, never the message (it names hosts and ports).
      const code = (error as { code?: unknown } | null)?.code;
      problem = `the PostgreSQL store does not answer${typeof code === 'string' ? ` (${code})` : ''}`;
    } finally {
      clearTimeout(timer);
    }
  };
  let checking: Promise<void> | null = null;
  const health = setInterval(() => {
    checking ??= check().finally(() => {
      checking = null;
    });
  }, HEALTH_EVERY_MS);
  health.unref();
  const kept = { budget, revocations };
  let reconciling: Promise<ReconciledReservation[] | null> | null = null;
  const reconcile = (): Promise<ReconciledReservation[] | null> =>
    (reconciling ??= reconcileSharedPass(kept.budget, ledger, {
      timeoutMs: options.orphanTimeoutMs ?? DEFAULT_ORPHAN_TIMEOUT_MS,
      now: clock(),
      limit: RECONCILE_BATCH,
      // A call this host is still streaming is alive however long it runs, not an orphan of a host that died.
      inFlight: kept.budget.callsInFlight(),
    }).finally(() => {
      reconciling = null;
    }));
  let reconcileTimer: NodeJS.Timeout | undefined;
  return {
    store: { ledger, budget: kept.budget },
    chain: ledger,
    revocations: kept.revocations,
    async shareBreakers(registry) {
      breakers ??= await SharedBreakers.start(ledger.pool, registry, { clock });
    },
    async shareRouting(target) {
      cooldowns ??= await SharedCooldowns.start(ledger.pool, target, { clock });
      limits ??= { counts: await SharedRateCounts.start(ledger.pool, target, { clock }), target };
    },
    // A chain that takes no appends fails every call: the host is not ready, though the database answers.
    problem: () => problem ?? ledger.alteredSchema(),
    onHealthy(listener) {
      listeners.push(listener);
    },
    reconcile,
    reconcileEvery(everyMs, onProblem) {
      clearInterval(reconcileTimer);
      reconcileTimer = setInterval(() => {
        // Not while the database is known to be away: the health check says so every second anyway.
        if (problem !== null || reconciling !== null) return;
        reconcile().catch(onProblem);
      }, everyMs);
      reconcileTimer.unref();
    },
    async close() {
      clearInterval(health);
      clearInterval(reconcileTimer);
      await checking;
      await reconciling?.catch(() => null);
      await breakers?.stop();
      await cooldowns?.stop();
      await limits?.counts.stop(limits.target);
      await kept.revocations.stop();
      await kept.budget.close();
      await ledger.close();
    },
  };
}
