import { basename, join } from 'node:path';
import type { BudgetCrossing } from '#budgeter/crossings.js';
import { CpError, show } from '#kernel/errors.js';
import type { AppendInput } from '#kernel/ledger/index.js';
import { rootPaths } from '#kernel/root/layout.js';
import type { BreakerSnapshot } from '#router/breaker.js';
import { AlertDispatcher } from './dispatcher.js';
import { type Alert, AlertOutbox } from './outbox.js';
import type { AlertClaims } from './pg-claims.js';

/** The gateway config's `alerts` section (HOT/schemas/gateway-config.schema.json). */
export interface AlertSettings {
  url: string;
  /** The environment variable holding the signature's secret (the secret itself is never in a config file). */
  secret_env: string;
  timeout_ms?: number;
  retry_min_ms?: number;
  retry_max_ms?: number;
  max_pending?: number;
}

export interface OpenedAlerts {
  dispatcher: AlertDispatcher;
  /** For the router's budget steps (RouterOptions.budgetWatch). */
  budgetWatch: (crossed: readonly BudgetCrossing[]) => void;
  /** For the breaker registry (BreakerRegistry.onTransition). */
  breakerWatch: (snapshot: BreakerSnapshot) => void;
  /** For the router's spool (RouterOptions.onQuarantine): entries set aside as unreadable. */
  quarantineWatch: (paths: readonly string[]) => void;
  /**
   * Where ALERT_SENT records go, once the router's ledger is open, and on a shared store the claims that make one
   * host of several send each alert; delivery starts then.
   */
  recordTo(append: (records: AppendInput[]) => Promise<unknown>, claims?: AlertClaims | null): void;
  /** Running counts for /metrics (the outbox's pending count is read now; null when its file cannot be read). */
  counts(): AlertCounts;
  close(): void;
}

export interface AlertCounts {
  sent: number;
  droppedQueueFull: number;
  droppedOutboxFull: number;
  deduped: number;
  pending: number | null;
}

export function alertsPath(root: string): string {
  return join(rootPaths(root).registries, 'alerts.sqlite');
}

/** The root's alert webhook, or null when the gateway config has no `alerts` section. */
export function openAlerts(
  root: string,
  settings: AlertSettings | undefined,
  env: NodeJS.ProcessEnv,
  clock: () => number,
  fetchImpl?: typeof fetch,
): OpenedAlerts | null {
  if (settings === undefined) return null;
  const secret = env[settings.secret_env];
  if (secret === undefined || secret.length < 16)
    throw new CpError(
      'ERR_GATEWAY_CONFIG_INVALID',
      `the alert webhook's secret ${show(settings.secret_env)} is ${secret === undefined ? 'not set' : 'shorter than 16 characters'}`,
      {
        hint: `export ${settings.secret_env} with a random secret of at least 16 characters (the receiver checks the signature with it)`,
        details: { pointer: '/alerts/secret_env', problem: 'secret missing or short' },
      },
    );
  const outbox = new AlertOutbox(alertsPath(root), settings.max_pending ?? 10_000);
  let append: ((records: AppendInput[]) => Promise<unknown>) | null = null;
  const dispatcher = new AlertDispatcher({
    outbox,
    url: settings.url,
    secret,
    clock,
    record: async (records) => append?.(records),
    ...(fetchImpl === undefined ? {} : { fetch: fetchImpl }),
    ...(settings.timeout_ms === undefined ? {} : { timeoutMs: settings.timeout_ms }),
    ...(settings.retry_min_ms === undefined ? {} : { retryMinMs: settings.retry_min_ms }),
    ...(settings.retry_max_ms === undefined ? {} : { retryMaxMs: settings.retry_max_ms }),
  });
  const at = (): string => new Date(clock()).toISOString();
  return {
    dispatcher,
    budgetWatch: (crossed) => {
      for (const c of crossed) dispatcher.enqueue(budgetAlert(c, at()));
    },
    breakerWatch: (snapshot) => dispatcher.enqueue(breakerAlert(snapshot, clock())),
    quarantineWatch: (paths) => {
      for (const path of paths) dispatcher.enqueue(quarantineAlert(path, at()));
    },
    recordTo(fn, claims = null) {
      append = fn;
      dispatcher.claims = claims;
      dispatcher.start();
    },
    counts() {
      let pending: number | null = null;
      try {
        pending = outbox.pending();
      } catch {
        // A scrape reports what it can; the outbox's own errors surface on delivery.
      }
      return {
        sent: dispatcher.sent,
        droppedQueueFull: dispatcher.dropped,
        droppedOutboxFull: outbox.dropped,
        deduped: dispatcher.deduped,
        pending,
      };
    },
    close() {
      dispatcher.close();
      outbox.close();
    },
  };
}

function budgetAlert(c: BudgetCrossing, occurredAt: string): Alert {
  return {
    id: c.dedupe_key,
    type: c.alert,
    occurred_at: occurredAt,
    detail: { scope: c.scope, scope_id: c.scope_id, period: c.period, used_fraction: c.used_fraction },
  };
}

/** An opening is named by its opened_at (a re-armed breaker is a new opening); a closing by when it closed. */
function breakerAlert(snapshot: BreakerSnapshot, now: number): Alert {
  const opened = snapshot.state === 'OPEN';
  const when = opened ? (snapshot.opened_at ?? new Date(now).toISOString()) : new Date(now).toISOString();
  return {
    id: `${opened ? 'breaker_opened' : 'breaker_closed'}/${snapshot.key}/${when}`,
    type: opened ? 'breaker_opened' : 'breaker_closed',
    occurred_at: new Date(now).toISOString(),
    detail: { breaker: snapshot.key, state: snapshot.state, consecutive_failures: snapshot.consecutive_failures },
  };
}

/** A quarantined spool entry, named by its file (unique in the quarantine directory); the root's path stays local. */
function quarantineAlert(path: string, occurredAt: string): Alert {
  const file = basename(path);
  return {
    id: `spool_quarantined/${file}`,
    type: 'spool_quarantined',
    occurred_at: occurredAt,
    detail: { entry: file, directory: 'HOT/registries/router-spool-quarantine' },
  };
}
