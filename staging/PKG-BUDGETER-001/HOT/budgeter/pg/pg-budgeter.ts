import type pg from 'pg';
import { CpError } from '#kernel/errors.js';
import { type CommitCount, commitCount } from '#kernel/ledger/commits.js';
import {
  connectionLost,
  ignoreDropped,
  type PgTimeouts,
  pgPool,
  refusePasswordInUrl,
  storeError,
  timedOut,
} from '#kernel/ledger/pg/pg-ledger.js';
import { type BudgetConfig, parseBudgetConfig } from '../config.js';
import { parseRequestId, parseReserveInput } from '../input.js';
import { scopeIds } from '../operations.js';
import type { BudgetPort } from '../port.js';
import type { Released, ReserveOutcome, Settled } from '../results.js';
import { type OutboxRow, outboxRow } from '../kept-records.js';
import { inFlightKeys } from '../rate.js';
import { type Scope, scopesFor } from '../scopes.js';
import { type BudgetStatus, statusFromRows } from '../status.js';
import {
  type StepContext,
  chargeUnknownStep,
  readSettleRequest,
  releaseStep,
  reserveStep,
  settleStep,
} from '../steps.js';
import { BUDGET_DB_FORMAT, type ReservationRow, type ScopeKey, type TotalsRow, type WindowRow } from '../store.js';
import {
  PG_BUDGET_DDL,
  PG_BUDGET_LOCK,
  PG_BUDGET_VERSION,
  PG_OUTBOX_DDL,
  RESERVATION_COLUMNS,
  TOTALS_COUNTERS,
} from './schema.js';
import { SnapshotState } from './snapshot.js';

export interface PgBudgeterOptions {
  /** The budget config (validated with parseBudgetConfig). */
  config: unknown;
  clock?: () => number;
  /** Connections in the pool this opens (not used with a pool given). */
  poolSize?: number;
  /** Lay out the tables when the database has none (idempotent). */
  create?: boolean;
  /** Of the pool this opens (see PgTimeouts). */
  timeouts?: PgTimeouts;
}

/** Lost a race the database detected (serialization, deadlock, a row inserted meanwhile): the whole step runs again. */
const RETRYABLE = new Set(['40001', '40P01', '23505']);
const MAX_ATTEMPTS = 8;
// Prefixes keep a request's lock and a scope's lock apart in the one advisory-lock key space.
const REQUEST_LOCK = 'cplane budget request\u001f';
const SCOPE_LOCK = 'cplane budget scope\u001f';

const TOTALS_COLUMNS = ['scope', 'kind', 'session_id', 'work_order_id', 'agent_id', ...TOTALS_COUNTERS] as const;
/** Each scope with its totals and its rate window, either absent (NULL columns) when never charged. */
const LOAD_SCOPES_SQL = `SELECT k.scope, ${TOTALS_COLUMNS.slice(1)
  .map((c) => `t.${c}`)
  .join(', ')}, w.window_start AS w_start, w.requests AS w_requests, w.tokens AS w_tokens
  FROM unnest($1::text[]) AS k(scope)
  LEFT JOIN cplane_budget_scope_totals AS t ON t.scope = k.scope
  LEFT JOIN cplane_budget_rate_windows AS w ON w.scope = k.scope`;

/**
 * The budgeter on PostgreSQL, for gateways on several hosts sharing one budget. Steps run in groups, each one
 * READ COMMITTED transaction that takes advisory locks on its request ids and then on every scope they charge
 * (sorted, so two groups never wait on each other in a cycle), reads those rows into a SnapshotState, runs the
 * SQLite budgeter's own decision and outcome code over it one step after the other (steps.ts), and writes what
 * changed before it commits. Two hosts charging one scope therefore decide one after the other on committed
 * totals: a limit is never overspent by a race.
 */
export class PgBudgeter implements BudgetPort {
  readonly backend = 'postgres' as const;
  /** Steps run again: a race the database reported lost, or a connection dropped before COMMIT. */
  readonly stats = { retries: 0 };
  private readonly records: StepContext['records'];

  private constructor(
    readonly pool: pg.Pool,
    private readonly ownsPool: boolean,
    readonly config: BudgetConfig,
    private readonly clock: () => number,
  ) {
    this.records = { mode: config.mode, currency: config.currency };
  }

  /** Open on a URL (a pool of its own, ended by close) or on a pool shared with the ledger (left open). */
  /**
   * A step's first round trip. With the config's durability "normal" (the default, as on SQLite, where it is
   * synchronous=NORMAL) a COMMIT does not wait for the WAL flush: a crash of the database server (not a restart)
   * can lose the last fraction of a second of budget steps, never half of one, while the records of the calls they
   * admitted are in the chain (durable). "full" waits for the flush on every step.
   */
  private readonly commits = commitCount();

  /** Transactions this process committed, waiting for the WAL flush (durability "full") or not. */
  commitCount(): Readonly<CommitCount> {
    return this.commits;
  }

  private get begin(): string {
    return this.config.durability === 'full'
      ? 'BEGIN ISOLATION LEVEL READ COMMITTED'
      : 'BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL synchronous_commit TO OFF';
  }

  static async open(target: string | pg.Pool, options: PgBudgeterOptions): Promise<PgBudgeter> {
    const config = parseBudgetConfig(options.config);
    let pool: pg.Pool;
    if (typeof target === 'string') {
      refusePasswordInUrl(target);
      pool = pgPool(target, options.poolSize ?? 4, options.timeouts);
    } else pool = target;
    const owns = typeof target === 'string';
    try {
      await layOut(pool, options.create === true);
    } catch (error) {
      if (owns) await pool.end();
      throw storeError(error);
    }
    return new PgBudgeter(pool, owns, config, options.clock ?? Date.now);
  }

  async close(): Promise<void> {
    // What landed since the last group: dropped now, or (the database away) left for reconciliation to drop.
    if (this.landed.length > 0) await this.forgetRecords(this.landed.splice(0)).catch(() => undefined);
    if (this.ownsPool) await this.pool.end();
  }

  async reserve(request: unknown): Promise<ReserveOutcome> {
    const input = parseReserveInput(request);
    // The scopes at the time the group decides: a period that ends meanwhile is not the one the step reads.
    const keys = (_row: ReservationRow | undefined, now: number) => this.lockedKeys(scopesFor(this.config, input, now));
    const outcome = await this.step(input.request_id, keys, (ctx) => reserveStep(ctx, input));
    // A replay grants nothing new: the call holding the reservation may be another host's, or a dead one's.
    if (outcome.ok && !outcome.replayed) this.open.add(input.request_id);
    return outcome;
  }

  async settle(request: { request_id: string; usage: unknown; model?: string | null }): Promise<Settled> {
    const { requestId, usage, model } = readSettleRequest(request);
    return this.ending(requestId, () =>
      this.step(requestId, this.keysOf, (ctx) => settleStep(ctx, requestId, usage, model), true),
    );
  }

  async release(requestIdInput: unknown): Promise<Released> {
    const requestId = parseRequestId(requestIdInput);
    return this.ending(requestId, () => this.step(requestId, this.keysOf, (ctx) => releaseStep(ctx, requestId), true));
  }

  async chargeUnknown(
    requestIdInput: unknown,
    reason: string,
    metadata: Record<string, unknown> = {},
  ): Promise<Settled | null> {
    const requestId = parseRequestId(requestIdInput);
    return this.ending(requestId, () =>
      this.step(requestId, this.keysOf, (ctx) => chargeUnknownStep(ctx, requestId, reason, metadata), true),
    );
  }

  /**
   * The reservations this budgeter granted whose call has not ended yet: alive in this process however long they
   * run (a stream can outlast the orphan timeout), so this host's own reconciliation passes leave them alone.
   */
  callsInFlight(): ReadonlySet<string> {
    return this.open;
  }

  private readonly open = new Set<string>();

  /** A step that ends a call: the call is no longer in flight here, even if the step failed (then it is an orphan). */
  private async ending<T>(requestId: string, step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } finally {
      this.open.delete(requestId);
    }
  }

  recorded(requestIds: readonly string[]): void {
    this.landed.push(...requestIds);
  }

  async recordsDue(cutoffMs: number, limit = 1000): Promise<OutboxRow[]> {
    try {
      const result = await this.pool.query<{ request_id: string; records: string }>(
        `SELECT request_id, records FROM cplane_budget_outbox WHERE finished_at <= $1
         ORDER BY finished_at, request_id LIMIT $2`,
        [new Date(cutoffMs).toISOString(), limit],
      );
      return result.rows.map(outboxRow);
    } catch (error) {
      throw storeError(error);
    }
  }

  async forgetRecords(requestIds: readonly string[]): Promise<void> {
    try {
      await this.pool.query('DELETE FROM cplane_budget_outbox WHERE request_id = ANY($1::text[])', [[...requestIds]]);
    } catch (error) {
      throw storeError(error);
    }
  }

  /** Requests whose records their caller reported in the ledger: dropped from the outbox by the next group. */
  private landed: string[] = [];

  async stalePending(cutoffMs: number, limit = 1000): Promise<string[]> {
    try {
      const result = await this.pool.query<{ request_id: string }>(
        `SELECT request_id FROM cplane_budget_reservations WHERE state = 'reserved' AND created_at <= $1
         ORDER BY created_at, request_id LIMIT $2`,
        [new Date(cutoffMs).toISOString(), limit],
      );
      return result.rows.map((r) => r.request_id);
    } catch (error) {
      throw storeError(error);
    }
  }

  /**
   * `cplane budget status` on PostgreSQL: the queries of the SQLite store (sessionTotals, sessions, pendingCount)
   * on the shared tables, in the same order, through the same statusFromRows, so either store prints alike.
   * Text is compared byte-wise (COLLATE "C"), as SQLite does, whatever the database's collation.
   */
  async status(
    options: { session_id?: string | undefined; limit?: number } = {},
    dbPath = 'postgres',
  ): Promise<BudgetStatus> {
    const session = options.session_id ?? null;
    try {
      const rows =
        session === null
          ? await this.pool.query(
              `SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY kind, session_id, agent_id
                 ORDER BY scope COLLATE "C" DESC) AS latest
               FROM cplane_budget_scope_totals WHERE kind IN ('session', 'key')) AS t WHERE latest = 1
               ORDER BY kind = 'key', session_id COLLATE "C", agent_id COLLATE "C" LIMIT $1`,
              [options.limit ?? 100],
            )
          : await this.pool.query(
              `SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY kind, work_order_id, agent_id
                 ORDER BY scope COLLATE "C" DESC) AS latest
               FROM cplane_budget_scope_totals WHERE session_id = $1) AS t WHERE latest = 1
               ORDER BY kind = 'agent', kind = 'work_order', work_order_id COLLATE "C", agent_id COLLATE "C"`,
              [session],
            );
      const pending = await this.pool.query(
        `SELECT COUNT(*) AS n FROM cplane_budget_reservations WHERE state = 'reserved'${session === null ? '' : ' AND session_id = $1'}`,
        session === null ? [] : [session],
      );
      return statusFromRows(
        this.config,
        dbPath,
        session,
        (rows.rows as Record<string, unknown>[]).map(toTotalsRow),
        int((pending.rows[0] as { n: unknown }).n),
        this.clock(),
      );
    } catch (error) {
      throw storeError(error);
    }
  }

  /** The scopes a settle/release/chargeUnknown charges are the reservation's own (none when it does not exist). */
  private readonly keysOf = (row: ReservationRow | undefined): ScopeKey[] =>
    row === undefined ? [] : this.lockedKeys(scopesFor(this.config, scopeIds(row), Date.parse(row.created_at)));

  /**
   * A step's scopes (their rate windows), their totals (a period's own row where the limit resets) and their
   * in-flight counters (rate.ts inFlightKey), all read and locked by the step.
   */
  private lockedKeys(scopes: readonly Scope[]): ScopeKey[] {
    const keys = scopes.map((s) => s.key);
    const periods = scopes.filter((s) => s.totals !== s.key).map((s) => s.totals);
    return [...keys, ...periods, ...inFlightKeys(this.config, keys)];
  }

  /**
   * Queue a step: the steps that become ready while a group is in the database run together as the next group,
   * in one transaction (group commit for budgets). A hot scope (the agent's, a key's) is then locked once per group
   * rather than once per step, so a busy host's event loop delays its lock holders once, not once per call.
   */
  private step<T>(
    requestId: string,
    scopesOf: ScopeKey[] | ((row: ReservationRow | undefined, now: number) => ScopeKey[]),
    run: (ctx: StepContext) => T,
    keep = false,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ requestId, scopesOf, run, keep, resolve: resolve as (value: unknown) => void, reject });
      this.schedule();
    });
  }

  private queue: QueuedStep[] = [];
  private scheduled = false;
  private running = false;

  private schedule(): void {
    if (this.scheduled || this.running || this.queue.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.running = true;
      const group = this.queue.splice(0, MAX_GROUP);
      void this.runGroup(group).finally(() => {
        this.running = false;
        this.schedule();
      });
    });
  }

  /** One group, retried whole on a lost race or a connection dropped before COMMIT; each step settles its promise. */
  private async runGroup(group: QueuedStep[]): Promise<void> {
    // Dropped by this group's transaction; a group that fails hands them to the next one.
    const landed = this.landed.splice(0);
    for (let attempt = 1; ; attempt += 1) {
      let client: pg.PoolClient;
      try {
        client = await this.pool.connect();
      } catch (error) {
        const coded = storeError(error);
        for (const step of group) step.reject(coded);
        return;
      }
      // A connection dropped while checked out is also emitted as an 'error' event, which would end the process
      // unheard; the query in flight fails with it and is handled below.
      client.on('error', ignoreDropped);
      let broken: Error | undefined;
      let committing = false;
      try {
        await client.query(this.begin);
        const outcomes = await this.attempt(client, group, landed);
        committing = true;
        await client.query('COMMIT');
        if (this.config.durability === 'full') this.commits.durable += 1;
        else this.commits.lazy += 1;
        group.forEach((step, i) => {
          const outcome = outcomes[i] as StepOutcome;
          if (outcome.ok) step.resolve(outcome.value);
          else step.reject(outcome.error);
        });
        return;
      } catch (error) {
        // A connection still waiting for an answer would only make the ROLLBACK wait as long: it is discarded.
        broken = timedOut(error) ? (error as Error) : await rollback(client);
        const code = (error as { code?: unknown }).code;
        const lostRace = typeof code === 'string' && RETRYABLE.has(code) && broken === undefined;
        // A connection the server dropped (restarted, failed over; often an idle pooled one) before COMMIT:
        // its transaction died with it, so another connection runs the group again (one that cannot connect is
        // coded, not retried). Not once COMMIT was sent: it may have landed, and a rerun would answer "replayed"
        // without the steps' records.
        const lostIdle =
          (connectionLost(error) || (typeof code === 'string' && /^(08|57P0)/.test(code))) && !committing;
        if ((lostRace || lostIdle) && attempt < MAX_ATTEMPTS) {
          this.stats.retries += 1;
          continue;
        }
        const coded = storeError(error);
        this.landed.push(...landed);
        for (const step of group) step.reject(coded);
        return;
      } finally {
        client.off('error', ignoreDropped);
        client.release(broken);
      }
    }
  }

  /**
   * One try of a group. Locks are taken in one global order, so two groups never wait on each other in a cycle:
   * every request lock (sorted), then every scope lock (sorted); the scopes of a settle, release or charge come
   * from its reservation, read once the request locks are held. Then one read of every scope, the steps one after
   * the other over that snapshot (a step that throws is undone and rejected alone), and one write of what changed.
   */
  private async attempt(
    client: pg.PoolClient,
    group: readonly QueuedStep[],
    landed: readonly string[],
  ): Promise<StepOutcome[]> {
    const requestIds = [...new Set(group.map((step) => step.requestId))].sort();
    await lock(
      client,
      requestIds.map((id) => REQUEST_LOCK + id),
    );
    const found = await client.query('SELECT * FROM cplane_budget_reservations WHERE request_id = ANY($1::text[])', [
      requestIds,
    ]);
    const reservations = new Map<string, ReservationRow | undefined>(requestIds.map((id) => [id, undefined]));
    for (const row of found.rows) reservations.set(row.request_id as string, toReservationRow(row));
    const now = this.clock();
    const keys = new Map<string, ScopeKey>();
    for (const step of group) {
      const own = Array.isArray(step.scopesOf) ? step.scopesOf : step.scopesOf(reservations.get(step.requestId), now);
      for (const key of own) keys.set(key.scope, key);
    }
    const scopes = [...keys.values()];
    await lock(client, scopeLocks(scopes));
    const loaded = scopes.length === 0 ? [] : (await client.query(LOAD_SCOPES_SQL, [scopes.map((k) => k.scope)])).rows;
    const state = new SnapshotState(
      reservations,
      scopes,
      loaded.filter((r) => r.kind !== null).map(toTotalsRow),
      new Map(
        loaded
          .filter((r) => r.w_start !== null)
          .map((r) => [
            r.scope as string,
            toWindowRow({ window_start: r.w_start, requests: r.w_requests, tokens: r.w_tokens }),
          ]),
      ),
    );
    const outcomes = group.map((step): StepOutcome => {
      const restore = state.save();
      try {
        return { ok: true, value: step.run({ config: this.config, store: state, now, records: this.records }) };
      } catch (error) {
        restore();
        return { ok: false, error };
      }
    });
    // A settle, release or unknown charge keeps its records until the caller reports them appended (port.ts).
    const kept = new Map<string, string>();
    group.forEach((step, i) => {
      const outcome = outcomes[i] as StepOutcome;
      const records = outcome.ok ? (outcome.value as { records?: unknown } | null)?.records : undefined;
      if (step.keep && Array.isArray(records) && records.length > 0) kept.set(step.requestId, JSON.stringify(records));
    });
    await write(client, state, { kept, finishedAt: new Date(now).toISOString(), landed });
    return outcomes;
  }
}

interface QueuedStep {
  requestId: string;
  /** Whether the step's records are kept in the outbox (settle, release, chargeUnknown). */
  keep: boolean;
  scopesOf: ScopeKey[] | ((row: ReservationRow | undefined, now: number) => ScopeKey[]);
  run: (ctx: StepContext) => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

type StepOutcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** Steps in one transaction at most: its lock set and its statements stay bounded. */
const MAX_GROUP = 256;

function scopeLocks(keys: readonly ScopeKey[]): string[] {
  return [...new Set(keys.map((k) => k.scope))].sort().map((s) => SCOPE_LOCK + s);
}

async function layOut(pool: pg.Pool, create: boolean): Promise<void> {
  const client = await pool.connect();
  client.on('error', ignoreDropped);
  try {
    const exists = await client.query(
      "SELECT to_regclass('cplane_budget_meta') IS NOT NULL AS present, to_regclass('cplane_budget_outbox') IS NOT NULL AS outbox",
    );
    if (exists.rows[0]?.present === true && exists.rows[0]?.outbox !== true && !create) {
      // A budget laid out before the outbox: it gains the table, as a SQLite file does when opened for writing.
      await client.query('BEGIN');
      await client.query(`SELECT pg_advisory_xact_lock(${PG_BUDGET_LOCK})`);
      await client.query(PG_OUTBOX_DDL);
      await client.query('COMMIT');
    }
    if (exists.rows[0]?.present !== true || create) {
      if (!create)
        throw new CpError('ERR_BUDGET_DB', 'the PostgreSQL database holds no cplane budget', {
          hint: 'create it with `cplane ledger migrate --root R --to URL`, or open it with create',
        });
      await client.query('BEGIN');
      await client.query(`SELECT pg_advisory_xact_lock(${PG_BUDGET_LOCK})`);
      await client.query(PG_BUDGET_DDL);
      await client.query(
        'INSERT INTO cplane_budget_meta (key, value) VALUES ($1, $2), ($3, $4) ON CONFLICT (key) DO NOTHING',
        ['format', BUDGET_DB_FORMAT, 'format_version', PG_BUDGET_VERSION],
      );
      await client.query('COMMIT');
    }
    const meta = await client.query<{ key: string; value: string }>('SELECT key, value FROM cplane_budget_meta');
    const values = new Map(meta.rows.map((r) => [r.key, r.value]));
    if (values.get('format') !== BUDGET_DB_FORMAT || values.get('format_version') !== PG_BUDGET_VERSION)
      throw new CpError('ERR_BUDGET_DB', `the PostgreSQL budget is not a version ${PG_BUDGET_VERSION} cplane budget`, {
        hint: 'point the budgeter at a database laid out by this cplane',
        details: { format: values.get('format') ?? null, format_version: values.get('format_version') ?? null },
      });
  } catch (error) {
    await rollback(client);
    throw error;
  } finally {
    client.off('error', ignoreDropped);
    client.release();
  }
}

async function lock(client: pg.PoolClient, keys: readonly string[]): Promise<void> {
  if (keys.length === 0) return;
  // PostgreSQL evaluates a select list after its ORDER BY: the locks are taken one by one in the array's order.
  await client.query(
    'SELECT pg_advisory_xact_lock(hashtextextended(k, 0)) FROM unnest($1::text[]) WITH ORDINALITY AS t(k, i) ORDER BY i',
    [keys],
  );
}

/** Roll back after a failure; the connection's own error when it is broken (the pool then discards it). */
async function rollback(client: pg.PoolClient): Promise<Error | undefined> {
  try {
    await client.query('ROLLBACK');
    return undefined;
  } catch (error) {
    return error as Error;
  }
}

const FINISH_COLUMNS = [
  'state',
  'charged_tokens',
  'charged_cost',
  'actual_tokens',
  'actual_cost',
  'usage',
  'usage_key',
  'over_budget',
  'finished_at',
] as const;

/** Everything the step changed, in one statement (data-modifying CTEs over three tables): one round trip. */
async function write(
  client: pg.PoolClient,
  state: SnapshotState,
  outbox: { kept: ReadonlyMap<string, string>; finishedAt: string; landed: readonly string[] },
): Promise<void> {
  const { inserted, finished, totals, windows } = state.writes;
  const params: unknown[] = [];
  const param = (value: unknown): string => `$${params.push(value)}`;
  const column = (values: unknown[], type: 'text' | 'bigint'): string => `${param(values)}::${type}[]`;
  const parts: string[] = [];
  if (outbox.landed.length > 0)
    parts.push(`DELETE FROM cplane_budget_outbox WHERE request_id = ANY(${column([...outbox.landed], 'text')})`);
  if (outbox.kept.size > 0)
    parts.push(`INSERT INTO cplane_budget_outbox (request_id, finished_at, records)
      SELECT k, ${param(outbox.finishedAt)}, r FROM unnest(${column([...outbox.kept.keys()], 'text')}, ${column([...outbox.kept.values()], 'text')}) AS t(k, r)
      ON CONFLICT (request_id) DO NOTHING`);
  if (inserted.size > 0) {
    const rows = [...inserted.values()].map((row) => `(${RESERVATION_COLUMNS.map((c) => param(row[c])).join(', ')})`);
    parts.push(`INSERT INTO cplane_budget_reservations (${RESERVATION_COLUMNS.join(', ')}) VALUES ${rows.join(', ')}`);
  }
  for (const row of finished.values()) {
    const set = FINISH_COLUMNS.map((c) => `${c} = ${param(row[c])}`);
    parts.push(
      `UPDATE cplane_budget_reservations SET ${set.join(', ')} WHERE request_id = ${param(row.request_id)} AND state = 'reserved'`,
    );
  }
  if (totals.size > 0) {
    const rows = [...totals.values()];
    const arrays = [
      ...TOTALS_COLUMNS.slice(0, 5).map((c) =>
        column(
          rows.map((r) => r.key[c as keyof ScopeKey]),
          'text',
        ),
      ),
      ...TOTALS_COUNTERS.map((c) =>
        column(
          rows.map((r) => r.delta[c]),
          'bigint',
        ),
      ),
    ];
    const add = TOTALS_COUNTERS.map((c) => `${c} = t.${c} + excluded.${c}`);
    parts.push(`INSERT INTO cplane_budget_scope_totals AS t (${TOTALS_COLUMNS.join(', ')})
      SELECT * FROM unnest(${arrays.join(', ')}) ON CONFLICT (scope) DO UPDATE SET ${add.join(', ')}`);
  }
  if (windows.size > 0) {
    const rows = [...windows.values()];
    const arrays = [
      column(
        rows.map((r) => r.key.scope),
        'text',
      ),
      ...(['window_start', 'requests', 'tokens'] as const).map((c) =>
        column(
          rows.map((r) => r.row[c]),
          'bigint',
        ),
      ),
    ];
    parts.push(`INSERT INTO cplane_budget_rate_windows (scope, window_start, requests, tokens)
      SELECT * FROM unnest(${arrays.join(', ')}) ON CONFLICT (scope) DO UPDATE SET
      window_start = excluded.window_start, requests = excluded.requests, tokens = excluded.tokens`);
  }
  const last = parts.pop();
  if (last === undefined) return;
  const ctes = parts.map((part, i) => `w${i} AS (${part})`);
  await client.query(ctes.length === 0 ? last : `WITH ${ctes.join(', ')} ${last}`, params);
}

/** A BIGINT as the exact JS number it was written from (pg hands BIGINT back as a string). */
function int(value: unknown): number {
  const n = typeof value === 'number' ? value : Number(value);
  if (!Number.isSafeInteger(n))
    throw new CpError('ERR_BUDGET_DB', `the PostgreSQL budget holds ${String(value)}, not a count a budget can hold`, {
      hint: 'the budget tables were written by something other than cplane; restore them from a backup',
      details: { value: String(value) },
    });
  return n;
}

function intOrNull(value: unknown): number | null {
  return value === null || value === undefined ? null : int(value);
}

function toReservationRow(r: Record<string, unknown>): ReservationRow {
  return {
    request_id: r.request_id as string,
    session_id: r.session_id as string,
    work_order_id: r.work_order_id as string,
    agent_id: r.agent_id as string,
    budget_scope: r.budget_scope as string,
    model: r.model as string,
    params_key: r.params_key as string,
    state: r.state as ReservationRow['state'],
    reserved_tokens: int(r.reserved_tokens),
    reserved_cost: intOrNull(r.reserved_cost),
    charged_tokens: intOrNull(r.charged_tokens),
    charged_cost: intOrNull(r.charged_cost),
    actual_tokens: intOrNull(r.actual_tokens),
    actual_cost: intOrNull(r.actual_cost),
    usage: (r.usage as string | null) ?? null,
    usage_key: (r.usage_key as string | null) ?? null,
    over_budget: int(r.over_budget),
    created_at: r.created_at as string,
    finished_at: (r.finished_at as string | null) ?? null,
    allocation_entry_id: (r.allocation_entry_id as string | null) ?? null,
    settlement_entry_id: (r.settlement_entry_id as string | null) ?? null,
  };
}

function toTotalsRow(r: Record<string, unknown>): TotalsRow {
  return {
    scope: r.scope as string,
    kind: r.kind as TotalsRow['kind'],
    session_id: r.session_id as string,
    work_order_id: r.work_order_id as string,
    agent_id: r.agent_id as string,
    reserved_tokens: int(r.reserved_tokens),
    reserved_cost: int(r.reserved_cost),
    settled_tokens: int(r.settled_tokens),
    settled_cost: int(r.settled_cost),
    requests: int(r.requests),
    unknown_cost_requests: int(r.unknown_cost_requests),
  };
}

function toWindowRow(r: Record<string, unknown>): WindowRow {
  return { window_start: int(r.window_start), requests: int(r.requests), tokens: int(r.tokens) };
}
