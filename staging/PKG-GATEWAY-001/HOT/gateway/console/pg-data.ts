import {
  type Anchor,
  contentRefs,
  newestRootCheckpoint,
  parseStoredMetadata,
  type SessionPage,
  type SessionQuery,
} from '#kernel/ledger/index.js';
import { pgReadPieces, pgReadSide } from '#kernel/ledger/pg/pg-content-read.js';
import { verifyPgChain } from '#kernel/ledger/pg/pg-checks.js';
import { type PgLedger, storeError } from '#kernel/ledger/pg/pg-ledger.js';
import { pgListSessions, pgSessionTurns } from '#kernel/ledger/pg/pg-sessions.js';
import { jsonExtract, SqliteSum } from '#kernel/ledger/pg/sqlite-aggregates.js';
import type { BudgetStatus } from '#budgeter/index.js';
import type { BreakerSnapshot } from '#router/breaker.js';
import {
  alertSentView,
  type AlertsView,
  type BreakersView,
  type ConsoleData,
  type ConsoleTurnPage,
  consoleTurnPage,
  type ExchangeView,
  exchangeViewOf,
  fallbackRates,
  latencyBuckets,
  type PlotsView,
  RECENT_WINDOW,
  type RootView,
  type RoutedRow,
  rootViewOf,
  type VerifySummary,
} from './data.js';

export interface PgConsoleSource {
  /** This host's root: its receipts, checkpoints of the shared chain, spool and last gate-check. */
  root: string;
  /** The shared chain, read through the router's own PgLedger (its pool). */
  ledger: PgLedger;
  /** The shared budgets (PgBudgeter): its status reads the shared totals. */
  budget: { status(options: { limit?: number }): Promise<BudgetStatus> };
  /** The breakers as the router holds them, kept in step with the other hosts through the database. */
  breakers: () => BreakerSnapshot[];
  clock?: () => number;
}

type Row = Record<string, unknown>;
const utf8 = (bytes: unknown): string => (bytes as Buffer).toString('utf8');

/**
 * The console on a shared PostgreSQL store: the views of sqlite-data.ts from `cplane_entries` and the shared
 * budgets, equal to them for the same history. Metadata is parsed in node and totalled as SQLite totals it
 * (sqlite-aggregates.ts); every read is bounded by the head read first, as a SQLite snapshot would be.
 */
export class PgConsoleData implements ConsoleData {
  private verified: VerifySummary | null = null;
  private verifying: Promise<VerifySummary> | null = null;

  constructor(private readonly source: PgConsoleSource) {}

  async rootView(options: { verify?: boolean } = {}): Promise<RootView> {
    const { root } = this.source;
    const head = await this.head();
    if (options.verify === true) await this.verify(head.seq);
    const verify = this.verified !== null && this.verified.head_seq === head.seq ? this.verified : null;
    const checkpoint = newestRootCheckpoint(root);
    let matches: boolean | null = null;
    if (checkpoint !== null) {
      const r = await this.query('SELECT entry_hash FROM cplane_entries WHERE seq = $1', [checkpoint.seq]);
      const hash = (r[0] as { entry_hash?: string } | undefined)?.entry_hash;
      matches = hash === undefined ? null : hash === checkpoint.hash;
    }
    return rootViewOf(root, head, checkpoint, matches, verify);
  }

  /** One walk of the whole chain at a time: requests made while one runs share it rather than start more. */
  verify(headSeq?: number): Promise<VerifySummary> {
    this.verifying ??= (
      headSeq === undefined ? this.head().then((h) => this.verifyFrom(h.seq)) : this.verifyFrom(headSeq)
    ).finally(() => {
      this.verifying = null;
    });
    return this.verifying;
  }

  /**
   * `ledger verify --store`'s check of the chain and its content, judged for the head read before it began: other
   * hosts append meanwhile, and the walk covers at least that head.
   */
  private async verifyFrom(headSeq: number): Promise<VerifySummary> {
    const { ledger, root } = this.source;
    let result: Awaited<ReturnType<typeof verifyPgChain>>['result'];
    try {
      ({ result } = await verifyPgChain(ledger, { root, files: [], keyFiles: [] }));
    } catch (error) {
      throw storeError(error);
    }
    this.verified = {
      ok: result.ok,
      entries: result.entries,
      head_seq: headSeq,
      first_bad: result.first_bad ?? null,
      redacted_blocks: result.content?.redacted_blocks ?? 0,
      content_problems: result.content_problems.length,
      checked_at: new Date((this.source.clock ?? Date.now)()).toISOString(),
    };
    return this.verified;
  }

  async sessions(query: SessionQuery): Promise<SessionPage> {
    return pgListSessions(this.source.ledger, query);
  }

  async session(sessionId: string, options: { after?: number; limit?: number }): Promise<ConsoleTurnPage> {
    return consoleTurnPage(await pgSessionTurns(this.source.ledger, sessionId, options));
  }

  async exchange(id: string): Promise<ExchangeView | null> {
    const { ledger } = this.source;
    const [row] = await this.query(
      'SELECT seq, event_type, metadata, timestamp, decision, reason FROM cplane_entries WHERE id = $1',
      [id],
    );
    if (row === undefined || row.event_type !== 'EXCHANGE') return null;
    const stored = parseStoredMetadata({ id, metadata: row.metadata as string });
    const refs = contentRefs(stored);
    const content =
      refs === undefined
        ? undefined
        : { prompt: await pgReadPieces(ledger, refs.prompt), response: await pgReadSide(ledger, refs.response) };
    return exchangeViewOf(
      {
        id,
        seq: Number(row.seq),
        timestamp: row.timestamp as string,
        decision: utf8(row.decision),
        reason: utf8(row.reason),
      },
      stored,
      content,
    );
  }

  async budgets(): Promise<BudgetStatus> {
    try {
      return await this.source.budget.status({ limit: 200 });
    } catch (error) {
      throw storeError(error);
    }
  }

  async alerts(): Promise<AlertsView> {
    const head = (await this.head()).seq;
    const from = Math.max(1, head - RECENT_WINDOW + 1);
    const alerts = await this.query(
      `SELECT id, timestamp, metadata FROM cplane_entries
       WHERE seq >= $1 AND seq <= $2 AND event_type = 'ALERT_SENT' ORDER BY seq DESC LIMIT 50`,
      [from, head],
    );
    return {
      recent_alerts: alerts.map((row) => {
        const metadata = parseStoredMetadata({ id: row.id as string, metadata: row.metadata as string });
        return alertSentView(row.id as string, row.timestamp as string, metadata);
      }),
    };
  }

  async breakers(): Promise<BreakersView> {
    const head = (await this.head()).seq;
    const from = Math.max(1, head - RECENT_WINDOW + 1);
    const rows = await this.query(
      `SELECT id, timestamp, metadata, session_id FROM cplane_entries
       WHERE seq >= $1 AND seq <= $2 AND event_type = 'EXCHANGE' AND decision <> $3 ORDER BY seq DESC LIMIT 50`,
      [from, head, Buffer.from('SUCCESS', 'utf8')],
    );
    return {
      breakers: this.source.breakers(),
      recent_failures: rows.map((row) => {
        const metadata = parseStoredMetadata({ id: row.id as string, metadata: row.metadata as string });
        return {
          id: row.id as string,
          timestamp: row.timestamp as string,
          model_id: jsonExtract(metadata.model_id) as string | null,
          outcome: jsonExtract(metadata.outcome) as string | null,
          error_code: jsonExtract(metadata.error_code) as string | null,
          session_id: row.session_id === null ? null : utf8(row.session_id),
        };
      }),
    };
  }

  async plots(): Promise<PlotsView> {
    const head = (await this.head()).seq;
    const from = Math.max(1, head - RECENT_WINDOW + 1);
    const rows = await this.query(
      `SELECT id, event_type, timestamp, metadata FROM cplane_entries
       WHERE seq >= $1 AND seq <= $2 AND event_type IN ('BUDGET_SETTLED', 'EXCHANGE') ORDER BY seq`,
      [from, head],
    );
    const spend = new Map<string, SqliteSum>();
    const latencies: unknown[] = [];
    const routed: RoutedRow[] = [];
    for (const row of rows) {
      const metadata = parseStoredMetadata({ id: row.id as string, metadata: row.metadata as string });
      let settled: Record<string, unknown> | null = metadata;
      if (row.event_type === 'EXCHANGE') {
        latencies.push(jsonExtract(metadata.latency_ms));
        const attempts = metadata.attempts;
        const first = Array.isArray(attempts)
          ? (attempts[0] as { deployment?: unknown } | undefined)?.deployment
          : null;
        routed.push([jsonExtract(metadata.model_alias), jsonExtract(metadata.served_by), jsonExtract(first)]);
        settled = settlementOf(metadata.budget);
        if (settled === null) continue;
      }
      const hour = `${(row.timestamp as string).slice(0, 13)}:00:00Z`;
      let sum = spend.get(hour);
      if (sum === undefined) spend.set(hour, (sum = new SqliteSum()));
      sum.add(jsonExtract(settled.cost));
    }
    return {
      // Hours in byte order, as SQLite's ORDER BY sorts text.
      spend: [...spend.keys()]
        .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
        .map((hour) => ({ hour, cost: (spend.get(hour) as SqliteSum).total() })),
      latency: latencyBuckets(latencies),
      fallbacks: fallbackRates(routed),
      window_entries: head - from + 1,
    };
  }

  private async head(): Promise<Anchor> {
    try {
      return await this.source.ledger.headAnchor();
    } catch (error) {
      throw storeError(error);
    }
  }

  private async query(text: string, values: unknown[] = []): Promise<Row[]> {
    try {
      return (await this.source.ledger.pool.query(text, values)).rows as Row[];
    } catch (error) {
      throw storeError(error);
    }
  }
}

/** The settlement an EXCHANGE carries folded (metadata.budget), null when it carries none (or a release). */
function settlementOf(folded: unknown): Record<string, unknown> | null {
  if (typeof folded !== 'object' || folded === null) return null;
  const decision = (folded as { decision?: unknown }).decision;
  return typeof decision === 'string' && decision.startsWith('SETTLED') ? (folded as Record<string, unknown>) : null;
}
