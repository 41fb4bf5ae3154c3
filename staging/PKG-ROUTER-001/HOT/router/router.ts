import { randomUUID } from 'node:crypto';
import type { AppendInput, Ledger, LedgerEntry } from '../kernel/ledger/index.js';
import { sha256Hex, canonicalJson } from '../kernel/canonical.js';
import { verifyToken, type AuthKeys } from './auth.js';
import { BreakerRegistry, type BreakerSnapshot } from './breaker.js';
import type { RouterConfig } from './config.js';
import { validateOutput } from './output.js';
import type { Provider, ProviderRequest } from '../providers/spec.js';
import type { BudgetPort } from './ports.js';
import { dispatchRecord, exchangeErrorRecord, exchangeRecord, rejectionRecord } from './records.js';
import { checkRequest, type PromptRequest } from './request.js';
import { emptyResponse, type PromptResponse } from './response.js';
import { sendWithRetries } from './send.js';
import { ExchangeSpool } from './spool.js';

export interface RouterOptions {
  ledger: Ledger;
  config: RouterConfig;
  providers: readonly Provider[];
  budget?: BudgetPort | null;
  /** Auth keys (kid → secret). Required unless devMode. */
  authKeys?: AuthKeys;
  /** Skip auth (the seed's dev_mode). */
  devMode?: boolean;
  /** Where exchanges go when the ledger refuses a write after the provider answered. */
  spoolDir?: string | null;
  clock?: () => number;
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

const defaultSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The prompt router: every call is validated, authorised, budgeted, breaker-guarded and recorded. */
export class Router {
  readonly breakers: BreakerRegistry;
  private readonly providers = new Map<string, Provider>();
  private readonly clock: () => number;
  private readonly spool: ExchangeSpool | null;

  constructor(private readonly options: RouterOptions) {
    this.clock = options.clock ?? Date.now;
    this.breakers = new BreakerRegistry(options.config.breaker, this.clock);
    for (const provider of options.providers) this.providers.set(provider.id, provider);
    this.spool = options.spoolDir ? new ExchangeSpool(options.spoolDir) : null;
  }

  /** Append any exchanges spooled by an earlier process whose ledger write failed. Returns how many. */
  recoverSpool(): number {
    return this.spool ? this.spool.drain((input) => this.options.ledger.append(input)) : 0;
  }

  breakerStates(): BreakerSnapshot[] {
    return this.breakers.snapshot();
  }

  async route(input: unknown): Promise<PromptResponse> {
    const start = this.clock();
    const timestamp = new Date(start).toISOString();
    const partial = (typeof input === 'object' && input !== null ? input : {}) as Partial<PromptRequest>;
    const providerId = typeof partial.provider_id === 'string' ? partial.provider_id : this.options.config.default_provider;
    const modelId = typeof partial.model_id === 'string' ? partial.model_id : this.options.config.default_model;
    const base = emptyResponse(timestamp, providerId, modelId);
    const reject = (code: string, message: string): PromptResponse => this.reject(base, partial, code, message, start);

    const checked = checkRequest(input);
    if (!checked.ok) return reject('VALIDATION_FAILED', checked.message);
    const request = checked.request;
    const provider = this.providers.get(providerId);
    if (!provider) return reject('UNKNOWN_PROVIDER', `no provider ${JSON.stringify(providerId)} is registered (have: ${[...this.providers.keys()].join(', ') || 'none'})`);
    const auth = this.authorise(request);
    if (auth) return reject(auth.code, auth.message);

    const requestId = request.request_id ?? randomUUID();
    const maxTokens = request.max_tokens ?? this.options.config.default_max_tokens;
    const budget = this.options.budget?.reserve({
      request_id: requestId, session_id: request.session_id, model: modelId,
      estimated_input_tokens: Math.ceil(request.prompt.length / this.options.config.chars_per_token_estimate),
      max_output_tokens: maxTokens,
      ...(request.work_order_id ? { work_order_id: request.work_order_id } : {}),
      ...(request.agent_id ? { agent_id: request.agent_id } : {}),
    });
    if (budget && !budget.ok) return reject(budget.code, budget.message);

    const contextHash = sha256Hex(request.compiled?.body ? canonicalJson(request.compiled.body) : request.prompt);
    const breaker = this.breakers.for(providerId, modelId);
    if (!breaker.admit()) {
      this.options.budget?.release(requestId);
      return reject('CIRCUIT_OPEN', `circuit breaker for ${breaker.key} is open`);
    }
    let dispatch: LedgerEntry;
    try {
      dispatch = this.options.ledger.append(dispatchRecord(request, providerId, modelId));
    } catch (error) {
      breaker.releaseProbe();
      this.options.budget?.release(requestId);
      throw error;
    }
    return this.exchange({ request, requestId, provider, modelId, maxTokens, contextHash, dispatch, base, start });
  }

  private async exchange(s: {
    request: PromptRequest; requestId: string; provider: Provider; modelId: string; maxTokens: number;
    contextHash: string; dispatch: LedgerEntry; base: PromptResponse; start: number;
  }): Promise<PromptResponse> {
    const { request, provider, modelId } = s;
    const breaker = this.breakers.for(provider.id, modelId);
    const result = await sendWithRetries({
      provider, config: this.options.config, clock: this.clock, random: this.options.random ?? Math.random,
      sleep: this.options.sleep ?? defaultSleep, onFailure: (failure) => { if (failure.retryable) breaker.recordFailure(); },
      mayRetry: () => breaker.snapshot().state !== 'OPEN',
      request: providerRequest(request, modelId, s.maxTokens),
    });
    const latencyMs = this.clock() - s.start;
    const ctx = { request, dispatchEntryId: s.dispatch.id, contextHash: s.contextHash, modelId, latencyMs, attempts: result.attempts };
    const response: PromptResponse = {
      ...s.base, latency_ms: latencyMs, dispatch_entry_id: s.dispatch.id, context_hash: s.contextHash,
      attempts: result.attempts, stable_prefix_hash: request.compiled?.stable_prefix_hash ?? null,
    };
    if (!result.ok) {
      if (!result.failure.retryable) breaker.releaseProbe();
      const code = result.failure.error_code;
      this.options.budget?.release(s.requestId);
      this.record(exchangeErrorRecord(ctx, code, result.failure.message), response, s.dispatch.id);
      return { ...response, outcome: code === 'TIMEOUT' ? 'timeout' : 'error', error_code: code, error_message: result.failure.message };
    }
    breaker.recordSuccess();
    const answer = result.result;
    this.record(exchangeRecord(ctx, answer), response, s.dispatch.id);
    this.settle(s.requestId, answer.usage, response);
    const validation = request.output_schema ? validateOutput(answer.content, request.output_schema) : null;
    return {
      ...response, outcome: 'success', content: answer.content, model_id: answer.model || modelId,
      input_tokens: answer.usage.input_tokens ?? 0, output_tokens: answer.usage.output_tokens ?? 0,
      cache_read_tokens: answer.usage.cache_read_tokens, cache_write_tokens: answer.usage.cache_write_tokens,
      output_valid: validation ? validation.valid : null, output_validation_errors: validation?.errors ?? [],
    };
  }

  /** Append the EXCHANGE; if the ledger keeps refusing, spool it so it is never lost, and say so. */
  private record(input: AppendInput, response: PromptResponse, dispatchId: string): void {
    let lastError: unknown;
    for (let attempt = 0; attempt < this.options.config.ledger_write_attempts; attempt += 1) {
      try {
        response.exchange_entry_id = this.options.ledger.append(input).id;
        return;
      } catch (error) {
        lastError = error;
      }
    }
    const reason = lastError instanceof Error ? lastError.message : String(lastError);
    if (this.spool) {
      const path = this.spool.put(dispatchId, input);
      response.warnings.push(`LEDGER_WRITE_FAILED: exchange spooled to ${path} (${reason}); it is appended when the router next starts`);
    } else {
      response.warnings.push(`LEDGER_WRITE_FAILED: exchange not recorded (${reason}); no spool directory is configured`);
    }
  }

  private settle(requestId: string, usage: Parameters<BudgetPort['settle']>[1], response: PromptResponse): void {
    if (!this.options.budget) return;
    try {
      const settled = this.options.budget.settle(requestId, usage);
      response.cost_incurred = settled.cost;
      response.budget_remaining = settled.remaining_tokens;
    } catch (error) {
      response.warnings.push(`BUDGET_SETTLE_FAILED: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  private authorise(request: PromptRequest): { code: string; message: string } | null {
    if (this.options.devMode) return null;
    const result = verifyToken(request.auth_token, this.options.authKeys ?? {}, { agentId: request.agent_id, contractId: request.contract_id, nowMs: this.clock() });
    return result.ok ? null : { code: result.code, message: result.message };
  }

  private reject(base: PromptResponse, request: Partial<PromptRequest>, code: string, message: string, start: number): PromptResponse {
    const entry = this.options.ledger.append(rejectionRecord(request, code, message));
    return { ...base, outcome: 'rejected', exchange_entry_id: entry.id, error_code: code, error_message: message, latency_ms: this.clock() - start };
  }
}

function providerRequest(request: PromptRequest, model: string, maxTokens: number): ProviderRequest {
  if (request.compiled?.body) return { body: request.compiled.body };
  return { model, max_tokens: maxTokens, prompt: request.prompt, ...(request.temperature === undefined ? {} : { temperature: request.temperature }) };
}
