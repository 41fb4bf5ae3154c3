import type { Counter, Gauge, Histogram, Registry } from './exposition.js';

/** Seconds: from a cache hit's few milliseconds to a long agent turn's minutes. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

interface MetricSpec {
  type: 'counter' | 'gauge' | 'histogram';
  name: string;
  help: string;
  labels: readonly string[];
  buckets?: readonly number[];
}

/**
 * Every metric the gateway exposes, as data: `GatewayMetrics` registers them in this order, and docs/production.md
 * lists each name (a test holds the two together). Labels are bounded (gateway/metrics/labels.ts).
 */
export const METRICS = {
  requests: {
    type: 'counter',
    name: 'cplane_requests_total',
    help: 'Governed calls concluded (an EXCHANGE) or refused (a PROMPT_REJECTED), by surface, requested model and outcome.',
    labels: ['surface', 'model', 'outcome'],
  },
  refusals: {
    type: 'counter',
    name: 'cplane_refusals_total',
    help: 'Calls refused before reaching an upstream, by surface and refusal code.',
    labels: ['surface', 'code'],
  },
  tokens: {
    type: 'counter',
    name: 'cplane_tokens_total',
    help: "Tokens as the EXCHANGE records them (the provider's usage), by surface, model and bucket.",
    labels: ['surface', 'model', 'bucket'],
  },
  cost: {
    type: 'counter',
    name: 'cplane_cost_total',
    help: 'Settled cost in the budget currency, for calls whose usage and price are known.',
    labels: ['surface', 'model'],
  },
  unknownCost: {
    type: 'counter',
    name: 'cplane_cost_unknown_total',
    help: 'Concluded calls whose cost is unknown (usage unknown, model unpriced, or no budget).',
    labels: ['surface', 'model'],
  },
  attempts: {
    type: 'counter',
    name: 'cplane_upstream_attempts_total',
    help: 'Upstream attempts (retries included), by surface, model and attempt outcome.',
    labels: ['surface', 'model', 'outcome'],
  },
  duration: {
    type: 'histogram',
    name: 'cplane_request_duration_seconds',
    help: 'From admission to the recorded conclusion (the EXCHANGE latency_ms).',
    labels: ['surface', 'model'],
    buckets: DURATION_BUCKETS,
  },
  ttft: {
    type: 'histogram',
    name: 'cplane_time_to_first_token_seconds',
    help: 'Streamed replies: from admission to the first event released to the client.',
    labels: ['surface', 'model'],
    buckets: DURATION_BUCKETS,
  },
  inFlightGauge: {
    type: 'gauge',
    name: 'cplane_in_flight_calls',
    help: 'Calls admitted and not concluded.',
    labels: [],
  },
  breakerState: {
    type: 'gauge',
    name: 'cplane_breaker_state',
    help: 'Circuit breakers: 0 closed, 1 half-open, 2 open (the most open of the breakers a label pair covers).',
    labels: ['provider', 'model'],
  },
  budgetRemaining: {
    type: 'gauge',
    name: 'cplane_budget_remaining_tokens',
    help: 'Tokens left in the tightest token-limited scope of each kind (of those budget status lists).',
    labels: ['scope_kind'],
  },
  budgetScopes: {
    type: 'gauge',
    name: 'cplane_budget_scopes',
    help: 'Scopes budget status lists, by kind and state (ok, near_limit, exhausted, unlimited).',
    labels: ['scope_kind', 'state'],
  },
  spool: {
    type: 'gauge',
    name: 'cplane_spool_depth',
    help: 'Exchanges spooled, waiting for the ledger.',
    labels: [],
  },
  head: {
    type: 'gauge',
    name: 'cplane_ledger_head_seq',
    help: "The ledger's head sequence number.",
    labels: [],
  },
  spansExported: {
    type: 'counter',
    name: 'cplane_trace_spans_exported_total',
    help: 'Trace spans an OTLP receiver accepted.',
    labels: [],
  },
  spansDropped: {
    type: 'counter',
    name: 'cplane_trace_spans_dropped_total',
    help: 'Trace spans lost: the export queue was full (queue_full), or the receiver refused or could not be reached (export_failed).',
    labels: ['reason'],
  },
  alertsSent: {
    type: 'counter',
    name: 'cplane_alerts_sent_total',
    help: 'Alerts the webhook accepted (a 2xx), each one ALERT_SENT record.',
    labels: [],
  },
  alertsDropped: {
    type: 'counter',
    name: 'cplane_alerts_dropped_total',
    help: 'Alerts lost before the outbox: the in-memory queue was full (queue_full) or the outbox held its maximum pending (outbox_full).',
    labels: ['reason'],
  },
  alertsDeduped: {
    type: 'counter',
    name: 'cplane_alerts_deduped_total',
    help: 'Alerts this host did not send because another host sharing the PostgreSQL store claimed them.',
    labels: [],
  },
  alertsPending: {
    type: 'gauge',
    name: 'cplane_alerts_pending',
    help: "Alerts in this host's outbox not yet delivered.",
    labels: [],
  },
  witnessCheckpoints: {
    type: 'counter',
    name: 'cplane_witness_checkpoints_total',
    help: 'Checkpoints pushed to each configured witness, by outcome: cosigned, refused (a fork, a bad proof), failed (given up after retries), superseded (a newer one replaced it before it was sent).',
    labels: ['witness', 'outcome'],
  },
  witnessRetries: {
    type: 'counter',
    name: 'cplane_witness_retries_total',
    help: 'Pushes to a witness tried again after a failure (down, timing out, 5xx).',
    labels: ['witness'],
  },
} as const satisfies Record<string, MetricSpec>;

type Family<S extends MetricSpec> = S['type'] extends 'counter'
  ? Counter
  : S['type'] extends 'gauge'
    ? Gauge
    : Histogram;
export type Families = { -readonly [K in keyof typeof METRICS]: Family<(typeof METRICS)[K]> };

/** The catalogue's families, registered in its order. */
export function registerMetrics(registry: Registry): Families {
  const out: Record<string, Counter | Gauge | Histogram> = {};
  for (const [key, spec] of Object.entries(METRICS) as [string, MetricSpec][]) {
    if (spec.type === 'counter') out[key] = registry.counter(spec.name, spec.help, spec.labels);
    else if (spec.type === 'gauge') out[key] = registry.gauge(spec.name, spec.help, spec.labels);
    else out[key] = registry.histogram(spec.name, spec.help, spec.labels, spec.buckets ?? DURATION_BUCKETS);
  }
  return out as Families;
}
