import { type Warning, warning } from '#kernel/catalogue/define.js';
import type { AppendInput } from '#kernel/ledger/index.js';
import type { ProviderResult, Usage } from '#providers/spec.js';
import { describe } from './exchange-writer.js';
import type { SendFailure } from './send.js';
import { exchangeErrorRecord, exchangeRecord, type AttemptRecord, type ExchangeContext } from './records.js';

/** How a governed call ended, as its surface saw it. `extra`: the surface's fields on the EXCHANGE (the gateway's). */
export type GovernedOutcome =
  /** The whole reply arrived (its final usage too, unless `usageFinal` says otherwise). */
  | {
      kind: 'answered';
      answer: ProviderResult;
      usageFinal: boolean;
      attempts: AttemptRecord[];
      extra?: Record<string, unknown>;
    }
  /** No reply: every attempt failed before a byte reached the client. */
  | {
      kind: 'failed';
      failure: SendFailure;
      attempts: AttemptRecord[];
      extra?: Record<string, unknown>;
      /** Cancelled before anything was sent upstream: nothing can be billed, the reservation is released. */
      unsent?: boolean;
    }
  /** Cut short after bytes reached the client: the upstream died mid-stream, or the client went away. */
  | {
      kind: 'cut';
      outcome: 'error' | 'cancelled';
      code: string;
      message: string;
      partial: ProviderResult;
      attempts: AttemptRecord[];
      extra?: Record<string, unknown>;
    };

/**
 * The EXCHANGE an outcome leaves (`message`: the failure's, scrubbed). An answer whose raw usage cannot be
 * recorded is recorded without it, with a warning: the answer itself is never lost to its usage.
 */
export function exchangeFor(
  ctx: ExchangeContext,
  outcome: GovernedOutcome,
  message: string,
  warnings: Warning[],
): AppendInput {
  if (outcome.kind === 'cut') return cutRecord(ctx, outcome);
  if (outcome.kind === 'failed') {
    const record = exchangeErrorRecord(ctx, outcome.failure.error_code, message);
    if (outcome.failure.kind !== 'cancelled') return withExtra(record, outcome.extra);
    // Object.assign, not a spread given new fields: that object gets a V8 map of its own on every call.
    const cancelled = Object.assign({}, outcome.extra, { outcome: 'cancelled', usage_complete: false });
    return withExtra({ ...record, decision: 'CANCELLED' }, cancelled);
  }
  const extra = outcome.extra && Object.assign({}, outcome.extra, { usage_complete: outcome.usageFinal });
  try {
    return withExtra(exchangeRecord(ctx, outcome.answer), extra);
  } catch (error) {
    warnings.push(
      warning(
        'EXCHANGE_RECORD_DEGRADED',
        `the provider's raw usage could not be recorded (${describe(error)}); it was dropped`,
      ),
    );
    const answer = { ...outcome.answer, usage: { ...outcome.answer.usage, raw: null } };
    return withExtra(exchangeRecord(ctx, answer), extra);
  }
}

/** An EXCHANGE cut short: the partial content and the usage seen so far, marked incomplete (never read as 0). */
function cutRecord(ctx: ExchangeContext, outcome: Extract<GovernedOutcome, { kind: 'cut' }>): AppendInput {
  const base = exchangeRecord(ctx, outcome.partial);
  return withExtra(
    {
      ...base,
      decision: outcome.outcome === 'cancelled' ? 'CANCELLED' : 'ERROR',
      reason: `${outcome.code}: ${outcome.message}`,
    },
    {
      ...outcome.extra,
      error_code: outcome.code,
      error_message: outcome.message,
      outcome: outcome.outcome,
      usage_complete: false,
    },
  );
}

/** The EXCHANGE with the surface's extension fields, keys kept in sorted order (the ledger's fast path). */
function withExtra(record: AppendInput, extra: Record<string, unknown> | undefined): AppendInput {
  if (extra === undefined) return record;
  const metadata = record.metadata ?? {};
  return { ...record, metadata: sortedMerge(metadata, extra) ?? sortedCopy({ ...metadata, ...extra }) };
}

/**
 * `base` and `extra` (whose value wins on a shared key) as one object, keys in sorted order: the few extra keys
 * merged into the record's keys as they come, already sorted. Null when `base` is not sorted (sortedCopy then).
 */
function sortedMerge(base: Record<string, unknown>, extra: Record<string, unknown>): Record<string, unknown> | null {
  const added = Object.keys(extra).sort();
  const out: Record<string, unknown> = {};
  let next = 0;
  let previous: string | null = null;
  for (const key of Object.keys(base)) {
    if (previous !== null && !(previous < key)) return null;
    previous = key;
    for (; next < added.length && (added[next] as string) < key; next += 1) {
      const name = added[next] as string;
      out[name] = extra[name];
    }
    if (next < added.length && added[next] === key) {
      out[key] = extra[key];
      next += 1;
    } else out[key] = base[key];
  }
  for (; next < added.length; next += 1) {
    const name = added[next] as string;
    out[name] = extra[name];
  }
  return out;
}

function sortedCopy(merged: Record<string, unknown>): Record<string, unknown> {
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(merged).sort()) sorted[key] = merged[key];
  return sorted;
}

/** The EXCHANGE with its raw usage replaced by a marker (the key keeps its place in sorted order). */
export function withoutRawUsage(record: AppendInput): AppendInput {
  const metadata = record.metadata ?? {};
  if (!Object.hasOwn(metadata, 'usage_raw')) return record;
  return { ...record, metadata: { ...metadata, usage_raw: '[dropped: the ledger refused it]' } };
}

function count(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null;
}

function text(value: unknown): string {
  if (typeof value === 'string') return value;
  return typeof value === 'number' || typeof value === 'boolean' ? String(value) : '';
}

/**
 * A provider result with the types the records rely on, whatever provider produced it: strings are strings,
 * counts are safe non-negative integers or null (unknown), the raw usage an object or null.
 */
export function wellTyped(answer: ProviderResult): ProviderResult {
  const result = (typeof answer === 'object' && answer !== null ? answer : {}) as Partial<ProviderResult>;
  const usage = (typeof result.usage === 'object' && result.usage !== null ? result.usage : {}) as Partial<Usage>;
  const raw = usage.raw;
  return {
    provider_id: typeof result.provider_id === 'string' ? result.provider_id : '',
    raw_stop_reason: typeof result.raw_stop_reason === 'string' ? result.raw_stop_reason : null,
    request_id: typeof result.request_id === 'string' ? result.request_id : null,
    latency_ms: typeof result.latency_ms === 'number' && Number.isFinite(result.latency_ms) ? result.latency_ms : 0,
    content: text(result.content),
    model: typeof result.model === 'string' ? result.model : '',
    stop_reason: typeof result.stop_reason === 'string' ? result.stop_reason : 'other',
    usage: {
      input_tokens: count(usage.input_tokens),
      output_tokens: count(usage.output_tokens),
      cache_read_tokens: count(usage.cache_read_tokens),
      cache_write_tokens: count(usage.cache_write_tokens),
      raw: typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? raw : null,
    },
  };
}
