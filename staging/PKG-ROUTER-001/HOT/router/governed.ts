import { randomUUID } from 'node:crypto';
import type { AppendInput } from '#kernel/ledger/index.js';
import type { Warning } from '#kernel/catalogue/define.js';
import type { BudgetPort } from '#budgeter/port.js';
import { type ProviderResult, UNKNOWN_USAGE, type Usage } from '#providers/spec.js';
import type { BreakerPass, CircuitBreaker } from './breaker.js';
import * as budget from './budget.js';
import type { RouterConfig } from './config.js';
import { callCommits } from './durability.js';
import { exchangeFor, type GovernedOutcome, wellTyped, withoutRawUsage } from './conclusion-records.js';
import type { ExchangeWriter, Recorded } from './exchange-writer.js';
import { breakerWaitMs, commitDispatch, refusal, reservation, UNAVAILABLE_RETRY_MS } from './admission.js';
import { type GovernedObserver, notify } from './observer.js';
import type { ExchangeContext } from './records.js';
import type { PromptRequest } from './request.js';
import { scrubRecords, scrubText, secretList } from './scrub.js';
import type { SecretPattern } from './secret-patterns.js';
import { billedBeforeAnswer, type Route, routedLoop, usedTokens } from './routing/governed-route.js';
import { mayHaveBilled, retryLoop, type SendResult } from './send.js';

export type { GovernedOutcome } from './conclusion-records.js';
export type { Route } from './routing/governed-route.js';
export { UNAVAILABLE_RETRY_MS } from './admission.js';

/**
 * The one governed pipeline, for every surface (route(), the gateway's surfaces): `admit` runs auth → budget
 * reservation → breaker → DISPATCH; the surface makes its provider call through `attempts` (the one retry loop);
 * `conclude` writes the EXCHANGE carrying the budget settlement (or spools it). A surface validates its
 * own input into a GovernedRequest and turns the outcome into its own output; it holds no governance.
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
  /** The call's way through a model alias's deployments (router/routing); absent: the family's one upstream. */
  route?: Route | null;
}

export interface GovernedCall {
  readonly requestId: string;
  readonly dispatchId: string;
  readonly request: GovernedRequest['request'];
  readonly contextHash: string;
  readonly promptPieces: readonly string[] | undefined;
  /** The breaker of the upstream the call is on (a routed call's moves with it to the next deployment). */
  breaker: CircuitBreaker;
  /** What the breaker's admit() gave this call: its outcomes count for a half-open breaker only if it is a probe. */
  breakerPass: BreakerPass;
  readonly route: Route | null;
  readonly start: number;
  readonly secrets: readonly string[];
  readonly remainingTokens: number | null;
  readonly outputLimit: number | null;
  readonly inputLimit: number | null;
}

export type Admission =
  | { ok: true; call: GovernedCall }
  | {
      ok: false;
      code: string;
      message: string;
      entryId: string;
      retryAfterMs: number | null;
      /** Problems met while refusing (a reservation that could not be given back). */
      warnings: Warning[];
    };

export interface Concluded {
  exchangeEntryId: string;
  cost: number | null;
  /** The budget left after the settlement; null when nothing was settled (or no budget). */
  remainingTokens: number | null;
  /** From admission to conclusion, by the host's clock (the EXCHANGE's latency_ms). */
  latencyMs: number;
  /** The answer as recorded (well-typed), for an answered call; null otherwise. */
  answer: ProviderResult | null;
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
  /**
   * Where a call's records go: the admission and conclusion commits (grouped), the single-batch path of a
   * conclusion (retries, the degraded batch, the spool), and the count of calls in flight the group commit reads.
   */
  exchanges: ExchangeWriter;
  reject(request: Partial<PromptRequest>, code: string, message: string, records: AppendInput[]): Promise<string>;
  /** Told of each call's admission, first byte and conclusion (metrics, traces); absent: nobody watches. */
  observer?: GovernedObserver | undefined;
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

export async function admit(host: GovernedHost, input: GovernedRequest): Promise<Admission> {
  const start = host.clock();
  const { request } = input;
  const denied = host.authorise(request);
  if (denied) return refusal(host, request, denied.code, denied.message);
  const requestId = request.request_id ?? randomUUID();
  const reserved = await reservation(host, input, requestId);
  if (!reserved.ok) {
    const retryAfterMs =
      reserved.code === 'BUDGET_UNAVAILABLE' ? UNAVAILABLE_RETRY_MS : (reserved.retry_after_ms ?? null);
    return refusal(host, request, reserved.code, reserved.message, reserved.records, retryAfterMs);
  }
  const route = input.route ?? null;
  // A promise only when a shared RPM/TPM count is asked: no extra turn of the event loop otherwise.
  const starting = route?.start() ?? null;
  const unroutable = starting instanceof Promise ? await starting : starting;
  if (route !== null && unroutable !== null) {
    const warnings: Warning[] = [];
    const released = await budget.release(host.budget, requestId, warnings);
    const { code, message, retryAfterMs } = unroutable;
    return refusal(host, request, code, message, [...reserved.records, ...released], retryAfterMs, warnings);
  }
  const breaker = route?.breaker ?? host.breaker(request.provider_id, request.model_id);
  const breakerPass = route === null ? breaker.pass() : route.pass;
  if (!breakerPass) {
    const warnings: Warning[] = [];
    const released = await budget.release(host.budget, requestId, warnings);
    const message = `circuit breaker for ${breaker.key} is open`;
    const retryAfterMs = Math.max(1000, breakerWaitMs(host, breaker));
    return refusal(host, request, 'CIRCUIT_OPEN', message, [...reserved.records, ...released], retryAfterMs, warnings);
  }
  const secrets = secretList([...host.secrets, request.auth_token]);
  const dispatchId = await commitDispatch(host, request, requestId, secrets, reserved, breaker, breakerPass, route);
  if (typeof dispatchId !== 'string') return dispatchId;
  const admitted: Admission & { ok: true } = {
    ok: true,
    call: {
      requestId,
      dispatchId,
      request,
      contextHash: input.contextHash,
      promptPieces: input.promptPieces,
      breaker,
      breakerPass,
      route,
      start,
      secrets,
      remainingTokens: reserved.remaining_tokens,
      outputLimit: input.outputLimit ?? null,
      inputLimit: input.inputLimit === undefined ? input.bounds.estimated_input_tokens : input.inputLimit,
    },
  };
  notify(host.observer, (o) => o.admitted(admitted.call));
  return admitted;
}

/** A streamed reply's first byte released to the client (the time-to-first-token an observer measures). */
export function firstToken(host: GovernedHost, call: GovernedCall): void {
  notify(host.observer, (o) => o.firstToken(call, host.clock() - call.start));
}

/**
 * The one retry loop around the surface's one-attempt provider call, feeding the call's breaker. A routed call
 * moves to its next deployment after a failure its config falls back on (never after a reply began: the loop
 * ends when the reply's headers arrive), and each attempt's record names where it went (`upstreamId`: the
 * upstream's request id of a result).
 */
export function attempts<R>(
  host: GovernedHost,
  call: GovernedCall,
  attempt: () => Promise<R>,
  signal?: AbortSignal,
  upstreamId?: (result: R) => string | null,
): Promise<SendResult<R>> {
  const { route } = call;
  const { observer } = host;
  const observed =
    observer?.attemptStarted === undefined
      ? attempt
      : () => {
          notify(observer, (o) => o.attemptStarted?.(call));
          return attempt();
        };
  return retryLoop(observed, {
    ...(route === null ? {} : routedLoop(call, route, upstreamId)),
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

/** EXCHANGE carrying the settlement, one batch, group-committed with the others ready (or alone, or the spool). Never rejects. */
export async function conclude(host: GovernedHost, call: GovernedCall, outcome: GovernedOutcome): Promise<Concluded> {
  const latencyMs = host.clock() - call.start;
  const warnings: Warning[] = [];
  const ctx: ExchangeContext = {
    request: call.request,
    dispatchEntryId: call.dispatchId,
    contextHash: call.contextHash,
    ...(call.promptPieces === undefined ? {} : { promptPieces: call.promptPieces }),
    modelId: call.request.model_id,
    latencyMs,
    attempts: outcome.attempts,
  };
  const answered = outcome.kind === 'answered' ? { ...outcome, answer: wellTyped(outcome.answer) } : outcome;
  noteBreaker(call, answered);
  const pricedAs = call.route?.servedModel ?? null;
  call.route?.finish(answered.kind === 'answered' ? usedTokens(answered.answer.usage) : null);
  const message = answered.kind === 'failed' ? scrubText(answered.failure.message, call.secrets) : '';
  const settled = await settlement(host, call, answered, warnings, pricedAs);
  const { batch } = budget.folded(exchangeFor(ctx, answered, message, warnings), settled.records);
  const degraded =
    answered.kind === 'answered'
      ? (): AppendInput[] => [withoutRawUsage(batch[0] as AppendInput), ...batch.slice(1)]
      : null;
  const recorded = await commitConclusion(host, call, batch, warnings, degraded);
  host.exchanges.callEnded();
  const seen = { exchange: batch[0] as AppendInput, exchangeId: recorded.entryId, cost: settled.cost, latencyMs };
  notify(host.observer, (o) => o.concluded(call, seen));
  return {
    exchangeEntryId: recorded.entryId,
    cost: settled.cost,
    remainingTokens: settled.remaining_tokens,
    latencyMs,
    answer: answered.kind === 'answered' ? answered.answer : null,
    warnings,
    unrecorded: recorded.unrecorded,
  };
}

/** An answer closes the breaker's probe as a success; a failure counted by the retry loop, or none, frees it. */
function noteBreaker(call: GovernedCall, outcome: GovernedOutcome): void {
  if (outcome.kind === 'answered') call.breaker.recordSuccess(call.breakerPass);
  else if (outcome.kind === 'cut' || !outcome.failure.retryable) call.breaker.releaseProbe(call.breakerPass);
}

/**
 * The reservation's end, the one place a call's budget is settled: charged at the reply's final usage; charged as
 * unknown usage when the provider may have billed without saying how much (a reply without final usage, one cut
 * short, a failure after a 2xx or past our deadline, a client gone while the upstream worked); else given back.
 */
async function settlement(
  host: GovernedHost,
  call: GovernedCall,
  outcome: GovernedOutcome,
  warnings: Warning[],
  pricedAs: string | null,
): Promise<budget.SettleStep> {
  let usage: Usage | null = UNKNOWN_USAGE;
  // A routed call answered after an attempt elsewhere that may have been billed (a timeout once the body was sent)
  // keeps the whole reservation charged: it bounds the dearest target's cost, so it covers both.
  const billedBefore = call.route !== null && billedBeforeAnswer(outcome.attempts);
  if (outcome.kind === 'answered' && outcome.usageFinal && !billedBefore) usage = outcome.answer.usage;
  else if (outcome.kind === 'failed') {
    const { failure } = outcome;
    const cancelledAfterSend = failure.kind === 'cancelled' && outcome.unsent !== true;
    if (!mayHaveBilled(failure, outcome.attempts) && !cancelledAfterSend) usage = null;
  }
  if (usage === null)
    return { records: await budget.release(host.budget, call.requestId, warnings), cost: null, remaining_tokens: null };
  return budget.settle(host.budget, call.requestId, usage, warnings, call.outputLimit, call.inputLimit, pricedAs);
}

/**
 * The conclusion batch (EXCHANGE + settlement) committed before the answer is released: grouped with the others
 * ready in this turn; if the group failed (or the batch cannot be scrubbed), alone with retries, degraded, spooled.
 */
async function commitConclusion(
  host: GovernedHost,
  call: GovernedCall,
  records: AppendInput[],
  warnings: Warning[],
  degraded: (() => AppendInput[]) | null,
): Promise<Recorded> {
  let scrubbed: AppendInput[] | null;
  try {
    scrubbed = scrubRecords(records, call.secrets, host.patterns);
  } catch {
    scrubbed = null;
  }
  const grouped =
    scrubbed === null
      ? null
      : await host.exchanges.commitGrouped(scrubbed, callCommits(host.config.durability).conclusion);
  if (grouped?.ok) {
    host.exchanges.committed();
    return { entryId: grouped.ids[0] ?? '', unrecorded: null };
  }
  // A group of this batch alone failed for this batch: that was its first attempt.
  const failed = grouped?.alone ? { error: grouped.error } : undefined;
  return host.exchanges.record(records, warnings, call.dispatchId, call.secrets, degraded, failed);
}
