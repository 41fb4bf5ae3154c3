import { envFault, faultMessage } from '#kernel/env-errors.js';
import type { AppendInput } from '#kernel/ledger/index.js';
import type { Warning } from '#kernel/catalogue/define.js';
import type { BreakerPass, CircuitBreaker } from './breaker.js';
import * as budget from './budget.js';
import { callCommits } from './durability.js';
import type { Admission, GovernedHost, GovernedRequest } from './governed.js';
import { dispatchRecord } from './records.js';
import type { PromptRequest } from './request.js';
import type { Route } from './routing/governed-route.js';
import { scrubRecords } from './scrub.js';

// The steps of an admission (governed.ts `admit`): the reservation, the DISPATCH commit, and a refusal recorded.

/** When a caller refused for a fault of the machine (a full disk) is told to try again. */
export const UNAVAILABLE_RETRY_MS = 30_000;

/** A refused admission, recorded (PROMPT_REJECTED after `records`) unless the machine will not let it be. */
export async function refusal(
  host: GovernedHost,
  request: Partial<PromptRequest>,
  code: string,
  message: string,
  records: AppendInput[] = [],
  retryAfterMs: number | null = null,
  warnings: Warning[] = [],
): Promise<Admission> {
  const entryId = await host.reject(request, code, message, records).catch((error: unknown) => {
    // A ledger the machine will not let us write cannot hold the refusal either: the caller still gets it.
    if (envFault(error) === null) throw error;
    return '';
  });
  return { ok: false, code, message, entryId, retryAfterMs, warnings };
}

/**
 * The call's DISPATCH (its reservation folded in) committed: its id, or a LEDGER_UNAVAILABLE refusal when the machine
 * will not let it be written (the probe, the route and the reservation given back first).
 */
export async function commitDispatch(
  host: GovernedHost,
  request: GovernedRequest['request'],
  requestId: string,
  secrets: readonly string[],
  reserved: Extract<budget.Reserved, { ok: true }>,
  breaker: CircuitBreaker,
  breakerPass: BreakerPass,
  route: Route | null,
): Promise<string | Admission> {
  host.exchanges.callStarted();
  try {
    const dispatch = dispatchRecord(request, request.provider_id, request.model_id);
    return await commitAdmission(host, request, secrets, budget.folded(dispatch, reserved.records).batch);
  } catch (error) {
    host.exchanges.callEnded();
    breaker.releaseProbe(breakerPass);
    route?.finish(null);
    const warnings: Warning[] = [];
    await budget.release(host.budget, requestId, warnings);
    const fault = envFault(error);
    if (fault === null) throw error;
    return refusal(host, request, 'LEDGER_UNAVAILABLE', faultMessage(fault), [], UNAVAILABLE_RETRY_MS, warnings);
  }
}

/** The one place a call's budget is reserved: its bounds, under its session, agent, work order and key scope. */
export function reservation(host: GovernedHost, input: GovernedRequest, requestId: string): Promise<budget.Reserved> {
  const { request } = input;
  const scope = host.budgetScope(request);
  return budget.reserve(host.budget, {
    request_id: requestId,
    session_id: request.session_id,
    model: input.route?.reserveModel ?? request.model_id,
    ...input.bounds,
    ...(request.work_order_id ? { work_order_id: request.work_order_id } : {}),
    ...(request.agent_id ? { agent_id: request.agent_id } : {}),
    ...(scope === undefined ? {} : { budget_scope: scope }),
  });
}

/**
 * The admission batch (the reservation's records and the DISPATCH) committed before anything is sent: grouped with
 * the other calls admitted in this turn; alone if another batch sank the group; throws if it cannot be written.
 * Returns the DISPATCH's id.
 */
async function commitAdmission(
  host: GovernedHost,
  request: PromptRequest,
  secrets: readonly string[],
  batch: AppendInput[],
): Promise<string> {
  const scrubbed = scrubRecords(batch, secrets, host.patterns);
  const commit = callCommits(host.config.durability).admission;
  const grouped = await host.exchanges.commitGrouped(scrubbed, commit);
  if (grouped.ok) return grouped.ids[grouped.ids.length - 1] as string;
  if (grouped.alone) throw grouped.error;
  return (await host.exchanges.appendAll(batch, request.auth_token, commit)).id;
}

export function breakerWaitMs(host: GovernedHost, breaker: CircuitBreaker): number {
  const openedAt = breaker.snapshot().opened_at;
  if (openedAt === null) return 0;
  return Math.max(0, Date.parse(openedAt) + host.config.breaker.reset_timeout_ms - host.clock());
}
