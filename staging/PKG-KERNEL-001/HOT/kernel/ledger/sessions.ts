import { contentRefs, EMPTY_LIST, type ReadPieces, type ReadSide } from './content.js';
import type { Ledger } from './ledger.js';
import { parseStoredMetadata } from './ledger.js';

/**
 * Sessions as a reader lists them (the console, `cplane report`): newest activity first, one page at a time,
 * from the ledger's own indexes. No summary table is kept: a page walks the chain down from its cursor and
 * takes each session the first time it meets one of its EXCHANGEs, so a page costs about the rows of its own
 * sessions' latest turns, however long the chain.
 */
export interface SessionQuery {
  agent?: string;
  /** ISO-8601 bounds on the EXCHANGEs that count as activity. */
  since?: string;
  until?: string;
  /** The cursor: the `last_seq` of the previous page's last session. */
  before?: number;
  limit?: number;
}

export interface SessionSummary {
  session_id: string;
  agents: string[];
  requests: number;
  errors: number;
  input_tokens: number;
  /** Of input_tokens: read from and written to the provider's prompt cache. */
  cache_read_tokens: number;
  cache_write_tokens: number;
  output_tokens: number;
  /** cache_read_tokens / input_tokens; null when no input was counted. */
  cache_hit_share: number | null;
  /** Settled cost (BUDGET_SETTLED) in the budget's currency; null when nothing was settled with a price. */
  cost: number | null;
  first_activity: string;
  last_activity: string;
  /** The chain position of the session's latest EXCHANGE in range: the next page's cursor. */
  last_seq: number;
}

export interface SessionPage {
  sessions: SessionSummary[];
  /** Pass as `before` for the next (older) page; null when there is none. */
  next_before: number | null;
}

export const MAX_SESSION_PAGE = 200;

/**
 * The text (new prompt pieces and responses) a page of turns reads before it ends early, its next page starting
 * after its last turn: a client's turns may each be as large as the gateway's body limit, and a full page of them
 * would be gigabytes held at once, past what one answer (one string) can carry. A page holds at least one turn.
 */
export const MAX_TURN_PAGE_CHARS = 8 * 1024 * 1024;

/** The text a turn carries: its new prompt pieces and its response, in UTF-16 units. */
export function turnChars(turn: SessionTurn): number {
  let chars = turn.response.length;
  for (const piece of turn.prompt_new) chars += piece.length;
  return chars;
}

/** Whether a page already holding `turns` ends before reading another one. */
export function turnPageFull(turns: readonly SessionTurn[]): boolean {
  let chars = 0;
  for (const turn of turns) chars += turnChars(turn);
  return turns.length > 0 && chars >= MAX_TURN_PAGE_CHARS;
}

const SUMMARY_SQL = `SELECT
  count(*) FILTER (WHERE event_type = 'EXCHANGE'),
  count(*) FILTER (WHERE event_type = 'EXCHANGE' AND decision <> 'SUCCESS'),
  total(CASE WHEN event_type = 'EXCHANGE' THEN json_extract(metadata, '$.input_tokens') END),
  total(CASE WHEN event_type = 'EXCHANGE' THEN json_extract(metadata, '$.cache_read_tokens') END),
  total(CASE WHEN event_type = 'EXCHANGE' THEN json_extract(metadata, '$.cache_write_tokens') END),
  total(CASE WHEN event_type = 'EXCHANGE' THEN json_extract(metadata, '$.output_tokens') END),
  sum(CASE WHEN event_type = 'BUDGET_SETTLED' THEN json_extract(metadata, '$.cost')
    WHEN event_type = 'EXCHANGE' THEN json_extract(metadata, '$.budget.cost') END),
  min(timestamp) FILTER (WHERE event_type = 'EXCHANGE'),
  max(timestamp) FILTER (WHERE event_type = 'EXCHANGE'),
  json_group_array(DISTINCT agent_id) FILTER (WHERE event_type = 'EXCHANGE' AND agent_id IS NOT NULL)
FROM entries WHERE session_id = ?`;

export function clampLimit(limit: number | undefined): number {
  if (limit === undefined || !Number.isInteger(limit) || limit < 1) return 50;
  return Math.min(limit, MAX_SESSION_PAGE);
}

/** One page of sessions, newest activity first. */
export function listSessions(ledger: Ledger, query: SessionQuery = {}): SessionPage {
  const limit = clampLimit(query.limit);
  return ledger.snapshot(() => {
    const head = ledger.head().seq;
    const timed = query.since !== undefined || query.until !== undefined;
    const range = timed ? ledger.seqRange(query.since, query.until) : { fromSeq: 1, toSeq: head };
    const top = range?.toSeq ?? head;
    const bottom = range?.fromSeq ?? 1;
    const cursor = Math.min(query.before === undefined ? top + 1 : query.before, top + 1);
    // A ledger whose times are out of chain order has no seq range: its rows are filtered by timestamp instead.
    const timeFilter = range === null ? ' AND timestamp >= ? AND timestamp <= ?' : '';
    const timeParams = range === null ? [query.since ?? '', query.until ?? '\uffff'] : [];
    const agentFilter = query.agent === undefined ? '' : ' AND agent_id = ?';
    const agentParams = query.agent === undefined ? [] : [query.agent];
    const scan = ledger
      .statement(
        `SELECT seq, session_id FROM entries WHERE seq < ? AND seq >= ? AND event_type = 'EXCHANGE' AND session_id IS NOT NULL${agentFilter}${timeFilter} ORDER BY seq DESC`,
      )
      .raw();
    // Whether a session has activity in range above the cursor: then an earlier page listed it.
    const above = ledger
      .statement(
        `SELECT 1 FROM entries WHERE session_id = ? AND seq >= ? AND seq <= ? AND event_type = 'EXCHANGE'${agentFilter}${timeFilter} LIMIT 1`,
      )
      .pluck();
    const seen = new Set<string>();
    const found: [string, number][] = [];
    let more = false;
    for (const [seq, session] of scan.iterate(cursor, bottom, ...agentParams, ...timeParams) as IterableIterator<
      [number, string]
    >) {
      if (seen.has(session)) continue;
      seen.add(session);
      if (above.get(session, cursor, top, ...agentParams, ...timeParams) !== undefined) continue;
      if (found.length === limit) {
        more = true;
        break;
      }
      found.push([session, seq]);
    }
    const summary = ledger.statement(SUMMARY_SQL).raw();
    const sessions = found.map(([session, seq]) => summarise(session, seq, summary.get(session) as SummaryRow));
    const last = found[found.length - 1];
    return { sessions, next_before: more && last !== undefined ? last[1] : null };
  });
}

/** A session's aggregates in SUMMARY_SQL's column order (PostgreSQL computes them in node, see pg-sessions.ts). */
export type SummaryRow = [number, number, number, number, number, number, number | null, string, string, string];

export function summarise(session: string, lastSeq: number, row: SummaryRow): SessionSummary {
  const [requests, errors, input, read, write, output, cost, first, last, agents] = row;
  return {
    session_id: session,
    agents: (JSON.parse(agents) as unknown[]).filter((a): a is string => typeof a === 'string').slice(0, 20),
    requests,
    errors,
    input_tokens: input,
    cache_read_tokens: read,
    cache_write_tokens: write,
    output_tokens: output,
    cache_hit_share: input > 0 ? read / input : null,
    cost: cost === null ? null : Number(cost),
    first_activity: first,
    last_activity: last,
    last_seq: lastSeq,
  };
}

/** One EXCHANGE of a session as a reader sees it: its record, and the prompt pieces that are new this turn. */
export interface SessionTurn {
  seq: number;
  id: string;
  timestamp: string;
  decision: string;
  reason: string;
  metadata: Record<string, unknown>;
  /**
   * The prompt's blocks after the previous turn's prompt less its last block (the closing `]}` an agent's
   * request ends with); all of them for a first turn or a changed prefix.
   */
  prompt_new: string[];
  /** Whether prompt_new continues the previous turn's prompt less its last block (false: it is the whole prompt). */
  continues: boolean;
  response: string;
  redacted_by: string[];
  /** Settled cost of the call (its BUDGET_SETTLED), null when unknown. */
  cost: number | null;
}

export interface TurnPage {
  turns: SessionTurn[];
  /** Pass as `after` for the next page; null when this is the last. */
  next_after: number | null;
}

/** A session's EXCHANGEs oldest first from `after` (a seq), each with its new prompt pieces and response. */
export function sessionTurns(
  ledger: Ledger,
  sessionId: string,
  options: { after?: number; limit?: number } = {},
): TurnPage {
  const limit = clampLimit(options.limit);
  return ledger.snapshot(() => {
    const rows = ledger
      .statement(
        "SELECT seq, id, timestamp, decision, reason, metadata FROM entries WHERE session_id = ? AND event_type = 'EXCHANGE' AND seq > ? ORDER BY seq LIMIT ?",
      )
      .raw()
      .all(sessionId, options.after ?? 0, limit + 1) as [number, string, string, string, string, string][];
    const page = rows.slice(0, limit);
    const previous = ledger
      .statement(
        "SELECT metadata FROM entries WHERE session_id = ? AND event_type = 'EXCHANGE' AND seq < ? ORDER BY seq DESC LIMIT 1",
      )
      .pluck();
    // The settlement rides in the EXCHANGE (metadata.budget); in roots written before, the router appended it in
    // the EXCHANGE's own batch, right after it.
    const settled = ledger
      .statement(
        "SELECT json_extract(metadata, '$.cost') FROM entries WHERE seq = ? AND event_type = 'BUDGET_SETTLED' AND session_id = ?",
      )
      .pluck();
    let since: string | undefined;
    const first = page[0];
    if (first !== undefined) {
      const before = previous.get(sessionId, first[0]) as string | undefined;
      since = before === undefined ? undefined : contentRefs(JSON.parse(before) as Record<string, unknown>)?.prompt;
    }
    const turns: SessionTurn[] = [];
    let more = rows.length > limit;
    for (const [seq, id, timestamp, decision, reason, metadataText] of page) {
      if (turnPageFull(turns)) {
        more = true;
        break;
      }
      const metadata = parseStoredMetadata({ id, metadata: metadataText });
      const refs = contentRefs(metadata);
      let read: TurnContent | undefined;
      if (refs !== undefined) {
        // The previous prompt without its closing piece (`]}`) is what this turn's prompt continues.
        const stop = since === undefined ? undefined : ledger.content.parentOf(since);
        read = {
          prompt: ledger.content.readPieces(refs.prompt, stop ?? EMPTY_LIST),
          response: ledger.content.read(refs.response),
          stopped: stop !== undefined,
        };
      }
      since = refs?.prompt;
      const cost = foldedCost(metadata) ?? settled.get(seq + 1, sessionId);
      turns.push(turnOf({ seq, id, timestamp, decision, reason }, metadata, read, cost));
    }
    const last = turns[turns.length - 1];
    return { turns, next_after: more && last !== undefined ? last.seq : null };
  });
}

/** A turn's content as read: its new prompt pieces (walked down to `stop`), its response, and whether a stop was given. */
/**
 * An exchange's text: as read from the content store (with the REDACTED entries met on the way, each once), or
 * inline in metadata written before content addressing (undefined `read`).
 */
export function exchangeText(
  metadata: Record<string, unknown>,
  read: { prompt: ReadPieces; response: ReadSide } | undefined,
): { pieces: string[]; response: string; redacted_by: string[] } {
  if (read === undefined)
    return {
      pieces: typeof metadata.prompt === 'string' ? [metadata.prompt] : [],
      response: typeof metadata.response === 'string' ? metadata.response : '',
      redacted_by: [],
    };
  const redactedBy: string[] = [];
  for (const r of [...read.prompt.redacted_by, ...read.response.redacted_by])
    if (!redactedBy.includes(r)) redactedBy.push(r);
  return { pieces: read.prompt.pieces, response: read.response.text, redacted_by: redactedBy };
}

export interface TurnContent {
  prompt: ReadPieces;
  response: ReadSide;
  /** Whether the walk was asked to stop at the previous turn's prompt (without one, nothing is continued). */
  stopped: boolean;
}

/**
 * An EXCHANGE row as a session's turn, once its metadata is parsed and its content read (undefined: metadata from
 * before content addressing, with the prompt and response inline). The reads are the store's own (sync on SQLite,
 * async on PostgreSQL); this is the part they share, so both build the same turn from the same history.
 */
/**
 * The settled cost an EXCHANGE carries folded (metadata.budget, budgeter/records.ts foldBudget); undefined when it
 * carries no settlement (look for a standalone BUDGET_SETTLED), null when settled at no known price.
 */
export function foldedCost(metadata: Record<string, unknown>): unknown {
  const folded = metadata.budget;
  if (typeof folded !== 'object' || folded === null) return undefined;
  const { decision, cost } = folded as { decision?: unknown; cost?: unknown };
  if (typeof decision !== 'string' || !decision.startsWith('SETTLED')) return undefined;
  return cost ?? null;
}

export function turnOf(
  row: { seq: number; id: string; timestamp: string; decision: string; reason: string },
  metadata: Record<string, unknown>,
  read: TurnContent | undefined,
  cost: unknown,
): SessionTurn {
  const { prompt: _p, response: _r, content: _c, ...rest } = metadata;
  const text = exchangeText(metadata, read);
  return {
    ...row,
    metadata: rest,
    prompt_new: text.pieces,
    continues: read?.prompt.continues === true && read.stopped,
    response: text.response,
    redacted_by: text.redacted_by,
    cost: typeof cost === 'number' ? cost : null,
  };
}
