import { existsSync } from 'node:fs';
import { READ_LIMITS, readTextBounded } from '#kernel/bounded-read.js';
import {
  contentRefs,
  listSessions,
  newestRootCheckpoint,
  parseStoredMetadata,
  sessionTurns,
  verifyLedger,
  type Anchor,
  type Ledger,
  type SessionPage,
  type SessionQuery,
  type TurnPage,
} from '#kernel/ledger/index.js';
import { type InstalledPackage, installedPackages } from '#kernel/registry/receipt.js';
import { rootPaths } from '#kernel/root/layout.js';
import { Budgeter, budgetDbPathForRoot, loadBudgetConfigForRoot } from '#budgeter/index.js';
import type { BudgetStatus } from '#budgeter/index.js';
import type { BreakerSnapshot } from '#router/breaker.js';
import { spoolDirs, spoolEntries } from '#router/spool.js';

/**
 * What the console shows, as JSON (snake_case, as on the wire): read from a root's ledger, budget store,
 * receipts and registries. The gateway answers /console/api/* from it; `cplane report --html` embeds it. Every
 * list is bounded; nothing here writes.
 */
export interface RootView {
  root: string;
  packages: InstalledPackage[];
  /** The last `cplane gate-check` as it recorded itself; null when none ran on this root. */
  gate_check: unknown;
  ledger: {
    head: Anchor;
    /** The newest signed checkpoint of the root, and whether the chain still holds it. */
    checkpoint: { seq: number; hash: string; time: string; matches: boolean | null } | null;
    /** The last verify of this process (run on request): null when none ran since the head moved. */
    verify: VerifySummary | null;
  };
  spooled_exchanges: number;
  quarantined_exchanges: number;
}

export interface VerifySummary {
  ok: boolean;
  entries: number;
  head_seq: number;
  first_bad: { seq: number; id: string | null; problem: string; message: string } | null;
  redacted_blocks: number;
  content_problems: number;
  checked_at: string;
}

export interface ExchangeView {
  id: string;
  seq: number;
  timestamp: string;
  decision: string;
  reason: string;
  metadata: Record<string, unknown>;
  /** The prompt block by block (a message, a tool definition, a system block), oldest first. */
  prompt: string[];
  response: string;
  redacted_by: string[];
  /** Whether the text was cut at MAX_EXCHANGE_CHARS. */
  truncated: boolean;
}

export interface BreakersView {
  breakers: BreakerSnapshot[];
  /** Failed EXCHANGEs among the newest RECENT_WINDOW entries, newest first. */
  recent_failures: {
    id: string;
    timestamp: string;
    model_id: string | null;
    outcome: string | null;
    error_code: string | null;
    session_id: string | null;
  }[];
}

export interface PlotsView {
  /** Settled cost per hour (UTC) over the newest RECENT_WINDOW entries. */
  spend: { hour: string; cost: number }[];
  /** EXCHANGE latencies over the same window, in buckets (upper bounds in ms; the last is open). */
  latency: { le_ms: number | null; count: number }[];
  window_entries: number;
}

/** Entries of the chain's newest part the recent views read: a bound that keeps them fast on any ledger. */
export const RECENT_WINDOW = 20_000;
/** A prompt or response shown in one view is cut past this many characters (it stays whole in the ledger). */
export const MAX_EXCHANGE_CHARS = 4 * 1024 * 1024;
const LATENCY_BUCKETS = [100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000];

export interface ConsoleSource {
  root: string;
  ledger: Ledger;
  /** The breakers as the router holds them now (a gateway), or as last saved (a report). */
  breakers: () => BreakerSnapshot[];
  clock?: () => number;
}

export class ConsoleData {
  private verified: VerifySummary | null = null;

  constructor(private readonly source: ConsoleSource) {}

  rootView(options: { verify?: boolean } = {}): RootView {
    const { root, ledger } = this.source;
    const head = ledger.head();
    if (options.verify === true) this.verify();
    const verify = this.verified !== null && this.verified.head_seq === head.seq ? this.verified : null;
    const checkpoint = newestRootCheckpoint(root);
    let matches: boolean | null = null;
    if (checkpoint !== null) {
      // The hash alone: the entry's text is not needed to know whether the chain holds the checkpoint.
      const hash = ledger.statement('SELECT entry_hash FROM entries WHERE seq = ?').pluck().get(checkpoint.seq) as
        | string
        | undefined;
      matches = hash === undefined ? null : hash === checkpoint.hash;
    }
    const spool = spoolDirs(root);
    return {
      root,
      packages: installedPackages(root),
      gate_check: lastGateCheck(root),
      ledger: {
        head,
        checkpoint:
          checkpoint === null ? null : { seq: checkpoint.seq, hash: checkpoint.hash, time: checkpoint.time, matches },
        verify,
      },
      spooled_exchanges: spoolEntries(spool.dir).length,
      quarantined_exchanges: spoolEntries(spool.quarantineDir).length,
    };
  }

  /** Runs verify over the whole chain and keeps the result for the root view (until the head moves). */
  verify(): VerifySummary {
    const result = verifyLedger(this.source.ledger);
    this.verified = {
      ok: result.ok,
      entries: result.entries,
      head_seq: this.source.ledger.head().seq,
      first_bad: result.first_bad ?? null,
      redacted_blocks: result.content?.redacted_blocks ?? 0,
      content_problems: result.content?.problem_count ?? 0,
      checked_at: new Date(this.now()).toISOString(),
    };
    return this.verified;
  }

  sessions(query: SessionQuery): SessionPage {
    return listSessions(this.source.ledger, query);
  }

  session(sessionId: string, options: { after?: number; limit?: number }): TurnPage {
    return sessionTurns(this.source.ledger, sessionId, options);
  }

  exchange(id: string): ExchangeView | null {
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
    let prompt: string[];
    let response: string;
    const redacted: string[] = [];
    if (refs !== undefined) {
      const pieces = ledger.content.readPieces(refs.prompt);
      const answer = ledger.content.read(refs.response);
      prompt = pieces.pieces;
      response = answer.text;
      for (const r of [...pieces.redacted_by, ...answer.redacted_by]) if (!redacted.includes(r)) redacted.push(r);
    } else {
      prompt = typeof stored.prompt === 'string' ? [stored.prompt] : [];
      response = typeof stored.response === 'string' ? stored.response : '';
    }
    const { prompt: _p, response: _r, content: _c, ...metadata } = stored;
    const cut = cutPieces(prompt, MAX_EXCHANGE_CHARS);
    const cutResponse = response.length > MAX_EXCHANGE_CHARS ? wellFormedCut(response, MAX_EXCHANGE_CHARS) : response;
    return {
      id,
      seq,
      timestamp,
      decision,
      reason,
      metadata,
      prompt: cut.pieces,
      response: cutResponse,
      redacted_by: redacted,
      truncated: cut.truncated || cutResponse !== response,
    };
  }

  budgets(): BudgetStatus {
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

  breakers(): BreakersView {
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

  plots(): PlotsView {
    const { ledger } = this.source;
    const head = ledger.head().seq;
    const from = Math.max(1, head - RECENT_WINDOW + 1);
    const spend = ledger
      .statement(
        `SELECT substr(timestamp, 1, 13) || ':00:00Z' AS hour, total(json_extract(metadata, '$.cost'))
         FROM entries WHERE seq >= ? AND event_type = 'BUDGET_SETTLED' GROUP BY hour ORDER BY hour`,
      )
      .raw()
      .all(from) as [string, number][];
    const latencies = ledger
      .statement(
        "SELECT json_extract(metadata, '$.latency_ms') FROM entries WHERE seq >= ? AND event_type = 'EXCHANGE'",
      )
      .pluck()
      .all(from) as unknown[];
    const counts = new Array<number>(LATENCY_BUCKETS.length + 1).fill(0);
    for (const value of latencies) {
      if (typeof value !== 'number') continue;
      const i = LATENCY_BUCKETS.findIndex((le) => value <= le);
      const at = i === -1 ? LATENCY_BUCKETS.length : i;
      counts[at] = (counts[at] ?? 0) + 1;
    }
    return {
      spend: spend.map(([hour, cost]) => ({ hour, cost })),
      latency: counts.map((count, i) => ({ le_ms: LATENCY_BUCKETS[i] ?? null, count })),
      window_entries: head - from + 1,
    };
  }

  private now(): number {
    return (this.source.clock ?? Date.now)();
  }
}

/** The last gate-check recorded on the root; a file that is not JSON is shown as that, not thrown. */
export function lastGateCheck(root: string): unknown {
  const path = rootPaths(root).lastGateCheck;
  if (!existsSync(path)) return null;
  try {
    return JSON.parse(readTextBounded(path, { maxBytes: READ_LIMITS.state, what: 'the last gate-check' }));
  } catch (error) {
    return { unreadable: error instanceof Error ? error.message : String(error) };
  }
}

/** Cuts a string to at most `max` UTF-16 units without splitting a surrogate pair. */
function wellFormedCut(text: string, max: number): string {
  let end = max;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  return text.slice(0, end);
}

function cutPieces(pieces: string[], max: number): { pieces: string[]; truncated: boolean } {
  let left = max;
  const out: string[] = [];
  for (const piece of pieces) {
    if (piece.length <= left) {
      out.push(piece);
      left -= piece.length;
      continue;
    }
    out.push(wellFormedCut(piece, left));
    return { pieces: out, truncated: true };
  }
  return { pieces: out, truncated: false };
}
