import type { Warning } from '#kernel/catalogue/define.js';
import { CpError } from '#kernel/errors.js';
import type { Ledger } from '#kernel/ledger/index.js';
import { sqliteLedgerStore, type LedgerStore } from '#kernel/ledger/store.js';
import type { Budgeter } from '#budgeter/index.js';
import { sqliteBudgetPort, type BudgetPort, watchBudget } from '#budgeter/port.js';
import type { BudgetCrossing } from '#budgeter/crossings.js';
import { DELIVERED_ONCE } from '#budgeter/records.js';
import type { Provider } from '#providers/spec.js';
import type { AuthKeys, AuthResult } from './auth.js';
import { BreakerRegistry, type BreakerSnapshot } from './breaker.js';
import type { RouterConfig } from './config.js';
import { writerAt } from './durability.js';
import { ExchangeWriter } from './exchange-writer.js';
import * as governed from './governed.js';
import type { GroupCommit } from './group-commit.js';
import { KeyCheck } from './keys.js';
import { notify, type GovernedObserver } from './observer.js';
import type { RefusalSampler } from './refusal-sampler.js';
import { refusalRecords } from './rejections.js';
import { reportingWriter } from './reporting-writer.js';
import type { PromptRequest } from './request.js';
import type { PromptResponse } from './response.js';
import type { RevocationCheck } from './revocations.js';
import { routeOnce } from './route.js';
import { secretList } from './scrub.js';
import { BUILTIN_SECRET_PATTERNS, type SecretPattern } from './secret-patterns.js';
import { serialWriter } from './serial-writer.js';
import type { SpoolDrain } from './spool.js';

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
  /** Told of every scope a budget step took past its warn fraction or to its limit (the gateway's alerts). */
  budgetWatch?: (crossed: readonly BudgetCrossing[]) => void;
  /** Told of spooled entries a drain set aside as unreadable (their quarantine paths): the gateway's alerts. */
  onQuarantine?: (paths: readonly string[]) => void;
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
  /** Told of every governed call and refusal (the gateway's metrics); none: nobody watches. */
  observer?: GovernedObserver;
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
 * The prompt router: one governed pipeline (router/governed.ts) behind every surface. route() (router/route.ts)
 * and the gateway (gateway/generation.ts, gateway/pass-through.ts) are adapters over it; this class wires the
 * pipeline to its ledger writer (router/exchange-writer.ts), its keys (router/keys.ts), its budgets and breakers.
 */
export class Router {
  readonly breakers: BreakerRegistry;
  private readonly providers = new Map<string, Provider>();
  private readonly clock: () => number;
  private readonly keys: KeyCheck;
  private readonly exchanges: ExchangeWriter;
  private readonly host: governed.GovernedHost;

  constructor(private readonly options: RouterOptions) {
    this.clock = options.clock ?? Date.now;
    this.breakers = new BreakerRegistry(options.config.breaker, this.clock);
    for (const provider of options.providers) this.providers.set(provider.id, provider);
    const { writer, budget: port } = routerStore(options);
    const budget = port !== null && options.budgetWatch ? watchBudget(port, options.budgetWatch) : port;
    const secrets = secretList([...(options.secrets ?? []), ...Object.values(options.authKeys ?? {})]);
    const patterns = options.secretPatterns ?? BUILTIN_SECRET_PATTERNS;
    this.keys = new KeyCheck({
      authKeys: options.authKeys,
      devMode: options.devMode,
      revocations: options.revocations,
      clock: this.clock,
    });
    this.exchanges = new ExchangeWriter({
      writer,
      spoolDir: options.spoolDir,
      spoolQuarantineDir: options.spoolQuarantineDir,
      onQuarantine: options.onQuarantine,
      secrets,
      patterns,
      writeAttempts: options.config.ledger_write_attempts,
    });
    this.host = this.governedHost(budget, secrets, patterns);
  }

  private governedHost(
    budget: BudgetPort | null,
    secrets: readonly string[],
    patterns: readonly SecretPattern[],
  ): governed.GovernedHost {
    const { config } = this.options;
    const exchanges = this.exchanges;
    const withModel = (request: PromptRequest): PromptRequest & { model_id: string } =>
      typeof request.model_id === 'string'
        ? (request as PromptRequest & { model_id: string })
        : { ...request, model_id: config.default_model };
    return {
      config,
      budget,
      clock: this.clock,
      random: this.options.random ?? Math.random,
      sleep: this.options.sleep ?? defaultSleep,
      secrets,
      patterns,
      breaker: (providerId, modelId) => this.breakers.for(providerId, modelId),
      authorise: (request) => this.keys.authorise(withModel(request)),
      budgetScope: (request) => this.keys.budgetScope(withModel(request)),
      exchanges,
      observer: this.options.observer,
      reject: async (request, code, message, records) => {
        notify(this.options.observer, (o) => o.refused(request, code));
        const kept = refusalRecords(this.options.refusalSampler, this.keys, request, code, message, records);
        return kept === null ? '' : (await exchanges.appendAll(kept, request.auth_token)).id;
      },
    };
  }

  get config(): RouterConfig {
    return this.options.config;
  }

  /** The gateway's exchanges in flight share transactions (router/group-commit.ts). */
  get groupCommit(): GroupCommit {
    return this.exchanges.groupCommit;
  }

  /**
   * Append any exchanges spooled by an earlier process whose ledger write failed. Never throws: an entry
   * that cannot be read or appended is quarantined or left pending, and the warnings ride on the next
   * response (and are returned).
   */
  recoverSpool(): Promise<SpoolDrain> {
    return this.exchanges.recoverSpool();
  }

  /** Exchanges waiting in this router's spool (a store that refused writes); 0 without a spool. */
  spooled(): number {
    return this.exchanges.spooled();
  }

  /** The gateway's entry: the pipeline up to DISPATCH (router/governed.ts). */
  admit(input: governed.GovernedRequest): Promise<governed.Admission> {
    return governed.admit(this.host, input);
  }

  /** Record a refusal the caller decided (a malformed gateway request); returns the PROMPT_REJECTED id. */
  recordRefusal(request: Partial<PromptRequest>, code: string, message: string): Promise<string> {
    return governed.refuse(this.host, request, code, message);
  }

  /** Append the summary of refusals the sampler counted and has not yet recorded (at shutdown); true if one was. */
  async flushRefusals(): Promise<boolean> {
    const summary = this.options.refusalSampler?.takeSummary() ?? null;
    if (summary === null) return false;
    await this.exchanges.appendAll([summary]);
    return true;
  }

  /** Auth alone (a call with nothing to budget); a refusal is a PROMPT_REJECTED record. */
  authenticate(request: PromptRequest): ReturnType<typeof governed.authenticate> {
    return governed.authenticate(this.host, request);
  }

  /**
   * The one retry loop around an admitted call's one-attempt upstream call; `signal` cuts its waits short;
   * `upstreamId` reads the upstream's request id of a result, for a routed call's attempt records.
   */
  attempts<R>(
    call: governed.GovernedCall,
    attempt: () => Promise<R>,
    signal?: AbortSignal,
    upstreamId?: (result: R) => string | null,
  ): ReturnType<typeof governed.attempts<R>> {
    return governed.attempts(this.host, call, attempt, signal, upstreamId);
  }

  /** Whether a request's key may use `model` (its `model:` scopes): a routed call's upstream model as well as its alias. */
  mayUseModel(request: PromptRequest, model: string): boolean {
    return this.host.authorise({ ...request, model_id: model }) === null;
  }

  /** A streamed reply's first byte released to the client (for the observer's time-to-first-token). */
  firstToken(call: governed.GovernedCall): void {
    governed.firstToken(this.host, call);
  }

  /** EXCHANGE + budget settlement for an admitted call; never throws. */
  conclude(call: governed.GovernedCall, outcome: governed.GovernedOutcome): Promise<governed.Concluded> {
    return governed.conclude(this.host, call, outcome);
  }

  breakerStates(): BreakerSnapshot[] {
    return this.breakers.snapshot();
  }

  async route(input: unknown): Promise<PromptResponse> {
    const response = await routeOnce(
      {
        config: this.options.config,
        providers: this.providers,
        host: this.host,
        pendingWarnings: this.exchanges.pendingWarnings,
      },
      input,
    );
    const late = (await this.options.afterRoute?.()) ?? null;
    if (late !== null) response.warnings.push(late);
    return response;
  }

  /**
   * The router's authentication, for route() and any surface in front of it (the HTTP gateway): signature,
   * expiry, agent, contract and model scopes, then the revocation list. A list that cannot be trusted refuses.
   */
  verifyKey(token: unknown, expect: { agentId: string; contractId: string; modelId: string }): AuthResult {
    return this.keys.verifyKey(token, expect);
  }

  /** A key that may read the console (scope `console:read`), checked against the revocation list like any key. */
  verifyConsoleKey(token: unknown): AuthResult {
    return this.keys.verifyConsoleKey(token);
  }

  /** When the key (its jti) last authorised a call on this host, if recently (ms). */
  keyLastUsed(keyId: string): number | null {
    return this.keys.lastUsed(keyId);
  }

  /** A key holding `scope` (`metrics:read`, `keys:admin`), checked against the revocation list like any key. */
  verifyScopedKey(token: unknown, scope: string): AuthResult {
    return this.keys.verifyScopedKey(token, scope);
  }
}

/** Where every record goes: the SQLite ledger (wrapped) or the shared store; budget records reported once landed. */
function routerStore(options: RouterOptions): { writer: LedgerStore; budget: BudgetPort | null } {
  let writer: LedgerStore;
  let budget: BudgetPort | null;
  if (options.store) {
    writer = options.store.ledger.backend === 'postgres' ? serialWriter(options.store.ledger) : options.store.ledger;
    budget = options.store.budget;
  } else if (options.ledger) {
    writer = sqliteLedgerStore(options.ledger);
    budget = options.budget ? sqliteBudgetPort(options.budget) : null;
  } else {
    throw new CpError('ERR_USAGE', 'a router needs a ledger or a store', {
      hint: 'pass {ledger} (a SQLite ledger) or {store: {ledger, budget}}',
    });
  }
  const level = options.config.durability;
  if (budget === null) return { writer: writerAt(writer, level), budget };
  const port = budget;
  return {
    writer: writerAt(
      reportingWriter(writer, DELIVERED_ONCE, (ids) => port.recorded(ids)),
      level,
    ),
    budget,
  };
}
