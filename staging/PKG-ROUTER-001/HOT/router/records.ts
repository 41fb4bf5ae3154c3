import type { AppendInput } from '#kernel/ledger/index.js';
import type { PromptRequest } from './request.js';
import { boundJson } from '#providers/bound.js';
import type { ProviderResult } from '#providers/spec.js';

// Every metadata object below is written with its keys in sorted (RFC 8785) order, nested ones too: the ledger
// then canonicalises it with one native JSON.stringify instead of a recursive walk (router records are the
// hot path). A test holds every record builder to this; a key out of order costs speed, never correctness.

/** One provider attempt inside an exchange (retries are recorded here, never as extra EXCHANGEs). */
export interface AttemptRecord {
  attempt: number;
  outcome: 'success' | 'error' | 'timeout';
  status: number | null;
  kind: string | null;
  latency_ms: number;
  retry_after_ms: number | null;
  /** A routed call's attempt: the deployment, its provider and upstream model, the upstream's request id. */
  deployment?: string;
  model?: string;
  provider?: string;
  /** The surface a routed attempt was sent on, when the gateway spoke to its deployment in another format. */
  upstream_surface?: string;
  upstream_request_id?: string | null;
}

/** Where a routed attempt went (router/routing). */
export interface AttemptTarget {
  deployment: string;
  model: string;
  provider: string;
  upstream_surface?: string;
  upstream_request_id: string | null;
}

/** An attempt's record with its target, keys in sorted order like every router record. */
export function targetedAttempt(record: AttemptRecord, target: AttemptTarget): AttemptRecord {
  return {
    attempt: record.attempt,
    deployment: target.deployment,
    kind: record.kind,
    latency_ms: record.latency_ms,
    model: target.model,
    outcome: record.outcome,
    provider: target.provider,
    retry_after_ms: record.retry_after_ms,
    status: record.status,
    ...(target.upstream_surface === undefined ? {} : { upstream_surface: target.upstream_surface }),
    upstream_request_id: target.upstream_request_id,
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
      contract_id: contractId,
      error_code: errorCode,
      error_message: errorMessage,
      session_id: typeof request.session_id === 'string' ? request.session_id : '',
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
    metadata: { agent_id: request.agent_id, contract_id: request.contract_id, session_id: request.session_id },
  };
}

export interface ExchangeContext {
  request: PromptRequest;
  /** The prompt split where the content store should cut it (whole messages); default: one piece. */
  promptPieces?: readonly string[];
  dispatchEntryId: string;
  contextHash: string;
  modelId: string;
  latencyMs: number;
  attempts: AttemptRecord[];
}

/**
 * The prompt and response go to the ledger's content store (kernel/ledger/content.ts): the entry commits to
 * them by digest, a conversation's repeated prefix is stored once, and reads show the text as before.
 */
function content(ctx: ExchangeContext, response: string): NonNullable<AppendInput['content']> {
  return { prompt: ctx.promptPieces ?? [ctx.request.prompt], response: [response] };
}

/** EXCHANGE for a completed round-trip: the seed's 16 fields plus the documented extensions. */
export function exchangeRecord(ctx: ExchangeContext, answer: ProviderResult): AppendInput {
  const { request } = ctx;
  const { usage } = answer;
  return {
    event_type: 'EXCHANGE',
    submission_id: request.contract_id,
    decision: 'SUCCESS',
    reason: 'Exchange completed',
    metadata: {
      agent_id: request.agent_id,
      attempts: ctx.attempts,
      cache_read_tokens: usage.cache_read_tokens,
      cache_write_tokens: usage.cache_write_tokens,
      context_hash: ctx.contextHash,
      contract_id: request.contract_id,
      dispatch_entry_id: ctx.dispatchEntryId,
      finish_reason: answer.stop_reason,
      framework_id: request.framework_id ?? '',
      input_tokens: usage.input_tokens,
      latency_ms: ctx.latencyMs,
      model_id: answer.model || ctx.modelId,
      outcome: 'success',
      output_tokens: usage.output_tokens,
      session_id: request.session_id,
      ...stablePrefix(ctx),
      tier: request.tier ?? '',
      ...(usage.raw ? { usage_raw: sortedCopy(boundJson(usage.raw, [])) } : {}),
      work_order_id: request.work_order_id ?? '',
    },
    content: content(ctx, answer.content),
  };
}

/** EXCHANGE for a failed round-trip: the prompt (we tried to send it), no response, the error. */
export function exchangeErrorRecord(ctx: ExchangeContext, errorCode: string, errorMessage: string): AppendInput {
  const { request } = ctx;
  return {
    event_type: 'EXCHANGE',
    submission_id: request.contract_id,
    decision: 'ERROR',
    reason: `${errorCode}: ${errorMessage}`,
    metadata: {
      agent_id: request.agent_id,
      attempts: ctx.attempts,
      cache_read_tokens: null,
      cache_write_tokens: null,
      context_hash: ctx.contextHash,
      contract_id: request.contract_id,
      dispatch_entry_id: ctx.dispatchEntryId,
      error_code: errorCode,
      error_message: errorMessage,
      framework_id: request.framework_id ?? '',
      latency_ms: ctx.latencyMs,
      model_id: ctx.modelId,
      outcome: errorCode === 'TIMEOUT' ? 'timeout' : 'error',
      session_id: request.session_id,
      ...stablePrefix(ctx),
      tier: request.tier ?? '',
      work_order_id: request.work_order_id ?? '',
    },
    content: content(ctx, ''),
  };
}

/**
 * A provider's raw usage arrives in its own key order; a copy with sorted keys keeps the whole record on the
 * fast path. Null-prototype objects, so a hostile "__proto__" key is copied as data, never as a prototype.
 * Its input is already bounded (boundJson: depth, sizes, finite numbers), whichever provider produced it.
 */
function sortedCopy(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedCopy);
  if (typeof value !== 'object' || value === null) return value;
  const out = Object.create(null) as Record<string, unknown>;
  for (const key of Object.keys(value).sort()) out[key] = sortedCopy((value as Record<string, unknown>)[key]);
  return out;
}

function stablePrefix(ctx: ExchangeContext): { stable_prefix_hash?: string } {
  return ctx.request.compiled ? { stable_prefix_hash: ctx.request.compiled.stable_prefix_hash } : {};
}
