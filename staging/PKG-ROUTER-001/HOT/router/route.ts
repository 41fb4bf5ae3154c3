import type { Warning } from '#kernel/catalogue/define.js';
import { canonicalJson, sha256Hex } from '#kernel/canonical.js';
import { sendOnce, sentWireRequest } from '#providers/contract.js';
import { isWireProvider } from '#providers/wire/spec.js';
import type { Provider, ProviderRequest, ProviderResult } from '#providers/spec.js';
import * as budget from './budget.js';
import type { RouterConfig } from './config.js';
import { describe } from './exchange-writer.js';
import { type CountedInput, tightInputBound } from './input-count.js';
import * as governed from './governed.js';
import { validateOutput, type OutputValidation } from './output.js';
import { checkRequest, type PromptRequest } from './request.js';
import { emptyResponse, type PromptResponse } from './response.js';
import { scrubText } from './scrub.js';
import type { SendResult } from './send.js';

/** What route() needs from its router: the providers by id, and the governed pipeline's host. */
export interface RouteDeps {
  config: RouterConfig;
  providers: ReadonlyMap<string, Provider>;
  host: governed.GovernedHost;
  /** Warnings waiting for the next response (spool recovery), taken by it. */
  pendingWarnings: Warning[];
}

/**
 * route(): a thin adapter over the governed pipeline (router/governed.ts). It validates a PromptRequest, finds its
 * provider, translates it into a governed request, makes the provider call inside the pipeline's retry loop, and
 * turns the outcome into a PromptResponse (the answer's output validation included). No governance of its own.
 */
export async function routeOnce(deps: RouteDeps, input: unknown): Promise<PromptResponse> {
  const { config, host } = deps;
  const start = host.clock();
  const partial = (typeof input === 'object' && input !== null ? input : {}) as Partial<PromptRequest>;
  const providerId = typeof partial.provider_id === 'string' ? partial.provider_id : config.default_provider;
  const modelId = typeof partial.model_id === 'string' ? partial.model_id : config.default_model;
  const base = emptyResponse(new Date(start).toISOString(), providerId, modelId);
  base.warnings.push(...deps.pendingWarnings.splice(0));
  const refused = async (code: string, message: string): Promise<PromptResponse> =>
    rejected(base, host, start, code, message, await governed.refuse(host, partial, code, message));

  const checked = checkRequest(input);
  if (!checked.ok) return refused('VALIDATION_FAILED', checked.message);
  const provider = deps.providers.get(providerId);
  if (!provider)
    return refused(
      'UNKNOWN_PROVIDER',
      `no provider ${JSON.stringify(providerId)} is registered (have: ${[...deps.providers.keys()].join(', ') || 'none'})`,
    );
  const request = { ...checked.request, provider_id: providerId, model_id: modelId };
  const maxTokens = request.max_tokens ?? config.default_max_tokens;
  const bounds = budget.callBounds(request, maxTokens);
  const sending = providerRequest(request, modelId, maxTokens);
  const counted = countedInput(provider, sending);
  const admission = await governed.admit(host, {
    request,
    bounds: counted === null ? bounds.reservation : await tightened(counted, bounds.reservation),
    outputLimit: bounds.outputLimit,
    inputLimit: bounds.inputLimit,
    contextHash: sha256Hex(request.compiled?.body ? canonicalJson(request.compiled.body) : request.prompt),
  });
  if (!admission.ok) {
    base.warnings.push(...admission.warnings);
    return rejected(base, host, start, admission.code, admission.message, admission.entryId);
  }
  const { call } = admission;
  const sent = await governed.attempts(host, call, () => send(provider, sending, config));
  const concluded = await governed.conclude(
    host,
    call,
    sent.ok
      ? { kind: 'answered', answer: sent.result, usageFinal: true, attempts: sent.attempts }
      : { kind: 'failed', failure: sent.failure, attempts: sent.attempts },
  );
  return responseOf(base, call, sent, concluded);
}

/** The provider call itself, one attempt: the only place route() speaks the provider contract. */
function send(provider: Provider, request: ProviderRequest, config: RouterConfig): Promise<ProviderResult> {
  return sendOnce(provider, request, { timeoutMs: config.timeout_ms });
}

/** What the provider is sent, to be counted; null when it does not say (the mock): the byte bound is reserved. */
function countedInput(provider: Provider, sending: ProviderRequest): CountedInput | null {
  if (!isWireProvider(provider)) return null;
  const wire = sentWireRequest(provider, sending);
  if (wire === null || wire.body === null) return null;
  const model = typeof wire.body.model === 'string' ? wire.body.model : wire.params?.model;
  return model === undefined ? null : { provider, surface: wire.surface, body: wire.body, model };
}

/**
 * What the call reserves: its byte bound, or the tight count of the body the provider is sent (the gateway's one
 * counting path, router/input-count.ts) when that is smaller.
 */
async function tightened(
  input: CountedInput,
  bounds: budget.CallBounds['reservation'],
): Promise<budget.CallBounds['reservation']> {
  const counted = await tightInputBound(input);
  if (counted === null || counted >= bounds.estimated_input_tokens) return bounds;
  return { ...bounds, estimated_input_tokens: counted };
}

function providerRequest(request: PromptRequest, model: string, maxTokens: number): ProviderRequest {
  if (request.compiled?.body) return { body: request.compiled.body };
  return {
    model,
    max_tokens: maxTokens,
    prompt: request.prompt,
    ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
  };
}

function rejected(
  base: PromptResponse,
  host: governed.GovernedHost,
  start: number,
  code: string,
  message: string,
  entryId: string,
): PromptResponse {
  return {
    ...base,
    outcome: 'rejected',
    exchange_entry_id: entryId,
    error_code: code,
    error_message: message,
    latency_ms: host.clock() - start,
  };
}

/** The pipeline's outcome as route() answers it; the EXCHANGE's batch rides along when it could not be recorded. */
function responseOf(
  base: PromptResponse,
  call: governed.GovernedCall,
  sent: SendResult,
  concluded: governed.Concluded,
): PromptResponse {
  const { request } = call;
  const response: PromptResponse = {
    ...base,
    warnings: [...base.warnings, ...concluded.warnings],
    latency_ms: concluded.latencyMs,
    exchange_entry_id: concluded.exchangeEntryId,
    dispatch_entry_id: call.dispatchId,
    context_hash: call.contextHash,
    attempts: sent.attempts,
    stable_prefix_hash: request.compiled?.stable_prefix_hash ?? null,
    budget_remaining: call.remainingTokens,
  };
  const done = sent.ok ? answeredResponse(response, call, concluded) : failedResponse(response, call, sent.failure);
  return concluded.unrecorded ? { ...done, unrecorded_exchange: concluded.unrecorded } : done;
}

function failedResponse(
  response: PromptResponse,
  call: governed.GovernedCall,
  failure: { error_code: string; message: string },
): PromptResponse {
  const code = failure.error_code;
  return {
    ...response,
    outcome: code === 'TIMEOUT' ? 'timeout' : 'error',
    error_code: code,
    error_message: scrubText(failure.message, call.secrets),
  };
}

function answeredResponse(
  response: PromptResponse,
  call: governed.GovernedCall,
  concluded: governed.Concluded,
): PromptResponse {
  const answer = concluded.answer as ProviderResult;
  const validation = validated(answer.content, call.request.output_schema);
  return {
    ...response,
    outcome: 'success',
    content: scrubText(answer.content, call.secrets),
    model_id: answer.model || call.request.model_id,
    input_tokens: answer.usage.input_tokens ?? 0,
    output_tokens: answer.usage.output_tokens ?? 0,
    cache_read_tokens: answer.usage.cache_read_tokens,
    cache_write_tokens: answer.usage.cache_write_tokens,
    cost_incurred: concluded.cost,
    budget_remaining: concluded.remainingTokens ?? response.budget_remaining,
    output_valid: validation ? validation.valid : null,
    output_validation_errors: validation?.errors ?? [],
  };
}

/** The answer against the request's output schema; a validator that throws is a failed validation, not a lost answer. */
function validated(content: string, schema: PromptRequest['output_schema']): OutputValidation | null {
  if (!schema) return null;
  try {
    return validateOutput(content, schema);
  } catch (error) {
    return { valid: false, errors: [`output validation failed: ${describe(error)}`] };
  }
}
