import { randomUUID } from 'node:crypto';
import type { AppendInput, Ledger, LedgerEntry } from '../kernel/ledger/index.js';
import { canonicalJson, sha256Hex } from '../kernel/canonical.js';
import type { Budgeter } from '../budgeter/index.js';
import type { Provider, ProviderRequest } from '../providers/spec.js';
import { verifyToken, type AuthKeys } from './auth.js';
import { BreakerRegistry, type BreakerSnapshot } from './breaker.js';
import * as budget from './budget.js';
import type { RouterConfig } from './config.js';
import { validateOutput } from './output.js';
import { dispatchRecord, exchangeErrorRecord, exchangeRecord, rejectionRecord } from './records.js';
import { checkRequest, type PromptRequest } from './request.js';
import { emptyResponse, type PromptResponse } from './response.js';
import { sendWithRetries } from './send.js';
import { ExchangeSpool } from './spool.js';

export interface RouterOptions {
  ledger: Ledger;
  config: RouterConfig;
  providers: readonly Provider[];
  /** Budgets for every call; opened without a ledger (the router batches its records). */
  budget?: Budgeter | null;
  /** Auth keys (kid → secret). Required unless devMode. */
  authKeys?: AuthKeys;
  /** Skip auth (the seed's dev_mode). */
  devMode?: boolean;
  /** Where exchanges go when the ledger refuses a write after the provider answered. */
  spoolDir?: string | null;
  clock?: () => number;
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** Called after every route (a periodic checkpoint); a returned text becomes a warning on the response. */
  afterRoute?: (() => string | null) | undefined;
}

interface Admitted {
  request: PromptRequest;
  requestId: string;
  provider: Provider;
  modelId: string;
  maxTokens: number;
  contextHash: string;
  dispatch: LedgerEntry;
  base: PromptResponse;
  start: number;
}

const defaultSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The prompt router. Pipeline (the seed's, with the breaker consulted before the DISPATCH marker so a
 * breaker refusal leaves no orphan): validate → auth → budget → context hash → breaker → DISPATCH →
 * provider (one retry loop) → EXCHANGE + budget settlement (one batch) → output validation → PromptResponse.
 */
export class Router {
  readonly breakers: BreakerRegistry;
  private readonly providers = new Map<string, Provider>();
  private readonly clock: () => number;
  private readonly spool: ExchangeSpool | null;
  private readonly budget: Budgeter | null;

  constructor(private readonly options: RouterOptions) {
    this.clock = options.clock ?? Date.now;
    this.breakers = new BreakerRegistry(options.config.breaker, this.clock);
    for (const provider of options.providers) this.providers.set(provider.id, provider);
    this.spool = options.spoolDir ? new ExchangeSpool(options.spoolDir) : null;
    this.budget = options.budget ?? null;
  }

  /** Append any exchanges spooled by an earlier process whose ledger write failed. Returns how many. */
  recoverSpool(): number {
    return this.spool ? this.spool.drain((inputs) => this.options.ledger.appendBatch(inputs)) : 0;
  }

  breakerStates(): BreakerSnapshot[] {
    return this.breakers.snapshot();
  }

  async route(input: unknown): Promise<PromptResponse> {
    const response = await this.routeOnce(input);
    const warning = this.options.afterRoute?.() ?? null;
    if (warning !== null) response.warnings.push(warning);
    return response;
  }

  private async routeOnce(input: unknown): Promise<PromptResponse> {
    const start = this.clock();
    const partial = (typeof input === 'object' && input !== null ? input : {}) as Partial<PromptRequest>;
    const providerId = typeof partial.provider_id === 'string' ? partial.provider_id : this.options.config.default_provider;
    const modelId = typeof partial.model_id === 'string' ? partial.model_id : this.options.config.default_model;
    const base = emptyResponse(new Date(start).toISOString(), providerId, modelId);
    const reject = (code: string, message: string, records: AppendInput[] = []): PromptResponse =>
      this.reject(base, partial, code, message, start, records);

    const checked = checkRequest(input);
    if (!checked.ok) return reject('VALIDATION_FAILED', checked.message);
    const request = checked.request;
    const provider = this.providers.get(providerId);
    if (!provider) return reject('UNKNOWN_PROVIDER', `no provider ${JSON.stringify(providerId)} is registered (have: ${[...this.providers.keys()].join(', ') || 'none'})`);
    const denied = this.authorise(request);
    if (denied) return reject(denied.code, denied.message);

    const requestId = request.request_id ?? randomUUID();
    const maxTokens = request.max_tokens ?? this.options.config.default_max_tokens;
    const reserved = budget.reserve(this.budget, {
      request_id: requestId, session_id: request.session_id, model: modelId, ...budget.reservationBounds(request, maxTokens),
      ...(request.work_order_id ? { work_order_id: request.work_order_id } : {}),
      ...(request.agent_id ? { agent_id: request.agent_id } : {}),
    });
    if (!reserved.ok) return reject(reserved.code, reserved.message, reserved.records);

    const contextHash = sha256Hex(request.compiled?.body ? canonicalJson(request.compiled.body) : request.prompt);
    const breaker = this.breakers.for(providerId, modelId);
    if (!breaker.admit()) {
      const released = budget.release(this.budget, requestId, base.warnings);
      return reject('CIRCUIT_OPEN', `circuit breaker for ${breaker.key} is open`, [...reserved.records, ...released]);
    }
    let dispatch: LedgerEntry;
    try {
      dispatch = this.appendAll([...reserved.records, dispatchRecord(request, providerId, modelId)]);
    } catch (error) {
      breaker.releaseProbe();
      budget.release(this.budget, requestId, base.warnings);
      throw error;
    }
    base.budget_remaining = reserved.remaining_tokens;
    return this.exchange({ request, requestId, provider, modelId, maxTokens, contextHash, dispatch, base, start });
  }

  private async exchange(s: Admitted): Promise<PromptResponse> {
    const { request, provider, modelId } = s;
    const breaker = this.breakers.for(provider.id, modelId);
    const result = await sendWithRetries({
      provider, request: providerRequest(request, modelId, s.maxTokens), config: this.options.config, clock: this.clock,
      random: this.options.random ?? Math.random, sleep: this.options.sleep ?? defaultSleep,
      onFailure: (failure) => { if (failure.retryable) breaker.recordFailure(); },
      mayRetry: () => breaker.snapshot().state !== 'OPEN',
    });
    const latencyMs = this.clock() - s.start;
    const ctx = { request, dispatchEntryId: s.dispatch.id, contextHash: s.contextHash, modelId, latencyMs, attempts: result.attempts };
    const response: PromptResponse = {
      ...s.base, warnings: [...s.base.warnings], latency_ms: latencyMs, dispatch_entry_id: s.dispatch.id, context_hash: s.contextHash,
      attempts: result.attempts, stable_prefix_hash: request.compiled?.stable_prefix_hash ?? null,
    };
    if (!result.ok) {
      if (!result.failure.retryable) breaker.releaseProbe();
      const code = result.failure.error_code;
      const released = budget.release(this.budget, s.requestId, response.warnings);
      this.record([exchangeErrorRecord(ctx, code, result.failure.message), ...released], response, s.dispatch.id);
      return { ...response, outcome: code === 'TIMEOUT' ? 'timeout' : 'error', error_code: code, error_message: result.failure.message };
    }
    breaker.recordSuccess();
    const answer = result.result;
    const settled = budget.settle(this.budget, s.requestId, answer.usage, response.warnings);
    this.record([exchangeRecord(ctx, answer), ...settled.records], response, s.dispatch.id);
    const validation = request.output_schema ? validateOutput(answer.content, request.output_schema) : null;
    return {
      ...response, outcome: 'success', content: answer.content, model_id: answer.model || modelId,
      input_tokens: answer.usage.input_tokens ?? 0, output_tokens: answer.usage.output_tokens ?? 0,
      cache_read_tokens: answer.usage.cache_read_tokens, cache_write_tokens: answer.usage.cache_write_tokens,
      cost_incurred: settled.cost, budget_remaining: settled.remaining_tokens ?? response.budget_remaining,
      output_valid: validation ? validation.valid : null, output_validation_errors: validation?.errors ?? [],
    };
  }

  /** Append records in one transaction (one fsync); returns the last entry, the router's own record. */
  private appendAll(records: AppendInput[]): LedgerEntry {
    const entries = this.options.ledger.appendBatch(records);
    return entries[entries.length - 1] as LedgerEntry;
  }

  /** Append the EXCHANGE batch; if the ledger keeps refusing, spool it so it is never lost, and say so. */
  private record(records: AppendInput[], response: PromptResponse, dispatchId: string): void {
    let lastError: unknown;
    for (let attempt = 0; attempt < this.options.config.ledger_write_attempts; attempt += 1) {
      try {
        response.exchange_entry_id = this.options.ledger.appendBatch(records)[0]?.id ?? '';
        return;
      } catch (error) {
        lastError = error;
      }
    }
    const reason = lastError instanceof Error ? lastError.message : String(lastError);
    if (this.spool) {
      const path = this.spool.put(dispatchId, records);
      response.warnings.push(`LEDGER_WRITE_FAILED: exchange spooled to ${path} (${reason}); it is appended when the router next starts`);
    } else {
      response.warnings.push(`LEDGER_WRITE_FAILED: exchange not recorded (${reason}); no spool directory is configured`);
    }
  }

  private authorise(request: PromptRequest): { code: string; message: string } | null {
    if (this.options.devMode) return null;
    const result = verifyToken(request.auth_token, this.options.authKeys ?? {}, { agentId: request.agent_id, contractId: request.contract_id, nowMs: this.clock() });
    return result.ok ? null : { code: result.code, message: result.message };
  }

  private reject(base: PromptResponse, request: Partial<PromptRequest>, code: string, message: string, start: number, records: AppendInput[]): PromptResponse {
    const entry = this.appendAll([...records, rejectionRecord(request, code, message)]);
    return { ...base, outcome: 'rejected', exchange_entry_id: entry.id, error_code: code, error_message: message, latency_ms: this.clock() - start };
  }
}

function providerRequest(request: PromptRequest, model: string, maxTokens: number): ProviderRequest {
  if (request.compiled?.body) return { body: request.compiled.body };
  return { model, max_tokens: maxTokens, prompt: request.prompt, ...(request.temperature === undefined ? {} : { temperature: request.temperature }) };
}
