import { type RefusalCode, type Warning, warning } from '#kernel/catalogue/define.js';
import { envFault, faultMessage } from '#kernel/env-errors.js';
import { isCpError, show } from '#kernel/errors.js';
import type { AppendInput } from '#kernel/ledger/index.js';
import type { BudgetPort } from '#budgeter/port.js';
import { foldBudget, foldsInto } from '#budgeter/records.js';
import { bodyInputBounds, bodyOutputBound, bodyOutputLimit, promptInputBound } from '#budgeter/bound.js';
import { uncachedInputTokens, type Usage } from '#providers/spec.js';
import type { PromptRequest } from './request.js';

/**
 * The router's side of the budgeter. The budgeter is opened without a ledger, so each step hands back its
 * ledger records and the router appends them in the same batch as its own DISPATCH / EXCHANGE /
 * PROMPT_REJECTED record: budgets cost no extra fsync.
 */
export interface BudgetStep {
  records: AppendInput[];
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/**
 * Provider usage counts every prompt token in input_tokens; the budgeter prices uncached input separately.
 * Values are passed on as received unless all three prompt counts are sound, so the budgeter names a malformed
 * one (a string is never coerced to a number here); a null stays unknown.
 */
export function budgetUsage(usage: Usage): Record<string, unknown> {
  const prompt = [usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens];
  const input = prompt.every(isCount)
    ? uncachedInputTokens(usage)
    : prompt.some((v) => v === null)
      ? null
      : usage.input_tokens;
  return {
    input_tokens: input,
    output_tokens: usage.output_tokens,
    cache_read_tokens: usage.cache_read_tokens,
    cache_write_tokens: usage.cache_write_tokens,
  };
}

/** A call's token bounds, worked out once when it is admitted (budgeter/bound.ts). */
export interface CallBounds {
  /** What the call reserves: a provable upper bound of its input tokens and its whole output allowance. */
  reservation: { estimated_input_tokens: number; max_output_tokens: number };
  /**
   * The most prompt tokens an honest provider can report (the reservation's input bound), or null when nothing
   * bounds them (a body with a document). Usage reporting more is a lie settle() does not charge.
   */
  inputLimit: number | null;
  /**
   * The output the provider is made to stop at: a compiled body's own max-token fields (null when it names none),
   * or the max_tokens the router sends with a prompt. Usage reporting more is a lie settle() does not charge.
   */
  outputLimit: number | null;
}

/** A compiled body is sent as is, so the body, not the request, says what is asked for. */
export function callBounds(request: PromptRequest, maxTokens: number): CallBounds {
  const body = request.compiled?.body;
  if (body) {
    const input = bodyInputBounds(body);
    return {
      reservation: { estimated_input_tokens: input.bound, max_output_tokens: bodyOutputBound(body, maxTokens) },
      inputLimit: input.limit,
      outputLimit: bodyOutputLimit(body),
    };
  }
  const input = promptInputBound(request.prompt);
  return {
    reservation: { estimated_input_tokens: input, max_output_tokens: maxTokens },
    inputLimit: input,
    outputLimit: maxTokens,
  };
}

export type Reserved =
  | { ok: true; records: AppendInput[]; remaining_tokens: number | null }
  | {
      ok: false;
      code: RefusalCode;
      message: string;
      records: AppendInput[];
      /** When the refused call may be made again (a rate window's end); absent: not said. */
      retry_after_ms?: number | null;
    };

export async function reserve(budget: BudgetPort | null, request: Record<string, unknown>): Promise<Reserved> {
  if (!budget) return { ok: true, records: [], remaining_tokens: null };
  try {
    const outcome = await budget.reserve(request);
    if (outcome.ok && outcome.replayed) {
      // The budgeter replays a step so a caller may repeat it safely; a call is not a step. A request_id that already
      // has a reservation names a call made (or being made), and a second call under it would never be charged.
      const id = outcome.reservation.request_id;
      return {
        ok: false,
        code: 'BUDGET_ERROR',
        message: `request_id ${show(id)} already has a reservation (${outcome.reservation.state}): one request_id names one call; send a new request_id for a new call`,
        records: [],
      };
    }
    return outcome.ok
      ? { ok: true, records: outcome.records, remaining_tokens: outcome.remaining_tokens }
      : {
          ok: false,
          code: outcome.code,
          message: outcome.message,
          records: outcome.records,
          retry_after_ms: outcome.retry_after_ms,
        };
  } catch (error) {
    // The budgeter's coded refusals (a bad request, its database or ledger) refuse the call, a fault of the
    // machine (a full disk) as one that may be retried; anything else is a bug and stays one (ERR_INTERNAL),
    // never renamed into a budget outcome.
    const fault = envFault(error);
    if (fault) return { ok: false, code: 'BUDGET_UNAVAILABLE', message: faultMessage(fault), records: [] };
    if (!isCpError(error) || error.code === 'ERR_INTERNAL') throw error;
    return { ok: false, code: 'BUDGET_ERROR', message: error.message, records: [] };
  }
}

/** Give the reservation back; a failure here is reported by the caller, never thrown past the exchange. */
export async function release(
  budget: BudgetPort | null,
  requestId: string,
  warnings: Warning[],
): Promise<AppendInput[]> {
  if (!budget) return [];
  try {
    return (await budget.release(requestId)).records;
  } catch (error) {
    warnings.push(warning('BUDGET_RELEASE_FAILED', `${error instanceof Error ? error.message : String(error)}`));
    return [];
  }
}

export interface SettleStep {
  records: AppendInput[];
  cost: number | null;
  remaining_tokens: number | null;
}

export async function settle(
  budget: BudgetPort | null,
  requestId: string,
  usage: Usage,
  warnings: Warning[],
  outputLimit: number | null = null,
  inputLimit: number | null = null,
  /** The model the usage is priced at when not the reservation's: the deployment that answered a routed call. */
  pricedAs: string | null = null,
): Promise<SettleStep> {
  if (!budget) return { records: [], cost: null, remaining_tokens: null };
  const output = usage.output_tokens;
  // The provider was told to stop at outputLimit: more output than that is no count to charge by. Taken as
  // unknown usage, the reservation (which holds the whole output allowance) stays charged, so a lying upstream
  // cannot push a scope past its limit by reporting a billion tokens.
  if (outputLimit !== null && isCount(output) && output > outputLimit)
    return settleUnknown(
      budget,
      requestId,
      `the provider reported ${output} output tokens, more than the ${outputLimit} the request allowed`,
      warnings,
    );
  // Likewise the prompt: it cannot hold more tokens than its bytes bound (budgeter/bound.ts), cache buckets included.
  const prompt = [usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens].filter(isCount);
  const claimed = prompt.length === 0 ? null : Math.max(...prompt);
  if (inputLimit !== null && claimed !== null && claimed > inputLimit)
    return settleUnknown(
      budget,
      requestId,
      `the provider reported ${claimed} input tokens, more than the ${inputLimit} the request could hold`,
      warnings,
    );
  // A count the reply carried that could not be read (a string, 1e300): the budgeter would only see it missing.
  if (usage.raw !== null && (usage.input_tokens === null || usage.output_tokens === null)) {
    const unread = usage.input_tokens === null ? ['input_tokens'] : [];
    if (usage.output_tokens === null) unread.push('output_tokens');
    const sent = show(usage.raw);
    return settleUnknown(
      budget,
      requestId,
      `${unread.join(' and ')} not a token count in the provider's usage (it sent ${sent})`,
      warnings,
    );
  }
  try {
    const settled = await budget.settle({
      request_id: requestId,
      usage: budgetUsage(usage),
      ...(pricedAs === null ? {} : { model: pricedAs }),
    });
    if (!settled.usage_known)
      warnings.push(
        warning('BUDGET_USAGE_UNKNOWN', `${settled.usage_problems.join('; ')} (the reservation stays charged)`),
      );
    return { records: settled.records, cost: settled.cost, remaining_tokens: settled.remaining_tokens };
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    warnings.push(warning('BUDGET_SETTLE_FAILED', `${reason}`));
    return settleUnknown(budget, requestId, `settlement failed (${reason})`, warnings);
  }
}

/** Settlement failed with this usage: charge the reservation as unknown usage, so it is not left pending. */
async function settleUnknown(
  budget: BudgetPort,
  requestId: string,
  reason: string,
  warnings: Warning[],
): Promise<SettleStep> {
  try {
    const settled = await budget.chargeUnknown(requestId, `${reason}; usage unknown`);
    if (!settled) return { records: [], cost: null, remaining_tokens: null };
    warnings.push(warning('BUDGET_USAGE_UNKNOWN', `${reason} (the reservation stays charged)`));
    return { records: settled.records, cost: null, remaining_tokens: settled.remaining_tokens };
  } catch (error) {
    warnings.push(warning('BUDGET_SETTLE_FAILED', `${error instanceof Error ? error.message : String(error)}`));
    return { records: [], cost: null, remaining_tokens: null };
  }
}

/**
 * A call's batch with its budget step folded into its own record (`host`: its DISPATCH or its EXCHANGE): the
 * reservation rides in the DISPATCH, the settlement or release in the EXCHANGE (budgeter/records.ts foldBudget).
 * Records that fold into neither (a BUDGET_EXCEEDED) stay standalone, before a DISPATCH and after an EXCHANGE, where
 * the budget step put them. Returns the batch and the host's index in it.
 */
export function folded(host: AppendInput, records: readonly AppendInput[]): { batch: AppendInput[]; at: number } {
  const kind = host.event_type === 'DISPATCH' ? 'DISPATCH' : 'EXCHANGE';
  let record = host;
  const rest: AppendInput[] = [];
  for (const r of records) {
    if (record === host && foldsInto(r) === kind) record = foldBudget(host, r);
    else rest.push(r);
  }
  return kind === 'DISPATCH' ? { batch: [...rest, record], at: rest.length } : { batch: [record, ...rest], at: 0 };
}
