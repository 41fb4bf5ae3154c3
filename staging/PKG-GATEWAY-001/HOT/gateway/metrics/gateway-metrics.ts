import type { BudgetStatus } from '#budgeter/status.js';
import type { PushCounts } from '#kernel/ledger/merkle/witness-push.js';
import type { AlertCounts } from '../alerts/open-alerts.js';
import type { BreakerSnapshot } from '#router/breaker.js';
import type { GovernedObserver, ObservedCall, ObservedConclusion } from '#router/observer.js';
import type { PromptRequest } from '#router/request.js';
import { type Families, registerMetrics } from './catalogue.js';
import { CONTENT_TYPE, Registry } from './exposition.js';
import { BoundedLabel, codeLabel, exchangeOutcome, surfaceLabel } from './labels.js';

export { CONTENT_TYPE };

/** What the gateway reads at each scrape: state held elsewhere, never a per-call cost. */
export interface MetricSources {
  breakers(): readonly BreakerSnapshot[];
  spooled(): number;
  /** The ledger's head sequence number (the shared chain's on PostgreSQL); null when it cannot be read. */
  headSeq(): Promise<number | null>;
  /** The budget status the console reads (every session's scope and every key's); absent: no budget gauges. */
  budgets?(): Promise<BudgetStatus>;
  /** The trace exporter's running counts (gateway/traces); absent: traces are off. */
  spans?(): { exported: number; droppedQueueFull: number; droppedExportFailed: number };
  /** The alert webhook's running counts (gateway/alerts); absent: no webhook configured. */
  alerts?(): AlertCounts;
  /** Each witness's push counts (gateway/witnesses.ts); empty when none are configured. */
  witnesses?(): { witness: string; counts: PushCounts }[];
}

const TOKEN_BUCKETS = ['input', 'output', 'cache_read', 'cache_write'] as const;
/** An attempt record's outcomes (router/records.ts AttemptRecord). */
const ATTEMPT_OUTCOMES: ReadonlySet<string> = new Set(['success', 'error', 'timeout']);
const WITNESS_OUTCOMES = ['cosigned', 'refused', 'failed', 'superseded'] as const;
const BREAKER_VALUE: Readonly<Record<string, number>> = { CLOSED: 0, HALF_OPEN: 1, OPEN: 2 };

const num = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) ? value : null);

/**
 * The gateway's Prometheus metrics, fed by the one governed pipeline (router/observer.ts) and read at each scrape.
 * Labels: surface (the gateway's surfaces, else `route`), model (the models the price table and router config name,
 * else `other`), outcome and code (values the code produces). Counters mirror the ledger: a call's counts are read
 * from the EXCHANGE the pipeline wrote, so they sum to what the ledger holds.
 */
export class GatewayMetrics implements GovernedObserver {
  private readonly registry = new Registry();
  private readonly models: BoundedLabel;
  private readonly providers: BoundedLabel;
  private readonly m: Families = registerMetrics(this.registry);
  private inFlight = 0;
  private spansSeen = { exported: 0, droppedQueueFull: 0, droppedExportFailed: 0 };
  private readonly witnessesSeen = new Map<string, PushCounts>();
  private alertsSeen: AlertCounts = { sent: 0, droppedQueueFull: 0, droppedOutboxFull: 0, deduped: 0, pending: 0 };

  constructor(
    private readonly sources: MetricSources,
    labels: { models: Iterable<string>; providers: Iterable<string> },
  ) {
    this.models = new BoundedLabel(labels.models);
    this.providers = new BoundedLabel(labels.providers);
    this.m.inFlightGauge.set([], 0);
  }

  admitted(_call: ObservedCall): void {
    this.inFlight += 1;
  }

  refused(request: Partial<PromptRequest>, code: string): void {
    const surface = surfaceLabel(request.contract_id);
    this.m.requests.inc([surface, this.models.of(request.model_id), 'refused']);
    this.m.refusals.inc([surface, codeLabel(code)]);
  }

  firstToken(call: ObservedCall, ms: number): void {
    this.m.ttft.observe([surfaceLabel(call.request.contract_id), this.models.of(call.request.model_id)], ms / 1000);
  }

  concluded(call: ObservedCall, seen: ObservedConclusion): void {
    this.inFlight = Math.max(0, this.inFlight - 1);
    const series = [surfaceLabel(call.request.contract_id), this.models.of(call.request.model_id)];
    const [surface, model] = series as [string, string];
    const meta = seen.exchange.metadata as Record<string, unknown>;
    this.m.requests.inc([surface, model, exchangeOutcome(seen.exchange.decision, meta.outcome)]);
    for (const bucket of TOKEN_BUCKETS) {
      const count = num(meta[`${bucket}_tokens`]);
      if (count !== null) this.m.tokens.inc([surface, model, bucket], count);
    }
    if (seen.cost === null) this.m.unknownCost.inc(series);
    else this.m.cost.inc(series, seen.cost);
    const attempts = Array.isArray(meta.attempts) ? (meta.attempts as { outcome?: unknown }[]) : [];
    for (const attempt of attempts)
      this.m.attempts.inc([
        surface,
        model,
        ATTEMPT_OUTCOMES.has(attempt.outcome as string) ? (attempt.outcome as string) : 'error',
      ]);
    this.m.duration.observe(series, seen.latencyMs / 1000);
  }

  /** The exposition, with the gauges read now. */
  async render(): Promise<string> {
    this.m.inFlightGauge.set([], this.inFlight);
    this.m.spool.set([], this.sources.spooled());
    const seq = await this.sources.headSeq().catch(() => null);
    if (seq !== null) this.m.head.set([], seq);
    this.m.breakerState.reset();
    const worst = new Map<string, { labels: [string, string]; value: number }>();
    for (const breaker of this.sources.breakers()) {
      const slash = breaker.key.indexOf('/');
      const labels: [string, string] = [
        this.providers.of(breaker.key.slice(0, slash)),
        this.models.of(breaker.key.slice(slash + 1)),
      ];
      const value = BREAKER_VALUE[breaker.state] ?? 0;
      const key = labels.join('/');
      const seenBefore = worst.get(key);
      if (seenBefore === undefined || seenBefore.value < value) worst.set(key, { labels, value });
    }
    for (const { labels, value } of worst.values()) this.m.breakerState.set(labels, value);
    await this.readBudgets();
    this.readSpans();
    this.readAlerts();
    this.readWitnesses();
    return this.registry.render();
  }

  /** The trace exporter's counts since the last scrape, added to the counters. */
  private readSpans(): void {
    const now = this.sources.spans?.();
    if (now === undefined) return;
    const seen = this.spansSeen;
    this.m.spansExported.inc([], now.exported - seen.exported);
    this.m.spansDropped.inc(['queue_full'], now.droppedQueueFull - seen.droppedQueueFull);
    this.m.spansDropped.inc(['export_failed'], now.droppedExportFailed - seen.droppedExportFailed);
    this.spansSeen = { ...now };
  }

  /** The alert webhook's counts since the last scrape, added to the counters; its outbox depth as read now. */
  private readAlerts(): void {
    const now = this.sources.alerts?.();
    if (now === undefined) return;
    const seen = this.alertsSeen;
    this.m.alertsSent.inc([], now.sent - seen.sent);
    this.m.alertsDropped.inc(['queue_full'], now.droppedQueueFull - seen.droppedQueueFull);
    this.m.alertsDropped.inc(['outbox_full'], now.droppedOutboxFull - seen.droppedOutboxFull);
    this.m.alertsDeduped.inc([], now.deduped - seen.deduped);
    if (now.pending !== null) this.m.alertsPending.set([], now.pending);
    this.alertsSeen = { ...now };
  }

  /** Each witness's push counts since the last scrape, added to the counters. */
  private readWitnesses(): void {
    for (const { witness, counts } of this.sources.witnesses?.() ?? []) {
      const seen = this.witnessesSeen.get(witness) ?? {
        ...counts,
        cosigned: 0,
        refused: 0,
        failed: 0,
        retried: 0,
        superseded: 0,
      };
      for (const outcome of WITNESS_OUTCOMES)
        this.m.witnessCheckpoints.inc([witness, outcome], counts[outcome] - seen[outcome]);
      this.m.witnessRetries.inc([witness], counts.retried - seen.retried);
      this.witnessesSeen.set(witness, { ...counts });
    }
  }

  /** Per scope kind: the tightest remaining tokens and the count of scopes in each state (a scrape-time read). */
  private async readBudgets(): Promise<void> {
    const status = await this.sources.budgets?.().catch(() => null);
    if (status === null || status === undefined) return;
    this.m.budgetRemaining.reset();
    this.m.budgetScopes.reset();
    const tightest = new Map<string, number>();
    for (const scope of status.scopes) {
      this.m.budgetScopes.add([scope.scope, scope.state], 1);
      const max = scope.limit?.max_tokens;
      if (max === undefined) continue;
      const left = Math.max(0, max - scope.reserved_tokens - scope.settled_tokens);
      tightest.set(scope.scope, Math.min(left, tightest.get(scope.scope) ?? left));
    }
    for (const [kind, left] of tightest) this.m.budgetRemaining.set([kind], left);
  }
}
