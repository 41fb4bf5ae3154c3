import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  contentRefs,
  listSessions,
  newestRootCheckpoint,
  parseStoredMetadata,
  sessionTurns,
  type Ledger,
  type SessionPage,
  type SessionQuery,
} from '#kernel/ledger/index.js';
import { CpError, isCpError, show } from '#kernel/errors.js';
import { type InclusionProofFile, proveInclusion, rootNoteSigner } from '#kernel/ledger/merkle/ledger-proofs.js';
import { readTrustedRootKey, rootKeyPath } from '#kernel/signing/index.js';
import { Budgeter, budgetDbPathForRoot, loadBudgetConfigForRoot } from '#budgeter/index.js';
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

export interface SqliteConsoleSource {
  root: string;
  ledger: Ledger;
  /** The breakers as the router holds them now (a gateway), or as last saved (a report). */
  breakers: () => BreakerSnapshot[];
  clock?: () => number;
}

/** The root's own `ledger` entry, beside this module as installed (HOT/scripts/ledger.js). */
const LEDGER_ENTRY = fileURLToPath(new URL('../../scripts/ledger.js', import.meta.url));
/** The most a verify's JSON answer may be (its problems are listed, each bounded). */
const VERIFY_OUTPUT_BYTES = 16 * 1024 * 1024;

/** What `ledger verify --json` prints, as far as the root view reads it. */
interface VerifyOutput {
  ok: boolean;
  entries: number;
  first_bad?: VerifySummary['first_bad'];
  content?: { redacted_blocks?: number; problem_count?: number };
}

/** The console on a root's SQLite ledger and budget file: SQL straight on the file, in one process. */
export class SqliteConsoleData implements ConsoleData {
  private verified: VerifySummary | null = null;
  private verifying: Promise<VerifySummary> | null = null;

  constructor(private readonly source: SqliteConsoleSource) {}

  async rootView(options: { verify?: boolean } = {}): Promise<RootView> {
    const { root, ledger } = this.source;
    const head = ledger.head();
    if (options.verify === true) await this.verify();
    const verify = this.verified !== null && this.verified.head_seq === head.seq ? this.verified : null;
    const checkpoint = newestRootCheckpoint(root);
    let matches: boolean | null = null;
    if (checkpoint !== null) {
      // The hash alone: the entry's text is not needed to know whether the chain holds the checkpoint.
      const hash = ledger.entryHashAt(checkpoint.seq);
      matches = hash === undefined ? null : hash === checkpoint.hash;
    }
    return rootViewOf(root, head, checkpoint, matches, verify);
  }

  /**
   * A verify reads and hashes the whole chain: seconds per hundred thousand entries. It runs in a child process
   * (the root's own `ledger verify`, read-only), since in this thread it would stop every call a gateway is serving
   * until it ended; requests made while one runs share it, so asking again starts nothing more.
   */
  verify(): Promise<VerifySummary> {
    this.verifying ??= this.verifyFrom(this.source.ledger.head().seq).finally(() => {
      this.verifying = null;
    });
    return this.verifying;
  }

  /** Judged for the head read before it began: the gateway appends meanwhile, and the walk covers at least that. */
  private async verifyFrom(headSeq: number): Promise<VerifySummary> {
    const output = await new Promise<{ result: VerifyOutput | null; problem: string }>((resolve) => {
      execFile(
        process.execPath,
        [LEDGER_ENTRY, 'verify', '--ledger', this.source.ledger.path, '--json'],
        { env: {}, maxBuffer: VERIFY_OUTPUT_BYTES, windowsHide: true },
        (error, stdout, stderr) => {
          try {
            const result = JSON.parse(stdout) as VerifyOutput;
            if (typeof result.ok === 'boolean' && Number.isInteger(result.entries))
              return resolve({ result, problem: '' });
          } catch {
            // not a verify result: the error below says why
          }
          const said = `${stderr}`.trim().split('\n')[0] ?? '';
          resolve({ result: null, problem: said || (error?.message ?? 'no result') });
        },
      );
    });
    const { result } = output;
    this.verified = {
      ok: result?.ok ?? false,
      entries: result?.entries ?? 0,
      head_seq: headSeq,
      first_bad:
        result === null
          ? { seq: headSeq, id: null, problem: 'verify_failed', message: `verify could not run: ${output.problem}` }
          : (result.first_bad ?? null),
      redacted_blocks: result?.content?.redacted_blocks ?? 0,
      content_problems: result?.content?.problem_count ?? 0,
      checked_at: new Date((this.source.clock ?? Date.now)()).toISOString(),
    };
    return this.verified;
  }

  async sessions(query: SessionQuery): Promise<SessionPage> {
    return listSessions(this.source.ledger, query);
  }

  async session(sessionId: string, options: { after?: number; limit?: number }): Promise<ConsoleTurnPage> {
    return consoleTurnPage(await sessionTurns(this.source.ledger, sessionId, options));
  }

  async exchange(id: string): Promise<ExchangeView | null> {
    const { ledger } = this.source;
    // One read of the row; the text is walked once, piece by piece (ledger.get would join it a second time).
    const row = ledger
      .statement('SELECT seq, event_type, metadata, timestamp, decision, reason FROM entries WHERE id = ?')
      .raw()
      .get(id) as [number, string, string, string, string, string] | undefined;
    if (row === undefined || row[1] !== 'EXCHANGE') return null;
    const [seq, , metadataText, timestamp, decision, reason] = row;
    const stored = parseStoredMetadata({ id, metadata: metadataText });
    const refs = contentRefs(stored);
    const content =
      refs === undefined
        ? undefined
        : { prompt: ledger.content.readPieces(refs.prompt), response: ledger.content.read(refs.response) };
    return exchangeViewOf({ id, seq, timestamp, decision, reason }, stored, content);
  }

  async proof(id: string): Promise<InclusionProofFile | null> {
    const { root, ledger } = this.source;
    const key = readTrustedRootKey(root);
    if (key === null)
      throw new CpError(
        'ERR_CHECKPOINT_NO_ROOT_KEY',
        `root ${show(root)} has no root key (${show(rootKeyPath(root))})`,
        {
          hint: 'bootstrap a new root to get checkpoints and proofs',
          details: { root },
        },
      );
    // A ledger from before trees gains its tree here, once, from its chain (as `ledger prove` does).
    ledger.ensureTree();
    try {
      return proveInclusion(ledger, id, (origin) => rootNoteSigner(key, origin));
    } catch (error) {
      if (isCpError(error) && error.code === 'ERR_PROOF_ENTRY_UNKNOWN') return null;
      throw error;
    }
  }

  async budgets(): Promise<BudgetStatus> {
    const { root } = this.source;
    if (!existsSync(budgetDbPathForRoot(root))) {
      const config = loadBudgetConfigForRoot(root);
      return {
        mode: config.mode,
        currency: config.currency,
        db_path: budgetDbPathForRoot(root),
        session_id: null,
        pending_reservations: 0,
        scopes: [],
      };
    }
    const budgeter = Budgeter.open({ root, readonly: true });
    try {
      return budgeter.status({ limit: 200 });
    } finally {
      budgeter.close();
    }
  }

  async alerts(): Promise<AlertsView> {
    const { ledger } = this.source;
    const from = Math.max(1, ledger.head().seq - RECENT_WINDOW + 1);
    const alerts = ledger
      .statement(
        `SELECT id, timestamp, json_extract(metadata, '$.type'), json_extract(metadata, '$.alert_id'),
           json_extract(metadata, '$.attempts'), json_extract(metadata, '$.occurred_at')
         FROM entries WHERE seq >= ? AND event_type = 'ALERT_SENT' ORDER BY seq DESC LIMIT 50`,
      )
      .raw()
      .all(from) as [string, string, unknown, unknown, unknown, unknown][];
    return {
      recent_alerts: alerts.map(([id, timestamp, type, alertId, attempts, occurredAt]) =>
        alertSentView(id, timestamp, { type, alert_id: alertId, attempts, occurred_at: occurredAt }),
      ),
    };
  }

  async breakers(): Promise<BreakersView> {
    const { ledger } = this.source;
    const from = Math.max(1, ledger.head().seq - RECENT_WINDOW + 1);
    const rows = ledger
      .statement(
        `SELECT id, timestamp, json_extract(metadata, '$.model_id'), json_extract(metadata, '$.outcome'),
           json_extract(metadata, '$.error_code'), session_id
         FROM entries WHERE seq >= ? AND event_type = 'EXCHANGE' AND decision <> 'SUCCESS' ORDER BY seq DESC LIMIT 50`,
      )
      .raw()
      .all(from) as [string, string, string | null, string | null, string | null, string | null][];
    return {
      breakers: this.source.breakers(),
      recent_failures: rows.map(([id, timestamp, model, outcome, code, session]) => ({
        id,
        timestamp,
        model_id: model,
        outcome,
        error_code: code,
        session_id: session,
      })),
    };
  }

  async plots(): Promise<PlotsView> {
    const { ledger } = this.source;
    const head = ledger.head().seq;
    const from = Math.max(1, head - RECENT_WINDOW + 1);
    const spend = ledger
      .statement(
        `SELECT hour, total(cost) FROM (SELECT substr(timestamp, 1, 13) || ':00:00Z' AS hour,
           CASE WHEN event_type = 'EXCHANGE' THEN json_extract(metadata, '$.budget.cost')
             ELSE json_extract(metadata, '$.cost') END AS cost,
           CASE WHEN event_type = 'EXCHANGE' THEN json_extract(metadata, '$.budget.decision') END AS folded
         FROM entries WHERE seq >= ? AND event_type IN ('BUDGET_SETTLED', 'EXCHANGE'))
         WHERE folded IS NULL OR folded LIKE 'SETTLED%' GROUP BY hour ORDER BY hour`,
      )
      .raw()
      .all(from) as [string, number][];
    const latencies = ledger
      .statement(
        "SELECT json_extract(metadata, '$.latency_ms') FROM entries WHERE seq >= ? AND event_type = 'EXCHANGE'",
      )
      .pluck()
      .all(from) as unknown[];
    const routed = ledger
      .statement(
        `SELECT json_extract(metadata, '$.model_alias'), json_extract(metadata, '$.served_by'),
           json_extract(metadata, '$.attempts[0].deployment')
         FROM entries WHERE seq >= ? AND event_type = 'EXCHANGE' AND json_extract(metadata, '$.model_alias') IS NOT NULL`,
      )
      .raw()
      .all(from) as RoutedRow[];
    return {
      spend: spend.map(([hour, cost]) => ({ hour, cost })),
      latency: latencyBuckets(latencies),
      fallbacks: fallbackRates(routed),
      window_entries: head - from + 1,
    };
  }
}
