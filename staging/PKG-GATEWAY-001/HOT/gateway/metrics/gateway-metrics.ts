import type { BudgetStatus } from '#budgeter/status.js';
import type { BreakerSnapshot } from '#router/breaker.js';
import type { GovernedObserver, ObservedCall, ObservedConclusion } from '#router/observer.js';
import type { PromptRequest } from '#router/request.js';
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
}

/** Seconds: from a cache hit's few milliseconds to a long agent turn's minutes. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const TOKEN_BUCKETS = ['input', 'output', 'cache_read', 'cache_write'] as const;
/** An attempt record's outcomes (router/records.ts AttemptRecord). */
const ATTEMPT_OUTCOMES: ReadonlySet<string> = new Set(['success', 'error', 'timeout']);
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
  private readonly requests = this.registry.counter(
    'cplane_requests_total',
    'Governed calls concluded (an EXCHANGE) or refused (a PROMPT_REJECTED), by surface, requested model and outcome.',
    ['surface', 'model', 'outcome'],
  );
  private readonly refusals = this.registry.counter(
    'cplane_refusals_total',
    'Calls refused before reaching an upstream, by surface and refusal code.',
    ['surface', 'code'],
  );
  private readonly tokens = this.registry.counter(
    'cplane_tokens_total',
    "Tokens as the EXCHANGE records them (the provider's usage), by surface, model and bucket.",
    ['surface', 'model', 'bucket'],
  );
  private readonly cost = this.registry.counter(
    'cplane_cost_total',
    'Settled cost in the budget currency, for calls whose usage and price are known.',
    ['surface', 'model'],
  );
  private readonly unknownCost = this.registry.counter(
    'cplane_cost_unknown_total',
    'Concluded calls whose cost is unknown (usage unknown, model unpriced, or no budget).',
    ['surface', 'model'],
  );
  private readonly attempts = this.registry.counter(
    'cplane_upstream_attempts_total',
    'Upstream attempts (retries included), by surface, model and attempt outcome.',
    ['surface', 'model', 'outcome'],
  );
  private readonly duration = this.registry.histogram(
    'cplane_request_duration_seconds',
    'From admission to the recorded conclusion (the EXCHANGE latency_ms).',
    ['surface', 'model'],
    DURATION_BUCKETS,
  );
  private readonly ttft = this.registry.histogram(
    'cplane_time_to_first_token_seconds',
    'Streamed replies: from admission to the first event released to the client.',
    ['surface', 'model'],
    DURATION_BUCKETS,
  );
  private readonly inFlightGauge = this.registry.gauge('cplane_in_flight_calls', 'Calls admitted and not concluded.');
  private readonly breakerState = this.registry.gauge(
    'cplane_breaker_state',
    'Circuit breakers: 0 closed, 1 half-open, 2 open (the most open of the breakers a label pair covers).',
    ['provider', 'model'],
  );
  private readonly budgetRemaining = this.registry.gauge(
    'cplane_budget_remaining_tokens',
    'Tokens left in the tightest token-limited scope of each kind (of those budget status lists).',
    ['scope_kind'],
  );
  private readonly budgetScopes = this.registry.gauge(
    'cplane_budget_scopes',
    'Scopes budget status lists, by kind and state (ok, near_limit, exhausted, unlimited).',
    ['scope_kind', 'state'],
  );
  private readonly spool = this.registry.gauge('cplane_spool_depth', 'Exchanges spooled, waiting for the ledger.');
  private readonly head = this.registry.gauge('cplane_ledger_head_seq', "The ledger's head sequence number.");
  private readonly spansExported = this.registry.counter(
    'cplane_trace_spans_exported_total',
    'Trace spans an OTLP receiver accepted.',
  );
  private readonly spansDropped = this.registry.counter(
    'cplane_trace_spans_dropped_total',
    'Trace spans lost: the export queue was full (queue_full), or the receiver refused or could not be reached (export_failed).',
    ['reason'],
  );
  private inFlight = 0;
  private spansSeen = { exported: 0, droppedQueueFull: 0, droppedExportFailed: 0 };

  constructor(
    private readonly sources: MetricSources,
    labels: { models: Iterable<string>; providers: Iterable<string> },
  ) {
    this.models = new BoundedLabel(labels.models);
    this.providers = new BoundedLabel(labels.providers);
    this.inFlightGauge.set([], 0);
  }

  admitted(_call: ObservedCall): void {
    this.inFlight += 1;
  }

  refused(request: Partial<PromptRequest>, code: string): void {
    const surface = surfaceLabel(request.contract_id);
    this.requests.inc([surface, this.models.of(request.model_id), 'refused']);
    this.refusals.inc([surface, codeLabel(code)]);
  }

  firstToken(call: ObservedCall, ms: number): void {
    this.ttft.observe([surfaceLabel(call.request.contract_id), this.models.of(call.request.model_id)], ms / 1000);
  }

  concluded(call: ObservedCall, seen: ObservedConclusion): void {
    this.inFlight = Math.max(0, this.inFlight - 1);
    const series = [surfaceLabel(call.request.contract_id), this.models.of(call.request.model_id)];
    const [surface, model] = series as [string, string];
    const meta = seen.exchange.metadata as Record<string, unknown>;
    this.requests.inc([surface, model, exchangeOutcome(seen.exchange.decision, meta.outcome)]);
    for (const bucket of TOKEN_BUCKETS) {
      const count = num(meta[`${bucket}_tokens`]);
      if (count !== null) this.tokens.inc([surface, model, bucket], count);
    }
    if (seen.cost === null) this.unknownCost.inc(series);
    else this.cost.inc(series, seen.cost);
    const attempts = Array.isArray(meta.attempts) ? (meta.attempts as { outcome?: unknown }[]) : [];
    for (const attempt of attempts)
      this.attempts.inc([
        surface,
        model,
        ATTEMPT_OUTCOMES.has(attempt.outcome as string) ? (attempt.outcome as string) : 'error',
      ]);
    this.duration.observe(series, seen.latencyMs / 1000);
  }

  /** The exposition, with the gauges read now. */
  async render(): Promise<string> {
    this.inFlightGauge.set([], this.inFlight);
    this.spool.set([], this.sources.spooled());
    const seq = await this.sources.headSeq().catch(() => null);
    if (seq !== null) this.head.set([], seq);
    this.breakerState.reset();
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
    for (const { labels, value } of worst.values()) this.breakerState.set(labels, value);
    await this.readBudgets();
    this.readSpans();
    return this.registry.render();
  }

  /** The trace exporter's counts since the last scrape, added to the counters. */
  private readSpans(): void {
    const now = this.sources.spans?.();
    if (now === undefined) return;
    const seen = this.spansSeen;
    this.spansExported.inc([], now.exported - seen.exported);
    this.spansDropped.inc(['queue_full'], now.droppedQueueFull - seen.droppedQueueFull);
    this.spansDropped.inc(['export_failed'], now.droppedExportFailed - seen.droppedExportFailed);
    this.spansSeen = { ...now };
  }

  /** Per scope kind: the tightest remaining tokens and the count of scopes in each state (a scrape-time read). */
  private async readBudgets(): Promise<void> {
    const status = await this.sources.budgets?.().catch(() => null);
    if (status === null || status === undefined) return;
    this.budgetRemaining.reset();
    this.budgetScopes.reset();
    const tightest = new Map<string, number>();
    for (const scope of status.scopes) {
      this.budgetScopes.add([scope.scope, scope.state], 1);
      const max = scope.limit?.max_tokens;
      if (max === undefined) continue;
      const left = Math.max(0, max - scope.reserved_tokens - scope.settled_tokens);
      tightest.set(scope.scope, Math.min(left, tightest.get(scope.scope) ?? left));
    }
    for (const [kind, left] of tightest) this.budgetRemaining.set([kind], left);
  }
}
