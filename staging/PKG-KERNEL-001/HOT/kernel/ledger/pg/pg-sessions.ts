import { contentRefs, EMPTY_LIST } from '../content.js';
import { parseStoredMetadata } from '../ledger.js';
import {
  clampLimit,
  type SessionPage,
  type SessionQuery,
  type SessionTurn,
  type SummaryRow,
  summarise,
  type TurnContent,
  type TurnPage,
  foldedCost,
  turnOf,
  turnPageFull,
} from '../sessions.js';
import { pgReadPieces, pgReadSide } from './pg-content-read.js';
import { type PgLedger, storeError } from './pg-ledger.js';
import { jsonExtract, SqliteSum } from './sqlite-aggregates.js';

/**
 * listSessions and sessionTurns on PostgreSQL: the same pages, order, cursors and numbers as on the SQLite file.
 * Every query is bounded by the head read first, so a page is of one prefix of the chain however many hosts append
 * meanwhile (the chain is append-only). A time range filters on the timestamp, byte-wise (COLLATE "C"): a migrated
 * chain's times need not be in chain order. Metadata is parsed in node (PostgreSQL refuses to read a row holding
 * `\u0000` as json).
 */

/** Candidate rows the session scan reads at a time (newest first) until a page is full. */
const SCAN_CHUNK = 1000;

/** The token counts a session sums, in SUMMARY_SQL's order. */
const TOKEN_FIELDS = ['input_tokens', 'cache_read_tokens', 'cache_write_tokens', 'output_tokens'] as const;

const utf8 = (text: string): Buffer => Buffer.from(text, 'utf8');
const utf8Text = (bytes: unknown): string | null => (Buffer.isBuffer(bytes) ? bytes.toString('utf8') : null);

/** The filters of a query on EXCHANGEs, numbered from `$first`. */
function activityFilter(query: SessionQuery, first: number): { sql: string; values: unknown[] } {
  const clauses: string[] = [];
  const values: unknown[] = [];
  const param = (value: unknown): string => {
    values.push(value);
    return `$${first + values.length - 1}`;
  };
  if (query.agent !== undefined) clauses.push(`agent_id = ${param(utf8(query.agent))}`);
  if (query.since !== undefined) clauses.push(`timestamp COLLATE "C" >= ${param(query.since)}`);
  if (query.until !== undefined) clauses.push(`timestamp COLLATE "C" <= ${param(query.until)}`);
  return { sql: clauses.map((c) => ` AND ${c}`).join(''), values };
}

/** One page of sessions, newest activity first (listSessions). */
export async function pgListSessions(store: PgLedger, query: SessionQuery = {}): Promise<SessionPage> {
  const limit = clampLimit(query.limit);
  try {
    const top = (await store.headAnchor()).seq;
    const cursor = Math.min(query.before === undefined ? top + 1 : query.before, top + 1);
    // The scan and the check for earlier activity both take the filters after their three parameters.
    const filter = activityFilter(query, 4);
    const seen = new Set<string>();
    const found: [string, number][] = [];
    let more = false;
    let below = cursor;
    scan: while (below > 1) {
      const chunk = (
        await store.pool.query(
          `SELECT seq, session_id FROM cplane_entries WHERE seq < $1 AND seq >= $2 AND event_type = 'EXCHANGE'
           AND session_id IS NOT NULL${filter.sql} ORDER BY seq DESC LIMIT $3`,
          [below, 1, SCAN_CHUNK, ...filter.values],
        )
      ).rows.map((r: { seq: string; session_id: Buffer }) => [Number(r.seq), r.session_id.toString('utf8')] as const);
      const fresh = [...new Set(chunk.map(([, session]) => session).filter((s) => !seen.has(s)))];
      // Sessions with activity in range above the cursor: an earlier page listed them.
      const listed = new Set<string>();
      if (fresh.length > 0 && cursor <= top) {
        const r = await store.pool.query(
          `SELECT DISTINCT session_id FROM cplane_entries WHERE session_id = ANY($1::bytea[]) AND seq >= $2
           AND seq <= $3 AND event_type = 'EXCHANGE'${filter.sql}`,
          [fresh.map(utf8), cursor, top, ...filter.values],
        );
        for (const row of r.rows as { session_id: Buffer }[]) listed.add(row.session_id.toString('utf8'));
      }
      for (const [seq, session] of chunk) {
        if (seen.has(session)) continue;
        seen.add(session);
        if (listed.has(session)) continue;
        if (found.length === limit) {
          more = true;
          break scan;
        }
        found.push([session, seq]);
      }
      if (chunk.length < SCAN_CHUNK) break;
      below = (chunk[chunk.length - 1] as readonly [number, string])[0];
    }
    const rows = await summaryRows(
      store,
      found.map(([session]) => session),
      top,
    );
    const sessions = found.map(([session, seq]) => summarise(session, seq, rows.get(session) as SummaryRow));
    const last = found[found.length - 1];
    return { sessions, next_before: more && last !== undefined ? last[1] : null };
  } catch (error) {
    throw storeError(error);
  }
}

/** SUMMARY_SQL of sessions.ts for each session, its rows read in chain order up to `head`. */
async function summaryRows(store: PgLedger, sessions: string[], head: number): Promise<Map<string, SummaryRow>> {
  const out = new Map<string, SummaryRow>();
  if (sessions.length === 0) return out;
  const r = await store.pool.query(
    `SELECT id, session_id, event_type, decision, metadata, timestamp, agent_id FROM cplane_entries
     WHERE session_id = ANY($1::bytea[]) AND seq <= $2 AND event_type IN ('EXCHANGE', 'BUDGET_SETTLED') ORDER BY seq`,
    [sessions.map(utf8), head],
  );
  interface Acc {
    requests: number;
    errors: number;
    sums: [SqliteSum, SqliteSum, SqliteSum, SqliteSum];
    cost: SqliteSum;
    first: string | null;
    last: string | null;
    agents: string[];
  }
  const accs = new Map<string, Acc>();
  for (const row of r.rows as {
    id: string;
    session_id: Buffer;
    event_type: string;
    decision: Buffer;
    metadata: string;
    timestamp: string;
    agent_id: Buffer | null;
  }[]) {
    const session = row.session_id.toString('utf8');
    let acc = accs.get(session);
    if (acc === undefined) {
      acc = {
        requests: 0,
        errors: 0,
        sums: [new SqliteSum(), new SqliteSum(), new SqliteSum(), new SqliteSum()],
        cost: new SqliteSum(),
        first: null,
        last: null,
        agents: [],
      };
      accs.set(session, acc);
    }
    const metadata = parseStoredMetadata(row);
    if (row.event_type === 'BUDGET_SETTLED') {
      acc.cost.add(jsonExtract(metadata.cost));
      continue;
    }
    const folded = metadata.budget;
    if (typeof folded === 'object' && folded !== null) acc.cost.add(jsonExtract((folded as { cost?: unknown }).cost));
    acc.requests += 1;
    if (row.decision.toString('utf8') !== 'SUCCESS') acc.errors += 1;
    for (const [i, field] of TOKEN_FIELDS.entries()) acc.sums[i]?.add(jsonExtract(metadata[field]));
    if (acc.first === null || row.timestamp < acc.first) acc.first = row.timestamp;
    if (acc.last === null || row.timestamp > acc.last) acc.last = row.timestamp;
    const agent = utf8Text(row.agent_id);
    if (agent !== null && !acc.agents.includes(agent)) acc.agents.push(agent);
  }
  for (const [session, acc] of accs) {
    const [input, read, write, output] = acc.sums.map((s) => s.total()) as [number, number, number, number];
    out.set(session, [
      acc.requests,
      acc.errors,
      input,
      read,
      write,
      output,
      acc.cost.sumValue(),
      acc.first as string,
      acc.last as string,
      JSON.stringify(acc.agents),
    ]);
  }
  return out;
}

/** A session's EXCHANGEs oldest first from `after` (sessionTurns). */
export async function pgSessionTurns(
  store: PgLedger,
  sessionId: string,
  options: { after?: number; limit?: number } = {},
): Promise<TurnPage> {
  const limit = clampLimit(options.limit);
  const session = utf8(sessionId);
  try {
    const rows = (
      await store.pool.query(
        `SELECT seq, id, timestamp, decision, reason, metadata FROM cplane_entries
         WHERE session_id = $1 AND event_type = 'EXCHANGE' AND seq > $2 ORDER BY seq LIMIT $3`,
        [session, options.after ?? 0, limit + 1],
      )
    ).rows as { seq: string; id: string; timestamp: string; decision: Buffer; reason: Buffer; metadata: string }[];
    let more = rows.length > limit;
    const page = rows.slice(0, limit);
    const first = page[0];
    let since: string | undefined;
    if (first !== undefined) {
      const before = await store.pool.query(
        `SELECT id, metadata FROM cplane_entries WHERE session_id = $1 AND event_type = 'EXCHANGE' AND seq < $2
         ORDER BY seq DESC LIMIT 1`,
        [session, first.seq],
      );
      const previous = before.rows[0] as { id: string; metadata: string } | undefined;
      since = previous === undefined ? undefined : contentRefs(parseStoredMetadata(previous))?.prompt;
    }
    // The settlement rides in the EXCHANGE (metadata.budget); in roots written before, the router appended it in
    // the EXCHANGE's own batch, right after it.
    const settled = new Map<number, unknown>();
    if (page.length > 0) {
      const r = await store.pool.query(
        `SELECT seq, id, metadata FROM cplane_entries WHERE seq = ANY($1::bigint[]) AND event_type = 'BUDGET_SETTLED'
         AND session_id = $2`,
        [page.map((row) => Number(row.seq) + 1), session],
      );
      for (const row of r.rows as { seq: string; id: string; metadata: string }[])
        settled.set(Number(row.seq), jsonExtract(parseStoredMetadata(row).cost));
    }
    const turns: SessionTurn[] = [];
    for (const row of page) {
      if (turnPageFull(turns)) {
        more = true;
        break;
      }
      const seq = Number(row.seq);
      const metadata = parseStoredMetadata({ id: row.id, metadata: row.metadata });
      const refs = contentRefs(metadata);
      let read: TurnContent | undefined;
      if (refs !== undefined) {
        // The previous prompt without its closing piece (`]}`) is what this turn's prompt continues.
        const stop = since === undefined ? undefined : await store.parentOf(since);
        read = {
          prompt: await pgReadPieces(store, refs.prompt, stop ?? EMPTY_LIST),
          response: await pgReadSide(store, refs.response),
          stopped: stop !== undefined,
        };
      }
      since = refs?.prompt;
      const fields = {
        seq,
        id: row.id,
        timestamp: row.timestamp,
        decision: row.decision.toString('utf8'),
        reason: row.reason.toString('utf8'),
      };
      turns.push(turnOf(fields, metadata, read, foldedCost(metadata) ?? settled.get(seq + 1)));
    }
    const last = turns[turns.length - 1];
    return { turns, next_after: more && last !== undefined ? last.seq : null };
  } catch (error) {
    throw storeError(error);
  }
}
