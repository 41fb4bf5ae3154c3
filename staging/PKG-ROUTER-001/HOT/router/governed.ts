import { randomUUID } from 'node:crypto';
import { envFault, faultMessage } from '#kernel/env-errors.js';
import type { AppendInput, LedgerEntry } from '#kernel/ledger/index.js';
import type { Warning } from '#kernel/catalogue/define.js';
import type { BudgetPort } from '#budgeter/port.js';
import type { ProviderResult, Usage } from '#providers/spec.js';
import type { BreakerPass, CircuitBreaker } from './breaker.js';
import * as budget from './budget.js';
import type { RouterConfig } from './config.js';
import { callCommits } from './durability.js';
import {
  dispatchRecord,
  exchangeErrorRecord,
  exchangeRecord,
  type AttemptRecord,
  type ExchangeContext,
} from './records.js';
import type { PromptRequest } from './request.js';
import { emptyResponse, type PromptResponse } from './response.js';
import { scrubRecords, scrubText, secretList } from './scrub.js';
import type { SecretPattern } from './secret-patterns.js';
import { mayHaveBilled, retryLoop, type SendFailure, type SendResult } from './send.js';

/**
 * route()'s pipeline split at the provider call, for a caller that speaks the provider's wire format itself
 * (the gateway): `admit` runs auth → budget reservation → breaker → DISPATCH; the caller makes its call through
 * `attempts` (the one retry loop); `conclude` writes the EXCHANGE and the budget settlement in one batch.
 */
export interface GovernedRequest {
  /** What the records name: prompt text, contract (the surface), agent, session, work order, model, token. */
  request: PromptRequest & { provider_id: string; model_id: string };
  /** The reservation: a provable upper bound of the call's input and output tokens (budgeter/bound.ts). */
  bounds: { estimated_input_tokens: number; max_output_tokens: number };
  /** The output the body makes the provider stop at (bodyOutputLimit), null when it names none. */
  outputLimit?: number | null;
  /** The most prompt tokens the body can hold (bodyInputLimit); default the reservation's input bound. */
  inputLimit?: number | null;
  contextHash: string;
  /** The prompt's pieces for the content store (their concatenation is `request.prompt`): one block each. */
  promptPieces?: readonly string[];
}

export interface GovernedCall {
  readonly requestId: string;
  readonly dispatchId: string;
  readonly request: GovernedRequest['request'];
  readonly contextHash: string;
  readonly promptPieces: readonly string[] | undefined;
  readonly breaker: CircuitBreaker;
  /** What the breaker's admit() gave this call: its outcomes count for a half-open breaker only if it is a probe. */
  readonly breakerPass: BreakerPass;
  readonly start: number;
  readonly secrets: readonly string[];
  readonly remainingTokens: number | null;
  readonly outputLimit: number | null;
  readonly inputLimit: number | null;
}

export type Admission =
  | { ok: true; call: GovernedCall }
  | { ok: false; code: string; message: string; entryId: string; retryAfterMs: number | null };

/** How the call ended, as the caller saw it. */
export type GovernedOutcome =
  /** The whole reply arrived (its final usage too, unless `usage_final` says otherwise). */
  | {
      kind: 'answered';
      answer: ProviderResult;
      usageFinal: boolean;
      attempts: AttemptRecord[];
      extra: Record<string, unknown>;
    }
  /** No reply: every attempt failed before a byte reached the client. */
  | {
      kind: 'failed';
      failure: SendFailure;
      attempts: AttemptRecord[];
      extra: Record<string, unknown>;
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
      extra: Record<string, unknown>;
    };

export interface Concluded {
  exchangeEntryId: string;
  cost: number | null;
  warnings: Warning[];
  /** Set only when the EXCHANGE could be neither committed nor spooled: the whole batch. */
  unrecorded: AppendInput[] | null;
}

export interface GovernedHost {
  config: RouterConfig;
  budget: BudgetPort | null;
  clock: () => number;
  random: () => number;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  secrets: readonly string[];
  /** Secret shapes scrubbed from every record (router/secret-patterns.ts). */
  patterns: readonly SecretPattern[];
  breaker(providerId: string, modelId: string): CircuitBreaker;
  authorise(request: PromptRequest): { code: string; message: string } | null;
  /** The budget scope of the request's key once it is authorised (charged as the `key` scope); none: undefined. */
  budgetScope(request: PromptRequest): string | undefined;
  appendAll(records: AppendInput[], authToken?: unknown): Promise<LedgerEntry>;
  record(
    records: AppendInput[],
    response: PromptResponse,
    dispatchId: string,
    secrets: readonly string[],
    degraded: (() => AppendInput[]) | null,
  ): Promise<AppendInput[] | null>;
  /** Append with the other batches ready in this turn (one transaction); the batch's entry ids, or null if it failed. */
  commitGrouped(records: AppendInput[], options?: { durable: boolean }): Promise<string[] | null>;
  reject(request: Partial<PromptRequest>, code: string, message: string, records: AppendInput[]): Promise<string>;
}

/** A request refused before auth could judge it (a body that is not the surface's format): PROMPT_REJECTED. */
export function refuse(
  host: GovernedHost,
  request: Partial<PromptRequest>,
  code: string,
  message: string,
): Promise<string> {
  return host.reject(request, code, message, []);
}

/** Auth alone, for a call that costs nothing upstream (count_tokens, models); a refusal is recorded. */
export async function authenticate(
  host: GovernedHost,
  request: PromptRequest,
): Promise<{ ok: true } | { ok: false; code: string; message: string; entryId: string }> {
  const denied = host.authorise(request);
  if (!denied) return { ok: true };
  return { ok: false, ...denied, entryId: await host.reject(request, denied.code, denied.message, []) };
}

const keyScope = (scope: string | undefined): { budget_scope?: string } =>
  scope === undefined ? {} : { budget_scope: scope };

/** When a caller refused for a fault of the machine (a full disk) is told to try again. */
export const UNAVAILABLE_RETRY_MS = 30_000;

export async function admit(host: GovernedHost, input: GovernedRequest): Promise<Admission> {
  const start = host.clock();
  const { request } = input;
  const refuse = async (
    code: string,
    message: string,
    records: AppendInput[] = [],
    retryAfterMs: number | null = null,
  ): Promise<Admission> => ({
    ok: false,
    code,
    message,
    entryId: await host.reject(request, code, message, records).catch((error: unknown) => {
      // A ledger the machine will not let us write cannot hold the refusal either: the caller still gets it.
      if (envFault(error) === null) throw error;
      return '';
    }),
    retryAfterMs,
  });
  const denied = host.authorise(request);
  if (denied) return refuse(denied.code, denied.message);
  const requestId = request.request_id ?? randomUUID();
  const reserved = await budget.reserve(host.budget, {
    request_id: requestId,
    session_id: request.session_id,
    model: request.model_id,
    ...input.bounds,
    ...(request.work_order_id ? { work_order_id: request.work_order_id } : {}),
    ...(request.agent_id ? { agent_id: request.agent_id } : {}),
    ...keyScope(host.budgetScope(request)),
  });
  if (!reserved.ok)
    return refuse(
      reserved.code,
      reserved.message,
      reserved.records,
      reserved.code === 'BUDGET_UNAVAILABLE' ? UNAVAILABLE_RETRY_MS : null,
    );
  const breaker = host.breaker(request.provider_id, request.model_id);
  const breakerPass = breaker.pass();
  if (!breakerPass) {
    const released = await budget.release(host.budget, requestId, []);
    const retryAfterMs = Math.max(1000, breakerWaitMs(host, breaker));
    return refuse(
      'CIRCUIT_OPEN',
      `circuit breaker for ${breaker.key} is open`,
      [...reserved.records, ...released],
      retryAfterMs,
    );
  }
  const batch = [...reserved.records, dispatchRecord(request, request.provider_id, request.model_id)];
  let dispatchId: string;
  try {
    // Group-committed with the other calls admitted in this turn; alone (and throwing) if the group failed.
    const ids = await host.commitGrouped(
      scrubRecords(batch, secretList([...host.secrets, request.auth_token]), host.patterns),
      callCommits(host.config.durability).admission,
    );
    dispatchId = ids?.[ids.length - 1] ?? (await host.appendAll(batch, request.auth_token)).id;
  } catch (error) {
    breaker.releaseProbe(breakerPass);
    await budget.release(host.budget, requestId, []);
    const fault = envFault(error);
    if (fault === null) throw error;
    return refuse('LEDGER_UNAVAILABLE', faultMessage(fault), [], UNAVAILABLE_RETRY_MS);
  }
  return {
    ok: true,
    call: {
      requestId,
      dispatchId,
      request,
      contextHash: input.contextHash,
      promptPieces: input.promptPieces,
      breaker,
      breakerPass,
      start,
      secrets: secretList([...host.secrets, request.auth_token]),
      remainingTokens: reserved.remaining_tokens,
      outputLimit: input.outputLimit ?? null,
      inputLimit: input.inputLimit === undefined ? input.bounds.estimated_input_tokens : input.inputLimit,
    },
  };
}

function breakerWaitMs(host: GovernedHost, breaker: CircuitBreaker): number {
  const openedAt = breaker.snapshot().opened_at;
  if (openedAt === null) return 0;
  return Math.max(0, Date.parse(openedAt) + host.config.breaker.reset_timeout_ms - host.clock());
}

/** The one retry loop around the caller's one-attempt call, feeding the call's breaker. */
export function attempts<R>(
  host: GovernedHost,
  call: GovernedCall,
  attempt: () => Promise<R>,
  signal?: AbortSignal,
): Promise<SendResult<R>> {
  return retryLoop(attempt, {
    ...(signal === undefined ? {} : { signal }),
    config: host.config,
    clock: host.clock,
    random: host.random,
    sleep: host.sleep,
    onFailure: (failure) => {
      if (failure.retryable) call.breaker.recordFailure(call.breakerPass);
    },
    // Half-open, only the probes may reach the provider: a call admitted before the opening stops retrying too.
    mayRetry: () => call.breaker.snapshot().state === 'CLOSED',
  });
}

const UNKNOWN_USAGE: Usage = {
  input_tokens: null,
  output_tokens: null,
  cache_read_tokens: null,
  cache_write_tokens: null,
  raw: null,
};

/** EXCHANGE + settlement, one batch, group-committed with the others ready (or alone, or the spool). Never rejects. */
export async function conclude(host: GovernedHost, call: GovernedCall, outcome: GovernedOutcome): Promise<Concluded> {
  const response = emptyResponse(new Date(call.start).toISOString(), call.request.provider_id, call.request.model_id);
  const ctx: ExchangeContext = {
    request: call.request,
    dispatchEntryId: call.dispatchId,
    contextHash: call.contextHash,
    ...(call.promptPieces === undefined ? {} : { promptPieces: call.promptPieces }),
    modelId: call.request.model_id,
    latencyMs: host.clock() - call.start,
    attempts: outcome.attempts,
  };
  let records: AppendInput[];
  let cost: number | null = null;
  if (outcome.kind === 'answered') {
    call.breaker.recordSuccess(call.breakerPass);
    // A reply whose final usage never came is charged at its reservation, never at a partial count.
    const settled = await budget.settle(
      host.budget,
      call.requestId,
      outcome.usageFinal ? outcome.answer.usage : UNKNOWN_USAGE,
      response.warnings,
      call.outputLimit,
      call.inputLimit,
    );
    cost = settled.cost;
    records = [
      withExtra(exchangeRecord(ctx, outcome.answer), { ...outcome.extra, usage_complete: outcome.usageFinal }),
      ...settled.records,
    ];
  } else if (outcome.kind === 'failed') {
    if (!outcome.failure.retryable) call.breaker.releaseProbe(call.breakerPass);
    const message = scrubText(outcome.failure.message, call.secrets);
    // The client went away while the upstream worked on the request: it may still bill it, so it stays charged.
    const cancelled = outcome.failure.kind === 'cancelled';
    const budgetRecords =
      mayHaveBilled(outcome.failure, outcome.attempts) || (cancelled && outcome.unsent !== true)
        ? (await budget.settle(host.budget, call.requestId, UNKNOWN_USAGE, response.warnings)).records
        : await budget.release(host.budget, call.requestId, response.warnings);
    const record = exchangeErrorRecord(ctx, outcome.failure.error_code, message);
    records = [
      cancelled
        ? withExtra(
            { ...record, decision: 'CANCELLED' },
            { ...outcome.extra, outcome: 'cancelled', usage_complete: false },
          )
        : withExtra(record, outcome.extra),
      ...budgetRecords,
    ];
  } else {
    call.breaker.releaseProbe(call.breakerPass);
    // Bytes were produced and possibly billed: the reservation stays charged as unknown usage.
    const settled = await budget.settle(host.budget, call.requestId, UNKNOWN_USAGE, response.warnings);
    records = [cutRecord(ctx, outcome), ...settled.records];
  }
  let grouped: AppendInput[] | null = null;
  try {
    grouped = scrubRecords(records, call.secrets, host.patterns);
  } catch {
    grouped = null;
  }
  const committed =
    grouped === null ? null : await host.commitGrouped(grouped, callCommits(host.config.durability).conclusion);
  if (committed?.[0] !== undefined)
    return { exchangeEntryId: committed[0], cost, warnings: response.warnings, unrecorded: null };
  // The group's transaction failed (or this batch cannot be scrubbed): alone, with retries, degrade and spool.
  const unrecorded = await host.record(records, response, call.dispatchId, call.secrets, null);
  return { exchangeEntryId: response.exchange_entry_id, cost, warnings: response.warnings, unrecorded };
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

/** The EXCHANGE with the caller's extension fields, keys kept in sorted order (the ledger's fast path). */
function withExtra(record: AppendInput, extra: Record<string, unknown>): AppendInput {
  const merged: Record<string, unknown> = { ...(record.metadata ?? {}), ...extra };
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(merged).sort()) sorted[key] = merged[key];
  return { ...record, metadata: sorted };
}
