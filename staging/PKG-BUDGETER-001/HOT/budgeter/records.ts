import type { AppendInput } from '#kernel/ledger/index.js';
import type { BudgetMode } from './config.js';
import type { BudgetViolation, Reservation } from './results.js';

/**
 * Ledger records of the budgeter. submission_id is the request id; metadata is snake_case and carries
 * session_id / work_order_id / agent_id so the ledger's indexed queries find them.
 */
export const BUDGET_EVENTS = {
  allocated: 'BUDGET_ALLOCATED',
  settled: 'BUDGET_SETTLED',
  released: 'BUDGET_RELEASED',
  exceeded: 'BUDGET_EXCEEDED',
} as const;

/**
 * The kinds a step hands its caller to append after its transaction (kept in the outbox meanwhile): delivered with
 * the ledger's `once`, so a record that did land (or lands from a spool) is never appended twice.
 */
export const DELIVERED_ONCE: readonly string[] = [
  BUDGET_EVENTS.settled,
  BUDGET_EVENTS.released,
  BUDGET_EVENTS.exceeded,
];

export interface RecordContext {
  mode: BudgetMode;
  currency: string;
}

/**
 * Every builder below writes its metadata's keys in sorted order: foldBudget and the ledger's canonical JSON then
 * only check the order instead of sorting on every call.
 */
export function allocationRecord(
  r: Reservation,
  warnings: readonly BudgetViolation[],
  ctx: RecordContext,
): AppendInput {
  return {
    event_type: BUDGET_EVENTS.allocated,
    submission_id: r.request_id,
    decision: r.over_budget ? 'RESERVED_OVER_BUDGET' : 'RESERVED',
    reason: `reserved ${r.reserved_tokens} tokens for ${r.model}`,
    metadata: {
      agent_id: r.agent_id,
      currency: ctx.currency,
      mode: ctx.mode,
      model: r.model,
      request_id: r.request_id,
      reserved_cost: r.reserved_cost,
      reserved_tokens: r.reserved_tokens,
      session_id: r.session_id,
      warnings: [...warnings],
      work_order_id: r.work_order_id,
    },
  };
}

/** A refusal (enforce), an allowed overrun (warn) or a settlement that went past a limit (overspent). */
export function exceededRecord(
  r: Pick<Reservation, 'request_id' | 'session_id' | 'work_order_id' | 'agent_id' | 'model'>,
  decision: 'REFUSED' | 'WARNED' | 'OVERSPENT',
  violations: readonly BudgetViolation[],
  ctx: RecordContext,
): AppendInput {
  const first = violations[0] as BudgetViolation;
  return {
    event_type: BUDGET_EVENTS.exceeded,
    submission_id: r.request_id,
    decision,
    reason: `${first.code}: ${first.scope} ${first.scope_id} ${first.limit} ${first.limit_value}`,
    metadata: {
      agent_id: r.agent_id,
      code: first.code,
      currency: ctx.currency,
      mode: ctx.mode,
      model: r.model,
      request_id: r.request_id,
      session_id: r.session_id,
      violations: [...violations],
      work_order_id: r.work_order_id,
    },
  };
}

export function settlementRecord(r: Reservation, usageProblems: readonly string[], ctx: RecordContext): AppendInput {
  const usage = r.usage;
  return {
    event_type: BUDGET_EVENTS.settled,
    submission_id: r.request_id,
    decision: usage === null ? 'SETTLED_USAGE_UNKNOWN' : 'SETTLED',
    reason:
      usage === null
        ? `usage unknown (${usageProblems.join('; ')}); reservation kept charged`
        : `settled ${r.actual_tokens} tokens for ${r.model}`,
    metadata: {
      agent_id: r.agent_id,
      cache_read_tokens: usage?.cache_read_tokens ?? null,
      cache_write_1h_tokens: usage?.cache_write_1h_tokens ?? null,
      cache_write_5m_tokens: usage?.cache_write_5m_tokens ?? null,
      charged_cost: r.charged_cost,
      charged_tokens: r.charged_tokens,
      cost: r.cost,
      currency: ctx.currency,
      input_tokens: usage?.input_tokens ?? null,
      mode: ctx.mode,
      model: r.model,
      output_tokens: usage?.output_tokens ?? null,
      request_id: r.request_id,
      reserved_cost: r.reserved_cost,
      reserved_tokens: r.reserved_tokens,
      session_id: r.session_id,
      tokens: r.actual_tokens,
      usage_problems: [...usageProblems],
      work_order_id: r.work_order_id,
    },
  };
}

export function releaseRecord(r: Reservation, ctx: RecordContext): AppendInput {
  return {
    event_type: BUDGET_EVENTS.released,
    submission_id: r.request_id,
    decision: 'RELEASED',
    reason: `released ${r.reserved_tokens} reserved tokens: the call never happened`,
    metadata: {
      agent_id: r.agent_id,
      currency: ctx.currency,
      mode: ctx.mode,
      model: r.model,
      request_id: r.request_id,
      reserved_cost: r.reserved_cost,
      reserved_tokens: r.reserved_tokens,
      session_id: r.session_id,
      work_order_id: r.work_order_id,
    },
  };
}

/**
 * A governed call's reservation rides in its DISPATCH and its settlement (or release) in its EXCHANGE, as
 * `metadata.budget`: two chain records per call instead of four. The folded form is the budget record's metadata
 * with its decision, less what its host record already says (the session, agent and work order) and what the
 * partner says (a settlement does not repeat the reservation's model, mode, currency or reserved amounts, nor a
 * charge equal to the usage's cost), less nulls and empty lists. `unfoldBudget` rebuilds the standalone record from the host (and, for a settlement, its DISPATCH), so
 * budget state is rebuilt from the chain alone, whichever form a root holds.
 */
export const FOLDED_BUDGET_KEY = 'budget';

/** The decision of a folded budget record names its kind: none is shared between two kinds. */
const FOLDED_KIND: Readonly<Record<string, string>> = {
  RESERVED: BUDGET_EVENTS.allocated,
  RESERVED_OVER_BUDGET: BUDGET_EVENTS.allocated,
  SETTLED: BUDGET_EVENTS.settled,
  SETTLED_USAGE_UNKNOWN: BUDGET_EVENTS.settled,
  RELEASED: BUDGET_EVENTS.released,
};

/** What a host record's own metadata says about the call: left out of its folded budget. */
const HOST_IDENTITY = ['session_id', 'agent_id', 'work_order_id'] as const;
/** What a settlement repeats from its reservation (folded into the call's DISPATCH). */
const FROM_RESERVATION = ['model', 'mode', 'currency', 'reserved_tokens', 'reserved_cost'] as const;
/** A settlement's charge, left out when it is what the usage cost (a known usage is charged as it is). */
const CHARGED = [
  ['charged_tokens', 'tokens'],
  ['charged_cost', 'cost'],
] as const;

/** What a folded record of each kind leaves out, looked up once per key (this runs twice on every call). */
const DROPPED_FROM_RESERVATION: ReadonlySet<string> = new Set(HOST_IDENTITY);
const DROPPED_FROM_SETTLEMENT: ReadonlySet<string> = new Set([...HOST_IDENTITY, ...FROM_RESERVATION]);
const CHARGED_AS: Readonly<Record<string, string>> = Object.fromEntries(CHARGED);

/** The host record's kind a budget record of this kind folds into: DISPATCH for a reservation, EXCHANGE otherwise. */
export function foldsInto(record: AppendInput): 'DISPATCH' | 'EXCHANGE' | null {
  if (record.event_type === BUDGET_EVENTS.allocated) return 'DISPATCH';
  if (record.event_type === BUDGET_EVENTS.settled || record.event_type === BUDGET_EVENTS.released) return 'EXCHANGE';
  return null;
}

/**
 * `host` with `record` folded in as metadata.budget (keys in sorted order, the ledger's fast path). Objects are
 * built in their final key order, never sorted after or deleted from: the records this folds are made with sorted
 * keys, so a sort is only a check, and a delete would leave the object in V8's slow dictionary mode.
 */
export function foldBudget(host: AppendInput, record: AppendInput): AppendInput {
  const hostMetadata = host.metadata ?? {};
  const source = record.metadata ?? {};
  const dropped = record.event_type === BUDGET_EVENTS.allocated ? DROPPED_FROM_RESERVATION : DROPPED_FROM_SETTLEMENT;
  // A work order the host does not name (a DISPATCH names none) stays in the folded form.
  const workOrder = typeof source.work_order_id === 'string' ? source.work_order_id : undefined;
  const keepWorkOrder = workOrder !== undefined && hostMetadata.work_order_id !== workOrder;
  const folded: Record<string, unknown> = {};
  for (const key of sortedWith(Object.keys(source), 'decision')) {
    if (key === 'work_order_id') {
      if (keepWorkOrder) folded.work_order_id = workOrder;
      continue;
    }
    const value = key === 'decision' ? record.decision : source[key];
    if (dropped.has(key) || value === null || value === undefined) continue;
    if (Array.isArray(value) && value.length === 0) continue;
    const actual = CHARGED_AS[key];
    if (actual !== undefined && value === foldable(source[actual])) continue;
    folded[key] = value;
  }
  const merged: Record<string, unknown> = {};
  for (const key of sortedWith(Object.keys(hostMetadata), FOLDED_BUDGET_KEY))
    merged[key] = key === FOLDED_BUDGET_KEY ? folded : hostMetadata[key];
  return { ...host, metadata: merged };
}

/** A value as the folded form keeps it: undefined for what it leaves out (nulls and empty lists). */
function foldable(value: unknown): unknown {
  return value === null || (Array.isArray(value) && value.length === 0) ? undefined : value;
}

/** `keys` with `extra` (replacing an equal key), sorted; keys already in order (the usual case) are only checked. */
function sortedWith(keys: string[], extra: string): string[] {
  let at = keys.length;
  let sorted = true;
  for (let i = 0; i < keys.length; i += 1) {
    const key = keys[i] as string;
    if (i > 0 && (keys[i - 1] as string) >= key) sorted = false;
    if (at === keys.length && key >= extra) at = i;
  }
  if (!sorted) return [...new Set([...keys, extra])].sort();
  if (keys[at] !== extra) keys.splice(at, 0, extra);
  return keys;
}

/** A record's folded budget (metadata.budget) when it holds one of a known kind, else null. */
export function foldedBudget(metadata: Record<string, unknown> | undefined): Record<string, unknown> | null {
  const folded = metadata?.[FOLDED_BUDGET_KEY];
  if (typeof folded !== 'object' || folded === null || Array.isArray(folded)) return null;
  const record = folded as Record<string, unknown>;
  return typeof record.request_id === 'string' && typeof record.decision === 'string' && FOLDED_KIND[record.decision]
    ? record
    : null;
}

/** The request id whose settlement (or release) an EXCHANGE carries folded, else null. */
export function foldedSettlement(input: { event_type: string; metadata?: Record<string, unknown> }): string | null {
  if (input.event_type !== 'EXCHANGE') return null;
  const folded = foldedBudget(input.metadata);
  return folded === null ? null : (folded.request_id as string);
}

/** `exchange` without its folded settlement (the chain already holds the standalone record). */
export function withoutFoldedBudget(exchange: AppendInput): AppendInput {
  const { [FOLDED_BUDGET_KEY]: _dropped, ...rest } = exchange.metadata ?? {};
  return { ...exchange, metadata: rest };
}

const SETTLEMENT_COUNTS = [
  'input_tokens',
  'output_tokens',
  'cache_read_tokens',
  'cache_write_5m_tokens',
  'cache_write_1h_tokens',
] as const;

/**
 * The standalone budget record a DISPATCH or EXCHANGE carries folded, as the budgeter made it (reason aside), or
 * null when it carries none. A settlement's reservation fields come from its call's DISPATCH (`dispatch`).
 */
export function unfoldBudget(
  host: { event_type: string; metadata: Record<string, unknown> },
  dispatch?: { metadata: Record<string, unknown> },
): { event_type: string; submission_id: string; decision: string; metadata: Record<string, unknown> } | null {
  const folded = foldedBudget(host.metadata);
  if (folded === null) return null;
  const { decision, ...rest } = folded as Record<string, unknown> & { decision: string };
  const event = FOLDED_KIND[decision] as string;
  const text = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null);
  const metadata: Record<string, unknown> = {
    session_id: host.metadata.session_id,
    work_order_id: text(host.metadata.work_order_id),
    agent_id: text(host.metadata.agent_id),
    ...rest,
  };
  if (event === BUDGET_EVENTS.allocated) {
    metadata.reserved_cost ??= null;
    metadata.warnings ??= [];
  } else {
    const reservation = dispatch === undefined ? null : foldedBudget(dispatch.metadata);
    for (const key of FROM_RESERVATION) metadata[key] ??= reservation?.[key] ?? null;
    if (event === BUDGET_EVENTS.settled) {
      for (const key of [...SETTLEMENT_COUNTS, 'tokens', 'cost']) metadata[key] ??= null;
      for (const [charged, actual] of CHARGED) metadata[charged] ??= metadata[actual];
      metadata.usage_problems ??= [];
    }
  }
  return { event_type: event, submission_id: folded.request_id as string, decision, metadata };
}

/** A chain entry as any read of the ledger gives it. */
export interface ChainEntry {
  id: string;
  event_type: string;
  /** A ledger export's line may leave it out; an unfolded record has it. */
  submission_id?: string;
  decision: string;
  metadata: Record<string, unknown>;
}

/**
 * Every budget record a stretch of the chain holds, in chain order, standalone or folded (unfolded): what budget
 * state is rebuilt from, whichever form a root wrote. Entries are read oldest first; a settlement's reservation
 * fields come from its DISPATCH when the stretch holds it.
 */
export function chainBudgetRecords<T extends ChainEntry>(entries: Iterable<T>): T[] {
  const out: T[] = [];
  const dispatches = new Map<string, { metadata: Record<string, unknown> }>();
  for (const entry of entries) {
    if (entry.event_type.startsWith('BUDGET_')) {
      out.push(entry);
      continue;
    }
    if (entry.event_type !== 'DISPATCH' && entry.event_type !== 'EXCHANGE') continue;
    if (entry.event_type === 'DISPATCH') dispatches.set(entry.id, entry);
    const link = entry.metadata.dispatch_entry_id;
    const record = unfoldBudget(entry, typeof link === 'string' ? dispatches.get(link) : undefined);
    if (record !== null) out.push({ ...entry, ...record, reason: reasonOf(record) } as T);
  }
  return out;
}

/** The reason the budgeter writes on a standalone record, rebuilt from its unfolded metadata. */
function reasonOf(record: { event_type: string; decision: string; metadata: Record<string, unknown> }): string {
  const m = record.metadata;
  if (record.event_type === BUDGET_EVENTS.allocated) return `reserved ${m.reserved_tokens} tokens for ${m.model}`;
  if (record.event_type === BUDGET_EVENTS.released)
    return `released ${m.reserved_tokens} reserved tokens: the call never happened`;
  if (record.decision === 'SETTLED') return `settled ${m.tokens} tokens for ${m.model}`;
  return `usage unknown (${(m.usage_problems as string[]).join('; ')}); reservation kept charged`;
}

/**
 * The budget records of entries read oldest first (chainBudgetRecords), filtered and ordered as a ledger query
 * would: newest first unless `order: 'oldest'`.
 */
export function budgetRecordsOf<T extends ChainEntry>(
  entries: Iterable<T>,
  query: { event_type?: string; submission_id?: string; order?: 'newest' | 'oldest'; limit?: number } = {},
): T[] {
  const found = chainBudgetRecords(entries).filter(
    (r) =>
      (query.event_type === undefined || r.event_type === query.event_type) &&
      (query.submission_id === undefined || r.submission_id === query.submission_id),
  ) as T[];
  const ordered = query.order === 'oldest' ? found : found.reverse();
  return query.limit === undefined ? ordered : ordered.slice(0, query.limit);
}
