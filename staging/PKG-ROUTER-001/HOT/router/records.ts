import type { AppendInput } from '../kernel/ledger/index.js';
import type { PromptRequest } from './request.js';
import type { ProviderResult } from '../providers/spec.js';

/** One provider attempt inside an exchange (retries are recorded here, never as extra EXCHANGEs). */
export interface AttemptRecord {
  attempt: number;
  outcome: 'success' | 'error' | 'timeout';
  status: number | null;
  kind: string | null;
  latency_ms: number;
  retry_after_ms: number | null;
}

function identity(request: PromptRequest): Record<string, string> {
  return {
    agent_id: request.agent_id,
    session_id: request.session_id,
    work_order_id: request.work_order_id ?? '',
    tier: request.tier ?? '',
    contract_id: request.contract_id,
    framework_id: request.framework_id ?? '',
  };
}

/** PROMPT_REJECTED: exactly five metadata keys; no prompt text. */
export function rejectionRecord(request: Partial<PromptRequest>, errorCode: string, errorMessage: string): AppendInput {
  const contractId = typeof request.contract_id === 'string' && request.contract_id ? request.contract_id : 'UNKNOWN';
  return {
    event_type: 'PROMPT_REJECTED',
    submission_id: contractId,
    decision: 'REJECTED',
    reason: `${errorCode}: ${errorMessage}`,
    metadata: {
      agent_id: typeof request.agent_id === 'string' ? request.agent_id : '',
      session_id: typeof request.session_id === 'string' ? request.session_id : '',
      contract_id: contractId,
      error_code: errorCode,
      error_message: errorMessage,
    },
  };
}

/** DISPATCH: the three-key crash-recovery marker written before sending. */
export function dispatchRecord(request: PromptRequest, providerId: string, modelId: string): AppendInput {
  return {
    event_type: 'DISPATCH',
    submission_id: request.contract_id,
    decision: 'DISPATCHED',
    reason: `Dispatching to ${providerId}/${modelId}`,
    metadata: { contract_id: request.contract_id, agent_id: request.agent_id, session_id: request.session_id },
  };
}

export interface ExchangeContext {
  request: PromptRequest;
  dispatchEntryId: string;
  contextHash: string;
  modelId: string;
  latencyMs: number;
  attempts: AttemptRecord[];
}

/** EXCHANGE for a completed round-trip: the seed's 16 fields plus the documented extensions. */
export function exchangeRecord(ctx: ExchangeContext, answer: ProviderResult): AppendInput {
  const { usage } = answer;
  return {
    event_type: 'EXCHANGE',
    submission_id: ctx.request.contract_id,
    decision: 'SUCCESS',
    reason: 'Exchange completed',
    metadata: {
      ...identity(ctx.request),
      prompt: ctx.request.prompt,
      response: answer.content,
      outcome: 'success',
      input_tokens: usage.input_tokens,
      output_tokens: usage.output_tokens,
      context_hash: ctx.contextHash,
      dispatch_entry_id: ctx.dispatchEntryId,
      model_id: answer.model || ctx.modelId,
      finish_reason: answer.stop_reason,
      latency_ms: ctx.latencyMs,
      ...extensions(ctx, usage.cache_read_tokens, usage.cache_write_tokens, usage.raw ?? undefined),
    },
  };
}

/** EXCHANGE for a failed round-trip: the prompt (we tried to send it), no response, the error. */
export function exchangeErrorRecord(ctx: ExchangeContext, errorCode: string, errorMessage: string): AppendInput {
  const outcome = errorCode === 'TIMEOUT' ? 'timeout' : 'error';
  return {
    event_type: 'EXCHANGE',
    submission_id: ctx.request.contract_id,
    decision: 'ERROR',
    reason: `${errorCode}: ${errorMessage}`,
    metadata: {
      ...identity(ctx.request),
      prompt: ctx.request.prompt,
      response: '',
      outcome,
      error_code: errorCode,
      error_message: errorMessage,
      context_hash: ctx.contextHash,
      dispatch_entry_id: ctx.dispatchEntryId,
      model_id: ctx.modelId,
      latency_ms: ctx.latencyMs,
      ...extensions(ctx, null, null, undefined),
    },
  };
}

function extensions(ctx: ExchangeContext, cacheRead: number | null, cacheWrite: number | null, raw: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = { attempts: ctx.attempts, cache_read_tokens: cacheRead, cache_write_tokens: cacheWrite };
  if (ctx.request.compiled) out.stable_prefix_hash = ctx.request.compiled.stable_prefix_hash;
  if (raw !== undefined) out.usage_raw = raw;
  return out;
}
