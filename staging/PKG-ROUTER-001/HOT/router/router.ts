import { randomUUID } from 'node:crypto';
import { type RefusalCode, type Warning, warning } from '#kernel/catalogue/define.js';
import { CpError, show } from '#kernel/errors.js';
import { inlineContent, type AppendInput, type Ledger, type LedgerEntry } from '#kernel/ledger/index.js';
import { sqliteLedgerStore, type LedgerStore } from '#kernel/ledger/store.js';
import { canonicalJson, sha256Hex } from '#kernel/canonical.js';
import type { Budgeter } from '#budgeter/index.js';
import { sqliteBudgetPort, type BudgetPort } from '#budgeter/port.js';
import { DELIVERED_ONCE } from '#budgeter/records.js';
import type { Provider, ProviderRequest, ProviderResult, Usage } from '#providers/spec.js';
import { tokenDigest, tokenKeyIds, verifyConsoleToken, verifyToken, type AuthKeys, type AuthResult } from './auth.js';
import { type BreakerPass, BreakerRegistry, type BreakerSnapshot } from './breaker.js';
import * as budget from './budget.js';
import type { RouterConfig } from './config.js';
import { validateOutput, type OutputValidation } from './output.js';
import { isRecordFault } from './record-fault.js';
import {
  dispatchRecord,
  exchangeErrorRecord,
  exchangeRecord,
  rejectionRecord,
  type ExchangeContext,
} from './records.js';
import { checkRequest, type PromptRequest } from './request.js';
import { emptyResponse, type PromptResponse } from './response.js';
import { scrubRecords, scrubText, secretList } from './scrub.js';
import { mayHaveBilled, sendWithRetries } from './send.js';
import { ExchangeSpool, type SpoolDrain } from './spool.js';
import * as governed from './governed.js';
import { GroupCommit } from './group-commit.js';
import { callCommits, writerAt } from './durability.js';
import { reportingWriter } from './reporting-writer.js';
import { serialWriter } from './serial-writer.js';
import type { RevocationCheck } from './revocations.js';
import { UNAUTHENTICATED_CODES, type RefusalSampler } from './refusal-sampler.js';
import { BUILTIN_SECRET_PATTERNS, type SecretPattern } from './secret-patterns.js';

/** The ledger and budgets on a shared store (PostgreSQL), in place of the root's SQLite files. */
export interface RouterStore {
  ledger: LedgerStore;
  budget: BudgetPort | null;
}

export interface RouterOptions {
  /** The root's SQLite ledger; or give `store`. */
  ledger?: Ledger;
  /** Ledger and budgets on another store; replaces `ledger` and `budget`. */
  store?: RouterStore;
  config: RouterConfig;
  providers: readonly Provider[];
  /** Budgets for every call; opened without a ledger (the router batches its records). */
  budget?: Budgeter | null;
  /** Auth keys (kid → secret). Required unless devMode. */
  authKeys?: AuthKeys;
  /** Skip auth (the seed's dev_mode). */
  devMode?: boolean;
  /** Revoked keys, checked on every authentication (router/revocations.ts); none: nothing is revoked. */
  revocations?: RevocationCheck | null;
  /** Where exchanges go when the ledger refuses a write after the provider answered. */
  spoolDir?: string | null;
  /** Where unreadable spool entries are set aside; default `<spoolDir>-quarantine`. */
  spoolQuarantineDir?: string | null;
  /**
   * Values never written to a record (provider API keys); the auth keys' secrets and each request's auth
   * token are added by the router itself.
   */
  secrets?: readonly (string | null | undefined)[];
  clock?: () => number;
  random?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Called after every route (a periodic checkpoint); a returned warning rides on the response. */
  afterRoute?: (() => Warning | null | Promise<Warning | null>) | undefined;
  /**
   * Refusals of requests without an authentic key, recorded at a bounded rate and counted past it (a surface open
   * to anyone: the gateway); none: every refusal is recorded (route(), whose caller is a local process).
   */
  refusalSampler?: RefusalSampler | null;
  /** Secret shapes scrubbed from every record (router/secret-patterns.ts); default: all the built-in ones. */
  secretPatterns?: readonly SecretPattern[];
}

interface Admitted {
  request: PromptRequest;
  requestId: string;
  provider: Provider;
  modelId: string;
  maxTokens: number;
  bounds: budget.CallBounds;
  contextHash: string;
  dispatch: LedgerEntry;
  base: PromptResponse;
  start: number;
  breakerPass: BreakerPass;
}

const defaultSleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    // A cut-short wait leaves no timer behind to hold a draining process open.
    const cut = (): void => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', cut);
      resolve();
    }, ms);
    signal?.addEventListener('abort', cut, { once: true });
  });

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
  private readonly budget: BudgetPort | null;
  /** Where every record goes: the SQLite ledger (wrapped) or the shared store. */
  private readonly writer: LedgerStore;
  private readonly secrets: string[];
  private readonly patterns: readonly SecretPattern[];
  /** Warnings from starting up (spool recovery), carried on the next response so they are seen. */
  private pendingWarnings: Warning[] = [];

  constructor(private readonly options: RouterOptions) {
    this.clock = options.clock ?? Date.now;
    this.breakers = new BreakerRegistry(options.config.breaker, this.clock);
    for (const provider of options.providers) this.providers.set(provider.id, provider);
    this.spool = options.spoolDir
      ? new ExchangeSpool(options.spoolDir, options.spoolQuarantineDir ?? `${options.spoolDir}-quarantine`)
      : null;
    if (options.store) {
      this.writer =
        options.store.ledger.backend === 'postgres' ? serialWriter(options.store.ledger) : options.store.ledger;
      this.budget = options.store.budget;
    } else if (options.ledger) {
      this.writer = sqliteLedgerStore(options.ledger);
      this.budget = options.budget ? sqliteBudgetPort(options.budget) : null;
    } else {
      throw new CpError('ERR_USAGE', 'a router needs a ledger or a store', {
        hint: 'pass {ledger} (a SQLite ledger) or {store: {ledger, budget}}',
      });
    }
    const budget = this.budget;
    if (budget !== null) this.writer = reportingWriter(this.writer, DELIVERED_ONCE, (ids) => budget.recorded(ids));
    this.writer = writerAt(this.writer, options.config.durability);
    this.secrets = secretList([...(options.secrets ?? []), ...Object.values(options.authKeys ?? {})]);
    this.patterns = options.secretPatterns ?? BUILTIN_SECRET_PATTERNS;
  }

  /**
   * Append any exchanges spooled by an earlier process whose ledger write failed. Never throws: an entry
   * that cannot be read or appended is quarantined or left pending, and the warnings ride on the next
   * response (and are returned).
   */
  async recoverSpool(): Promise<SpoolDrain> {
    const empty: SpoolDrain = { drained: 0, quarantined: [], pending: 0, warnings: [] };
    if (!this.spool) return empty;
    // One drain at a time: two would read the same entry and both append it.
    const spooledBefore = this.spoolPuts;
    this.draining ??= this.spool
      .drain(async (inputs) => {
        const records = scrubRecords(inputs, this.secrets, this.patterns);
        const refused = await this.unspooled(records[0] as AppendInput);
        if (refused !== null) return { refused };
        // A process that died between appending an entry and removing it left it behind: never append twice.
        if (await this.alreadyRecorded(records[0])) return undefined;
        // The budget's records may have been delivered from its outbox meanwhile (a spool older than the orphan
        // timeout): appended only if the chain does not hold them.
        await this.writer.appendBatch(records, { once: DELIVERED_ONCE });
        return undefined;
      })
      .then((drained) => {
        // An exchange spooled while the drain ran may have been listed after it: it keeps the spool marked.
        this.spoolHolds = drained.pending > 0 || this.spoolPuts !== spooledBefore;
        return drained;
      })
      .finally(() => {
        this.draining = null;
      });
    const drained = await this.draining;
    this.pendingWarnings.push(...drained.warnings);
    return drained;
  }

  private draining: Promise<SpoolDrain> | null = null;

  /**
   * Whether the spool may hold exchanges: set when one is spooled (or a drain leaves some), cleared by a drain
   * that empties it. A ledger that takes a write again says so only by taking it: the call that commits next
   * starts the drain, so a long-running gateway needs no restart to record what it spooled.
   */
  private spoolHolds = true;
  private spoolPuts = 0;

  /** Exchanges waiting in this router's spool (a store that refused writes); 0 without a spool. */
  spooled(): number {
    return this.spool?.pending().length ?? 0;
  }

  /**
   * Why a spooled EXCHANGE is not one this router's calls could have left, or null. A router spools only the
   * answer to a DISPATCH the chain holds, of the same session and agent; a file planted in (or copied into) the
   * spool that names none, or another's, would otherwise be appended as a call nobody made, or be appended twice
   * under another session where the duplicate check does not look.
   */
  private async unspooled(exchange: AppendInput): Promise<string | null> {
    // The spool read checked the EXCHANGE has metadata and names the DISPATCH its file is named after.
    const metadata = exchange.metadata as Record<string, unknown>;
    const dispatchId = String(metadata.dispatch_entry_id);
    const dispatch = await this.writer.get(dispatchId);
    if (dispatch === undefined) return `names DISPATCH ${show(dispatchId)}, which the ledger does not hold`;
    if (dispatch.event_type !== 'DISPATCH')
      return `names ${show(dispatchId)}, which is a ${show(dispatch.event_type)}, not a DISPATCH`;
    for (const field of ['session_id', 'agent_id'])
      if (metadata[field] !== dispatch.metadata[field])
        return `has ${field} ${show(metadata[field])} where its DISPATCH ${show(dispatchId)} has ${show(dispatch.metadata[field])}`;
    return null;
  }

  /** True when the ledger already holds this spooled EXCHANGE (same DISPATCH link, found by its session). */
  private async alreadyRecorded(exchange: AppendInput | undefined): Promise<boolean> {
    const sessionId = exchange?.metadata?.session_id;
    const dispatchId = exchange?.metadata?.dispatch_entry_id;
    if (typeof sessionId !== 'string' || sessionId === '' || typeof dispatchId !== 'string') return false;
    return this.writer.hasExchange(sessionId, dispatchId);
  }

  get config(): RouterConfig {
    return this.options.config;
  }

  /** The gateway's entry: route()'s pipeline up to DISPATCH (router/governed.ts). */
  admit(input: governed.GovernedRequest): Promise<governed.Admission> {
    return governed.admit(this.host(), input);
  }

  /** Record a refusal the caller decided (a malformed gateway request); returns the PROMPT_REJECTED id. */
  recordRefusal(request: Partial<PromptRequest>, code: string, message: string): Promise<string> {
    return governed.refuse(this.host(), request, code, message);
  }

  /** Append the summary of refusals the sampler counted and has not yet recorded (at shutdown); true if one was. */
  async flushRefusals(): Promise<boolean> {
    const summary = this.options.refusalSampler?.takeSummary() ?? null;
    if (summary === null) return false;
    await this.appendAll([summary]);
    return true;
  }

  /**
   * A refusal's records: as given, or none when the sampler counts it (no authentic key, over the rate); a
   * pending summary of counted ones rides along with the next one recorded.
   */
  private refusalRecords(request: Partial<PromptRequest>, code: string, records: AppendInput[]): AppendInput[] | null {
    const sampler = this.options.refusalSampler;
    if (!sampler) return records;
    if (records.length === 1 && this.unauthenticated(code, request.auth_token) && !sampler.admit(code)) return null;
    const summary = sampler.takeSummary();
    return summary === null ? records : [summary, ...records];
  }

  /** An auth refusal anyone could provoke, or a malformed request whose key (if any) does not verify. */
  private unauthenticated(code: string, token: unknown): boolean {
    if (UNAUTHENTICATED_CODES.has(code)) return true;
    if (code !== 'VALIDATION_FAILED') return false;
    const result = verifyToken(token, this.options.authKeys ?? {}, {
      agentId: '',
      contractId: '',
      nowMs: this.clock(),
    });
    return !result.ok && UNAUTHENTICATED_CODES.has(result.code);
  }

  /** Auth alone (a call with nothing to budget); a refusal is a PROMPT_REJECTED record. */
  authenticate(request: PromptRequest): ReturnType<typeof governed.authenticate> {
    return governed.authenticate(this.host(), request);
  }

  /** The one retry loop around an admitted call's one-attempt upstream call; `signal` cuts its waits short. */
  attempts<R>(
    call: governed.GovernedCall,
    attempt: () => Promise<R>,
    signal?: AbortSignal,
  ): ReturnType<typeof governed.attempts<R>> {
    return governed.attempts(this.host(), call, attempt, signal);
  }

  /** EXCHANGE + budget settlement for an admitted call; never throws. */
  conclude(call: governed.GovernedCall, outcome: governed.GovernedOutcome): Promise<governed.Concluded> {
    return governed.conclude(this.host(), call, outcome);
  }

  private governedHost: governed.GovernedHost | null = null;
  /** The gateway's exchanges in flight share transactions (router/group-commit.ts). */
  readonly groupCommit = new GroupCommit((records, options) => this.writer.appendBatch(records, options));

  private host(): governed.GovernedHost {
    this.governedHost ??= {
      config: this.options.config,
      budget: this.budget,
      clock: this.clock,
      random: this.options.random ?? Math.random,
      sleep: this.options.sleep ?? defaultSleep,
      secrets: this.secrets,
      patterns: this.patterns,
      breaker: (providerId, modelId) => this.breakers.for(providerId, modelId),
      authorise: (request) => this.authorise(request),
      budgetScope: (request) => this.keyScope(request).budget_scope,
      appendAll: (records, authToken) => this.appendAll(records, authToken),
      record: (records, response, dispatchId, secrets, degraded) =>
        this.record(records, response, dispatchId, secrets, degraded),
      commitGrouped: (records, options) => this.groupCommit.commit(records, options),
      reject: async (request, code, message, records) => {
        const kept = this.refusalRecords(request, code, [...records, rejectionRecord(request, code, message)]);
        return kept === null ? '' : (await this.appendAll(kept, request.auth_token)).id;
      },
    };
    return this.governedHost;
  }

  breakerStates(): BreakerSnapshot[] {
    return this.breakers.snapshot();
  }

  async route(input: unknown): Promise<PromptResponse> {
    const response = await this.routeOnce(input);
    const late = (await this.options.afterRoute?.()) ?? null;
    if (late !== null) response.warnings.push(late);
    return response;
  }

  private async routeOnce(input: unknown): Promise<PromptResponse> {
    const start = this.clock();
    const partial = (typeof input === 'object' && input !== null ? input : {}) as Partial<PromptRequest>;
    const providerId =
      typeof partial.provider_id === 'string' ? partial.provider_id : this.options.config.default_provider;
    const modelId = typeof partial.model_id === 'string' ? partial.model_id : this.options.config.default_model;
    const base = emptyResponse(new Date(start).toISOString(), providerId, modelId);
    base.warnings.push(...this.pendingWarnings.splice(0));
    const reject = (code: RefusalCode, message: string, records: AppendInput[] = []): Promise<PromptResponse> =>
      this.reject(base, partial, code, message, start, records);

    const checked = checkRequest(input);
    if (!checked.ok) return reject('VALIDATION_FAILED', checked.message);
    const request = checked.request;
    const provider = this.providers.get(providerId);
    if (!provider)
      return reject(
        'UNKNOWN_PROVIDER',
        `no provider ${JSON.stringify(providerId)} is registered (have: ${[...this.providers.keys()].join(', ') || 'none'})`,
      );
    const denied = this.authorise(request, modelId);
    if (denied) return reject(denied.code, denied.message);

    const requestId = request.request_id ?? randomUUID();
    const maxTokens = request.max_tokens ?? this.options.config.default_max_tokens;
    const bounds = budget.callBounds(request, maxTokens);
    const reserved = await budget.reserve(this.budget, {
      request_id: requestId,
      session_id: request.session_id,
      model: modelId,
      ...bounds.reservation,
      ...(request.work_order_id ? { work_order_id: request.work_order_id } : {}),
      ...(request.agent_id ? { agent_id: request.agent_id } : {}),
      ...this.keyScope(request, modelId),
    });
    if (!reserved.ok) return reject(reserved.code, reserved.message, reserved.records);

    const contextHash = sha256Hex(request.compiled?.body ? canonicalJson(request.compiled.body) : request.prompt);
    const breaker = this.breakers.for(providerId, modelId);
    const breakerPass = breaker.pass();
    if (!breakerPass) {
      const released = await budget.release(this.budget, requestId, base.warnings);
      return reject('CIRCUIT_OPEN', `circuit breaker for ${breaker.key} is open`, [...reserved.records, ...released]);
    }
    let dispatch: LedgerEntry;
    try {
      dispatch = await this.appendAll(
        [...reserved.records, dispatchRecord(request, providerId, modelId)],
        request.auth_token,
        callCommits(this.options.config.durability).admission,
      );
    } catch (error) {
      breaker.releaseProbe(breakerPass);
      await budget.release(this.budget, requestId, base.warnings);
      throw error;
    }
    base.budget_remaining = reserved.remaining_tokens;
    return this.exchange({
      request,
      requestId,
      provider,
      modelId,
      maxTokens,
      bounds,
      contextHash,
      dispatch,
      base,
      start,
      breakerPass,
    });
  }

  private async exchange(s: Admitted): Promise<PromptResponse> {
    const { request, provider, modelId } = s;
    const breaker = this.breakers.for(provider.id, modelId);
    const result = await sendWithRetries({
      provider,
      request: providerRequest(request, modelId, s.maxTokens),
      config: this.options.config,
      clock: this.clock,
      random: this.options.random ?? Math.random,
      sleep: this.options.sleep ?? defaultSleep,
      onFailure: (failure) => {
        if (failure.retryable) breaker.recordFailure(s.breakerPass);
      },
      // Half-open, only the probes may reach the provider: a call admitted before the opening stops retrying too.
      mayRetry: () => breaker.snapshot().state === 'CLOSED',
    });
    const latencyMs = this.clock() - s.start;
    const ctx = {
      request,
      dispatchEntryId: s.dispatch.id,
      contextHash: s.contextHash,
      modelId,
      latencyMs,
      attempts: result.attempts,
    };
    const response: PromptResponse = {
      ...s.base,
      warnings: [...s.base.warnings],
      latency_ms: latencyMs,
      dispatch_entry_id: s.dispatch.id,
      context_hash: s.contextHash,
      attempts: result.attempts,
      stable_prefix_hash: request.compiled?.stable_prefix_hash ?? null,
    };
    const secrets = secretList([...this.secrets, request.auth_token]);
    if (!result.ok) {
      if (!result.failure.retryable) breaker.releaseProbe(s.breakerPass);
      const code = result.failure.error_code;
      const message = scrubText(result.failure.message, secrets);
      // Cut off after a 2xx or timed out upstream, it may have been billed: the reservation stays charged as unknown.
      const budgetRecords = mayHaveBilled(result.failure, result.attempts)
        ? (await budget.settle(this.budget, s.requestId, UNKNOWN_USAGE, response.warnings)).records
        : await budget.release(this.budget, s.requestId, response.warnings);
      const unrecorded = await this.record(
        [exchangeErrorRecord(ctx, code, message), ...budgetRecords],
        response,
        s.dispatch.id,
        secrets,
        null,
      );
      const failed: PromptResponse = {
        ...response,
        outcome: code === 'TIMEOUT' ? 'timeout' : 'error',
        error_code: code,
        error_message: message,
      };
      return unrecorded ? { ...failed, unrecorded_exchange: unrecorded } : failed;
    }
    breaker.recordSuccess(s.breakerPass);
    return this.answered(s, ctx, result.result, response, secrets);
  }

  /**
   * Everything after the provider answered. Nothing here may lose the answer: the caller always gets it,
   * and the EXCHANGE is committed, or spooled, or (if even the spool cannot be written) handed back whole
   * in `unrecorded_exchange` for the caller to print.
   */
  private async answered(
    s: Admitted,
    ctx: ExchangeContext,
    raw: ProviderResult,
    response: PromptResponse,
    secrets: string[],
  ): Promise<PromptResponse> {
    const answer = wellTyped(raw);
    const settled = await budget.settle(
      this.budget,
      s.requestId,
      answer.usage,
      response.warnings,
      s.bounds.outputLimit,
      s.bounds.inputLimit,
    );
    let exchange: AppendInput;
    try {
      exchange = exchangeRecord(ctx, answer);
    } catch (error) {
      response.warnings.push(
        warning(
          'EXCHANGE_RECORD_DEGRADED',
          `the provider's raw usage could not be recorded (${describe(error)}); it was dropped`,
        ),
      );
      exchange = exchangeRecord(ctx, { ...answer, usage: { ...answer.usage, raw: null } });
    }
    const degraded = (): AppendInput[] => [withoutRawUsage(exchange), ...settled.records];
    const unrecorded = await this.record([exchange, ...settled.records], response, s.dispatch.id, secrets, degraded);
    let validation: OutputValidation | null = null;
    if (ctx.request.output_schema) {
      try {
        validation = validateOutput(answer.content, ctx.request.output_schema);
      } catch (error) {
        validation = { valid: false, errors: [`output validation failed: ${describe(error)}`] };
      }
    }
    const done: PromptResponse = {
      ...response,
      outcome: 'success',
      content: scrubText(answer.content, secrets),
      model_id: answer.model || s.modelId,
      input_tokens: answer.usage.input_tokens ?? 0,
      output_tokens: answer.usage.output_tokens ?? 0,
      cache_read_tokens: answer.usage.cache_read_tokens,
      cache_write_tokens: answer.usage.cache_write_tokens,
      cost_incurred: settled.cost,
      budget_remaining: settled.remaining_tokens ?? response.budget_remaining,
      output_valid: validation ? validation.valid : null,
      output_validation_errors: validation?.errors ?? [],
    };
    return unrecorded ? { ...done, unrecorded_exchange: unrecorded } : done;
  }

  /** Append records in one transaction (one fsync); returns the last entry, the router's own record. */
  private async appendAll(
    records: AppendInput[],
    authToken?: unknown,
    options?: { durable: boolean },
  ): Promise<LedgerEntry> {
    const secrets = typeof authToken === 'string' ? secretList([...this.secrets, authToken]) : this.secrets;
    const entries = await this.writer.appendBatch(scrubRecords(records, secrets, this.patterns), options);
    return entries[entries.length - 1] as LedgerEntry;
  }

  /**
   * Append the EXCHANGE batch. The ledger refusing the records themselves (a value it cannot canonicalise)
   * is not retried: the `degraded` batch (raw usage dropped) is tried instead. If the ledger keeps refusing,
   * the batch is spooled; if the spool cannot be written either, the batch is returned (unrecorded) so the
   * caller can hand it over whole. Never throws.
   */
  private async record(
    records: AppendInput[],
    response: PromptResponse,
    dispatchId: string,
    secrets: readonly string[],
    degraded: (() => AppendInput[]) | null,
  ): Promise<AppendInput[] | null> {
    let batch: AppendInput[];
    let lastError: unknown;
    try {
      batch = scrubRecords(records, secrets, this.patterns);
    } catch (error) {
      batch = records;
      lastError = error;
    }
    for (
      let attempt = 0;
      lastError === undefined && attempt < this.options.config.ledger_write_attempts;
      attempt += 1
    ) {
      try {
        response.exchange_entry_id = (await this.writer.appendBatch(batch))[0]?.id ?? '';
        if (this.spoolHolds && this.spool && this.draining === null)
          this.recoverSpool().catch((error: unknown) => {
            this.pendingWarnings.push(
              warning(
                'SPOOL_PENDING',
                `the spool could not be drained (${describe(error)}); the next call tries again`,
              ),
            );
          });
        return null;
      } catch (error) {
        if (isRecordFault(error)) lastError = error;
        else if (attempt + 1 === this.options.config.ledger_write_attempts) lastError = error;
      }
    }
    if (degraded && isRecordFault(lastError)) {
      try {
        const smaller = scrubRecords(degraded(), secrets, this.patterns);
        response.exchange_entry_id = (await this.writer.appendBatch(smaller))[0]?.id ?? '';
        response.warnings.push(
          warning(
            'EXCHANGE_RECORD_DEGRADED',
            `the ledger refused the exchange (${describe(lastError)}); it was recorded without the provider's raw usage`,
          ),
        );
        return null;
      } catch (error) {
        lastError = error;
      }
    }
    const reason = scrubText(describe(lastError), secrets);
    if (this.spool) {
      try {
        const path = this.spool.put(dispatchId, batch);
        this.spoolHolds = true;
        this.spoolPuts += 1;
        response.warnings.push(
          warning(
            'LEDGER_WRITE_FAILED',
            `exchange spooled to ${path} (${reason}); it is appended when the ledger takes writes again`,
          ),
        );
        return null;
      } catch (error) {
        response.warnings.push(
          warning(
            'EXCHANGE_NOT_RECORDED',
            `the ledger refused the exchange (${reason}) and the spool could not be written (${scrubText(describe(error), secrets)}); the whole exchange is in unrecorded_exchange`,
          ),
        );
        return batch.map(inlineContent);
      }
    }
    response.warnings.push(
      warning(
        'EXCHANGE_NOT_RECORDED',
        `the ledger refused the exchange (${reason}) and no spool directory is configured; the whole exchange is in unrecorded_exchange`,
      ),
    );
    return batch.map(inlineContent);
  }

  /**
   * The router's authentication, for route() and any surface in front of it (the HTTP gateway): signature,
   * expiry, agent, contract and model scopes, then the revocation list. A list that cannot be trusted refuses.
   */
  verifyKey(token: unknown, expect: { agentId: string; contractId: string; modelId: string }): AuthResult {
    return this.notRevoked(token, verifyToken(token, this.options.authKeys ?? {}, { ...expect, nowMs: this.clock() }));
  }

  /** A key that may read the console (scope `console:read`), checked against the revocation list like any key. */
  verifyConsoleKey(token: unknown): AuthResult {
    return this.notRevoked(token, verifyConsoleToken(token, this.options.authKeys ?? {}, this.clock()));
  }

  private notRevoked(token: unknown, result: AuthResult): AuthResult {
    if (!result.ok || !this.options.revocations) return result;
    const ids = tokenKeyIds(token as string, result.claims);
    try {
      if (this.options.revocations.isRevoked(ids)) {
        return { ok: false, code: 'AUTH_REVOKED', message: `auth key ${ids[0] as string} was revoked` };
      }
    } catch (error) {
      const code =
        typeof (error as { code?: unknown }).code === 'string' ? `${(error as { code: string }).code}: ` : '';
      return {
        ok: false,
        code: 'AUTH_REVOCATION_LIST_INVALID',
        message: `${code}${error instanceof Error ? error.message : String(error)}`,
      };
    }
    return result;
  }

  /** The authorised key's budget scope, to charge beside the session's (a dev-mode call has no key). */
  private keyScope(
    request: PromptRequest,
    modelId: string = request.model_id ?? this.options.config.default_model,
  ): { budget_scope?: string } {
    if (this.options.devMode) return {};
    const result = verifyToken(request.auth_token, this.options.authKeys ?? {}, {
      agentId: request.agent_id,
      contractId: request.contract_id,
      modelId,
      nowMs: this.clock(),
    });
    if (!result.ok) return {};
    // Every key has a scope: its budget_scope (shared by the keys that name it), else its own id, so a per-key
    // limit or rate (limits.key / rate_limits.key default) holds however many session ids a client invents.
    const own =
      result.claims.jti === undefined ? tokenDigest(request.auth_token as string) : `key:${result.claims.jti}`;
    return { budget_scope: result.claims.budget_scope ?? own };
  }

  private authorise(
    request: PromptRequest,
    modelId: string = request.model_id ?? this.options.config.default_model,
  ): { code: RefusalCode; message: string } | null {
    if (this.options.devMode) return null;
    const result = this.verifyKey(request.auth_token, {
      agentId: request.agent_id,
      contractId: request.contract_id,
      modelId,
    });
    return result.ok ? null : { code: result.code, message: result.message };
  }

  private async reject(
    base: PromptResponse,
    request: Partial<PromptRequest>,
    code: RefusalCode,
    message: string,
    start: number,
    records: AppendInput[],
  ): Promise<PromptResponse> {
    const kept = this.refusalRecords(request, code, [...records, rejectionRecord(request, code, message)]);
    const entryId = kept === null ? '' : (await this.appendAll(kept, request.auth_token)).id;
    return {
      ...base,
      outcome: 'rejected',
      exchange_entry_id: entryId,
      error_code: code,
      error_message: message,
      latency_ms: this.clock() - start,
    };
  }
}

/** Usage that says nothing: the provider may have billed, nobody knows how much. */
const UNKNOWN_USAGE: Usage = {
  input_tokens: null,
  output_tokens: null,
  cache_read_tokens: null,
  cache_write_tokens: null,
  raw: null,
};

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function count(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null;
}

/**
 * A provider result with the types the records rely on, whatever provider produced it: strings are strings,
 * counts are safe non-negative integers or null (unknown), the raw usage an object or null.
 */
function wellTyped(answer: ProviderResult): ProviderResult {
  const result = (typeof answer === 'object' && answer !== null ? answer : {}) as Partial<ProviderResult>;
  const usage = (typeof result.usage === 'object' && result.usage !== null ? result.usage : {}) as Partial<Usage>;
  const raw = usage.raw;
  return {
    provider_id: typeof result.provider_id === 'string' ? result.provider_id : '',
    raw_stop_reason: typeof result.raw_stop_reason === 'string' ? result.raw_stop_reason : null,
    request_id: typeof result.request_id === 'string' ? result.request_id : null,
    latency_ms: typeof result.latency_ms === 'number' && Number.isFinite(result.latency_ms) ? result.latency_ms : 0,
    content:
      typeof result.content === 'string'
        ? result.content
        : typeof result.content === 'number' || typeof result.content === 'boolean'
          ? String(result.content)
          : '',
    model: typeof result.model === 'string' ? result.model : '',
    stop_reason: typeof result.stop_reason === 'string' ? result.stop_reason : 'other',
    usage: {
      input_tokens: count(usage.input_tokens),
      output_tokens: count(usage.output_tokens),
      cache_read_tokens: count(usage.cache_read_tokens),
      cache_write_tokens: count(usage.cache_write_tokens),
      raw: typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? raw : null,
    },
  };
}

/** The EXCHANGE with its raw usage replaced by a marker (the key keeps its place in sorted order). */
function withoutRawUsage(record: AppendInput): AppendInput {
  const metadata = record.metadata ?? {};
  if (!Object.hasOwn(metadata, 'usage_raw')) return record;
  return { ...record, metadata: { ...metadata, usage_raw: '[dropped: the ledger refused it]' } };
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
