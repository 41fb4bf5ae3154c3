import { existsSync } from 'node:fs';
import { READ_LIMITS, readTextBounded } from '#kernel/bounded-read.js';
import type { Anchor, Checkpoint, SessionPage, SessionQuery, SessionTurn, TurnPage } from '#kernel/ledger/index.js';
import { exchangeText } from '#kernel/ledger/sessions.js';
import type { ReadPieces, ReadSide } from '#kernel/ledger/content.js';
import { type InstalledPackage, installedPackages } from '#kernel/registry/receipt.js';
import { rootPaths } from '#kernel/root/layout.js';
import type { InclusionProofFile } from '#kernel/ledger/merkle/ledger-proofs.js';
import type { BudgetStatus } from '#budgeter/index.js';
import type { BreakerSnapshot } from '#router/breaker.js';
import { spoolDirs, spoolEntries } from '#router/spool.js';
import { conversationOf, conversationOfPieces, type Item } from './conversation.js';

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
  /** The prompt read as a conversation (conversation.ts); null when it is not JSON of a known shape, or was cut. */
  conversation: Item[] | null;
  response: string;
  redacted_by: string[];
  /** Whether the text was cut at MAX_EXCHANGE_CHARS. */
  truncated: boolean;
}

/** A session's turn as the console shows it: its new pieces also read as a conversation (null: show the pieces). */
export type ConsoleTurn = SessionTurn & { conversation: Item[] | null };
export type ConsoleTurnPage = Omit<TurnPage, 'turns'> & { turns: ConsoleTurn[] };

/** A page of turns with each turn's new pieces read as conversation items. */
export function consoleTurnPage(page: TurnPage): ConsoleTurnPage {
  return {
    ...page,
    turns: page.turns.map((t) => ({ ...t, conversation: conversationOfPieces(t.prompt_new, t.continues) })),
  };
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

export interface AlertsView {
  /** Alerts delivered to the webhook (ALERT_SENT) among the newest RECENT_WINDOW entries, newest first. */
  recent_alerts: AlertSentView[];
}

/** An ALERT_SENT entry as the alerts view lists it: fields of the wrong type read as absent. */
export function alertSentView(id: string, timestamp: string, m: Record<string, unknown>): AlertSentView {
  const text = (v: unknown): string | null => (typeof v === 'string' ? v : null);
  return {
    id,
    timestamp,
    type: text(m.type),
    alert_id: text(m.alert_id),
    attempts: typeof m.attempts === 'number' && Number.isFinite(m.attempts) ? m.attempts : null,
    occurred_at: text(m.occurred_at),
  };
}

export interface AlertSentView {
  id: string;
  timestamp: string;
  type: string | null;
  alert_id: string | null;
  attempts: number | null;
  occurred_at: string | null;
}

export interface PlotsView {
  /** Settled cost per hour (UTC) over the newest RECENT_WINDOW entries. */
  spend: { hour: string; cost: number }[];
  /** EXCHANGE latencies over the same window, in buckets (upper bounds in ms; the last is open). */
  latency: { le_ms: number | null; count: number }[];
  /**
   * Routed calls per alias over the same window, and how many were answered by a deployment other than the one
   * their first attempt went to (a fallback), alias order.
   */
  fallbacks: { alias: string; calls: number; fallbacks: number; rate: number }[];
  window_entries: number;
}

/** Entries of the chain's newest part the recent views read: a bound that keeps them fast on any ledger. */
export const RECENT_WINDOW = 20_000;
/** A prompt or response shown in one view is cut past this many characters (it stays whole in the ledger). */
export const MAX_EXCHANGE_CHARS = 4 * 1024 * 1024;
const LATENCY_BUCKETS = [100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000];

/**
 * The console's reads, one contract over every store (the SQLite file: sqlite-data.ts; PostgreSQL: pg-data.ts):
 * the same history gives the same views, byte for byte, on either (test/console/data-contract.test.ts).
 */
export interface ConsoleData {
  rootView(options?: { verify?: boolean }): Promise<RootView>;
  /** Runs verify over the whole chain and keeps the result for the root view (until the head moves). */
  verify(): Promise<VerifySummary>;
  sessions(query: SessionQuery): Promise<SessionPage>;
  session(sessionId: string, options: { after?: number; limit?: number }): Promise<ConsoleTurnPage>;
  exchange(id: string): Promise<ExchangeView | null>;
  budgets(): Promise<BudgetStatus>;
  breakers(): Promise<BreakersView>;
  alerts(): Promise<AlertsView>;
  plots(): Promise<PlotsView>;
  /**
   * An inclusion proof of entry `id` in a fresh checkpoint of the head, as `cplane ledger prove --entry ID` writes
   * it; null when there is no such entry. Absent on a store the proof code has no path for (PostgreSQL).
   */
  proof?(id: string): Promise<InclusionProofFile | null>;
}

/** The root's own files a root view shows beside the chain's head (the same on every store). */
export function rootViewOf(
  root: string,
  head: Anchor,
  checkpoint: Checkpoint | null,
  matches: boolean | null,
  verify: VerifySummary | null,
): RootView {
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
    spooled_exchanges: spoolEntries(spool.dir, { claimed: true }).length,
    quarantined_exchanges: spoolEntries(spool.quarantineDir).length,
  };
}

/** An EXCHANGE row and its content as read (pieces and response, with their redactions) as the exchange view. */
export function exchangeViewOf(
  row: { id: string; seq: number; timestamp: string; decision: string; reason: string },
  stored: Record<string, unknown>,
  content: { prompt: ReadPieces; response: ReadSide } | undefined,
): ExchangeView {
  const { pieces: prompt, response, redacted_by: redacted } = exchangeText(stored, content);
  const { prompt: _p, response: _r, content: _c, ...metadata } = stored;
  const cut = cutPieces(prompt, MAX_EXCHANGE_CHARS);
  const cutResponse = response.length > MAX_EXCHANGE_CHARS ? wellFormedCut(response, MAX_EXCHANGE_CHARS) : response;
  return {
    id: row.id,
    seq: row.seq,
    timestamp: row.timestamp,
    decision: row.decision,
    reason: row.reason,
    metadata,
    prompt: cut.pieces,
    conversation: cut.truncated ? null : conversationOf(cut.pieces.join('')),
    response: cutResponse,
    redacted_by: redacted,
    truncated: cut.truncated || cutResponse !== response,
  };
}

/** EXCHANGE latencies (json_extract values: only numbers count) in the plots' buckets. */
export function latencyBuckets(latencies: Iterable<unknown>): PlotsView['latency'] {
  const counts = new Array<number>(LATENCY_BUCKETS.length + 1).fill(0);
  for (const value of latencies) {
    if (typeof value !== 'number') continue;
    const i = LATENCY_BUCKETS.findIndex((le) => value <= le);
    const at = i === -1 ? LATENCY_BUCKETS.length : i;
    counts[at] = (counts[at] ?? 0) + 1;
  }
  return counts.map((count, i) => ({ le_ms: LATENCY_BUCKETS[i] ?? null, count }));
}

/** What one routed EXCHANGE says of its routing: the alias asked for, who served, the first attempt's deployment. */
export type RoutedRow = [alias: unknown, servedBy: unknown, firstDeployment: unknown];

/** Fallback counts per alias from routed EXCHANGEs (rows without an alias are not routed and are left out). */
export function fallbackRates(rows: Iterable<RoutedRow>): PlotsView['fallbacks'] {
  const byAlias = new Map<string, { calls: number; fallbacks: number }>();
  for (const [alias, servedBy, first] of rows) {
    if (typeof alias !== 'string') continue;
    let counts = byAlias.get(alias);
    if (counts === undefined) byAlias.set(alias, (counts = { calls: 0, fallbacks: 0 }));
    counts.calls += 1;
    if (typeof servedBy === 'string' && typeof first === 'string' && !servedBy.startsWith(`${first}/`))
      counts.fallbacks += 1;
  }
  return [...byAlias.keys()]
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    .map((alias) => {
      const { calls, fallbacks } = byAlias.get(alias) as { calls: number; fallbacks: number };
      return { alias, calls, fallbacks, rate: fallbacks / calls };
    });
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
