import type pg from 'pg';
import { canonicalJson } from '../../canonical.js';
import type { ChainHead } from '../build.js';
import type { ChainView } from '../checkpoint.js';
import { type ContentBlockLine, contentRefs, EMPTY_LIST } from '../content.js';
import {
  type Anchor,
  GENESIS_HASH,
  type IdSource,
  type LedgerEntry,
  randomEntryId,
  sequentialEntryIds,
} from '../entry.js';
import type { PreparedAppend } from '../prepare.js';
import { newContentLines } from '../jsonl.js';
import type { LedgerQuery } from '../query.js';
import { type EntryRow, parseStoredMetadata, readView, rowToEntry } from '../rows.js';
import type { ContentSummary } from '../store.js';
import { pgContentProblems } from './pg-content-check.js';
import { coded, connectionUnusable, ignoreDropped, storeError } from './pg-errors.js';
import { compilePgQuery, PG_ROW_COLUMNS } from './pg-query.js';
import {
  entryRowOf,
  hex,
  indexed,
  type Queryable,
  utf8,
  type WalkedNode,
  type WalkRow,
  walkedNode,
} from './pg-rows.js';
import { ID_START_KEY, QUERY_PAGE, WALK_SINCE_SQL, WALK_SQL } from './pg-sql.js';

/** The PostgreSQL ledger's reads: entries, content, exports and checks. PgLedger (pg-ledger.ts) adds the writes. */
export class PgReader {
  constructor(readonly pool: pg.Pool) {}

  /** Whether the block is stored (with its text or redacted). */
  async hasBlock(digest: string): Promise<boolean> {
    const r = await coded(this.pool.query('SELECT 1 FROM cplane_content_blocks WHERE digest = $1', [hex(digest)]));
    return r.rows.length > 0;
  }

  /** A block as an export line carries it, or undefined when it is not stored. */
  async block(digest: string): Promise<ContentBlockLine | undefined> {
    const r = await coded(
      this.pool.query('SELECT size, text, redacted_by FROM cplane_content_blocks WHERE digest = $1', [hex(digest)]),
    );
    const row = r.rows[0] as { size: number; text: Buffer | null; redacted_by: string | null } | undefined;
    if (row === undefined) return undefined;
    return row.text !== null
      ? { digest, size: row.size, text: row.text.toString('utf8') }
      : { digest, size: row.size, ...(row.redacted_by === null ? {} : { redacted_by: row.redacted_by }) };
  }

  /** The EXCHANGE ids of a session, oldest first. */
  async sessionExchanges(sessionId: string): Promise<string[]> {
    const r = await coded(
      this.pool.query("SELECT id FROM cplane_entries WHERE session_id = $1 AND event_type = 'EXCHANGE' ORDER BY seq", [
        utf8(sessionId),
      ]),
    );
    return (r.rows as { id: string }[]).map((row) => row.id);
  }

  /** The blocks an entry's content is made of ([] when it has none in the store; undefined: no such entry). */
  async exchangeBlocks(id: string): Promise<string[] | undefined> {
    const r = await coded(this.pool.query('SELECT metadata FROM cplane_entries WHERE id = $1', [id]));
    const row = r.rows[0] as { metadata: string } | undefined;
    if (row === undefined) return undefined;
    const refs = contentRefs(parseStoredMetadata({ id, metadata: row.metadata }));
    if (refs === undefined) return [];
    const blocks = new Set<string>();
    for (const head of [refs.prompt, refs.response]) for (const node of await this.walk(head)) blocks.add(node.block);
    return [...blocks];
  }

  protected async readHead(on: Queryable = this.pool): Promise<ChainHead> {
    const r = await on.query('SELECT seq, entry_hash, timestamp FROM cplane_entries ORDER BY seq DESC LIMIT 1');
    const row = r.rows[0] as { seq: string; entry_hash: string; timestamp: string } | undefined;
    return row === undefined
      ? { seq: 0, hash: GENESIS_HASH, latest: '' }
      : { seq: Number(row.seq), hash: row.entry_hash, latest: row.timestamp };
  }

  async headAnchor(): Promise<Anchor> {
    const { seq, hash } = await coded(this.readHead());
    return { seq, hash };
  }

  /** Rows in chain order as stored (metadata as its canonical JSON text), in chunks. */
  async *rows(fromSeq = 1, chunkSize = 2000, on: Queryable = this.pool): AsyncIterableIterator<EntryRow> {
    let next = fromSeq;
    for (;;) {
      const r = await coded(
        on.query(`SELECT ${PG_ROW_COLUMNS} FROM cplane_entries WHERE seq >= $1 ORDER BY seq LIMIT $2`, [
          next,
          chunkSize,
        ]),
      );
      for (const row of r.rows) yield entryRowOf(row);
      if (r.rows.length < chunkSize) return;
      next = Number((r.rows[r.rows.length - 1] as { seq: string }).seq) + 1;
    }
  }

  /** The head and the entries at `seqs` (and #1), read now: what checking checkpoints needs of this chain. */
  async chainView(seqs: readonly number[]): Promise<ChainView> {
    const head = await this.headAnchor();
    const r = await coded(
      this.pool.query('SELECT seq, id, entry_hash FROM cplane_entries WHERE seq = ANY($1::bigint[])', [[1, ...seqs]]),
    );
    const at = new Map<number, { id: string; entry_hash: string }>();
    for (const row of r.rows as { seq: string; id: string; entry_hash: string }[])
      at.set(Number(row.seq), { id: row.id, entry_hash: row.entry_hash });
    return { head: () => head, at: (seq) => at.get(seq) };
  }

  async hasExchange(sessionId: string, dispatchId: string): Promise<boolean> {
    try {
      const found = await this.pool.query(
        // Matched in the canonical JSON text, not cast to jsonb: jsonb refuses \u0000, which a provider's bytes can put
        // in any EXCHANGE of the session, and the spool drain asking this must never fail on someone else's entry.
        `SELECT 1 FROM cplane_entries WHERE session_id = $1 AND event_type = 'EXCHANGE'
         AND strpos(metadata, $2) > 0 LIMIT 1`,
        [utf8(sessionId), `"dispatch_entry_id":${JSON.stringify(dispatchId)}`],
      );
      return found.rowCount !== null && found.rowCount > 0;
    } catch (error) {
      throw storeError(error);
    }
  }

  async get(id: string): Promise<LedgerEntry | undefined> {
    const r = await this.pool.query('SELECT seq FROM cplane_entries WHERE id = $1', [id]);
    const seq = (r.rows[0] as { seq?: string } | undefined)?.seq;
    if (seq === undefined) return undefined;
    for await (const row of this.rows(Number(seq), 1)) return this.readEntry(row);
    return undefined;
  }

  /** Entries matching every filter, newest first unless `order: 'oldest'`, as reads show them (see compilePgQuery). */
  async query(query: LedgerQuery = {}): Promise<LedgerEntry[]> {
    const compiled = compilePgQuery(query);
    const rows: EntryRow[] = [];
    if (compiled.recheck === undefined) {
      const { text, values } = compiled.sql(undefined, compiled.limit);
      for (const row of (await coded(this.pool.query(text, values))).rows) rows.push(entryRowOf(row));
    } else {
      // Candidates page by page until the limit is met by rows that really match.
      const wanted = compiled.limit ?? Number.POSITIVE_INFINITY;
      let after: number | undefined;
      for (;;) {
        const { text, values } = compiled.sql(after, QUERY_PAGE);
        const page = (await coded(this.pool.query(text, values))).rows.map(entryRowOf);
        for (const row of page) if (rows.length < wanted && compiled.recheck(row)) rows.push(row);
        if (page.length < QUERY_PAGE || rows.length >= wanted) break;
        after = (page[page.length - 1] as EntryRow).seq;
      }
    }
    const out: LedgerEntry[] = [];
    for (const row of rows) out.push(await coded(this.readEntry(row)));
    return out;
  }

  /** A stored row as a read shows it: prompt and response text in place of their digests. */
  async readEntry(row: EntryRow): Promise<LedgerEntry> {
    const metadata = parseStoredMetadata(row);
    const refs = contentRefs(metadata);
    const { metadata: _m, seq: _s, ...fields } = row;
    const entry: LedgerEntry = { ...fields, metadata };
    if (refs !== undefined)
      entry.metadata = readView(metadata, await this.readList(refs.prompt), await this.readList(refs.response));
    return entry;
  }

  /** A list's text, blocks joined oldest first; a redacted block reads `[REDACTED:<id>]`, a missing one `[MISSING:…]`. */
  async readList(head: string): Promise<string> {
    return (await this.walk(head))
      .map(({ block, line }) =>
        line?.text !== undefined
          ? line.text
          : line?.redacted_by !== undefined
            ? `[REDACTED:${line.redacted_by}]`
            : `[MISSING:${block}]`,
      )
      .join('');
  }

  /**
   * A list's nodes from its oldest, each with its block as an export line (undefined: the block is not stored).
   * Bounded as on SQLite: nodes hash their parents, so only rows planted by hand could make a cycle.
   */
  async walk(head: string, on: Queryable = this.pool): Promise<WalkedNode[]> {
    if (head === EMPTY_LIST) return [];
    const r = await coded(on.query({ name: 'cplane_walk', text: WALK_SQL, values: [hex(head)] }));
    return (r.rows as WalkRow[]).map(walkedNode);
  }

  /**
   * The nodes of `head` after the list `since` (oldest first), or back to the list's start when `since` is not a
   * prefix of it: a conversation's turn reads only its new messages, not the whole prompt again.
   */
  async walkSince(head: string, since: string): Promise<WalkedNode[]> {
    if (head === EMPTY_LIST) return [];
    const r = await coded(
      this.pool.query({ name: 'cplane_walk_since', text: WALK_SINCE_SQL, values: [hex(head), hex(since)] }),
    );
    return (r.rows as WalkRow[]).map(walkedNode);
  }

  /** The list `digest` without its last block (its parent node); undefined when the node is not stored. */
  async parentOf(digest: string): Promise<string | undefined> {
    if (digest === EMPTY_LIST) return undefined;
    const r = await coded(
      this.pool.query("SELECT encode(parent, 'hex') AS p FROM cplane_content_lists WHERE digest = $1", [hex(digest)]),
    );
    return (r.rows[0] as { p?: string } | undefined)?.p;
  }

  /**
   * The chain as `ledger export` writes it (see exportLines): entries in chain order, each preceded by the content
   * blocks and list nodes no earlier line carried. All of it is read in one snapshot, whose head `onHead` is told
   * first: a redaction committed while the export runs is in it whole or not at all. Read in separate queries, a
   * block emptied after the head was read names a REDACTED entry past it, and the export does not import.
   */
  async *exportLines(onHead: (head: Anchor) => void): AsyncIterableIterator<string> {
    const client = await coded(this.pool.connect());
    client.on('error', ignoreDropped);
    let failure: unknown;
    try {
      await coded(client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY'));
      const { seq, hash } = await coded(this.readHead(client));
      onHead({ seq, hash });
      const sent = new Set<string>();
      for await (const row of this.rows(1, 2000, client)) {
        const entry = rowToEntry(row);
        const refs = row.metadata.includes('"content":{') ? contentRefs(entry.metadata) : undefined;
        for (const head of refs === undefined ? [] : [refs.prompt, refs.response]) {
          if (head === EMPTY_LIST || sent.has(head)) continue;
          for (const node of await this.walk(head, client)) yield* newContentLines(node, () => node.line, sent);
        }
        yield canonicalJson(entry);
      }
    } catch (error) {
      failure = error;
      throw error;
    } finally {
      // Read only: nothing to commit, also when the reader stopped early.
      await client.query('ROLLBACK').catch(() => undefined);
      client.off('error', ignoreDropped);
      client.release(failure !== undefined && connectionUnusable(failure) ? (failure as Error) : undefined);
    }
  }

  /** Whether entry `id` is stored with `hash`; null when the database cannot be asked. */
  protected async holds(id: string, hash: string): Promise<boolean | null> {
    try {
      const r = await this.pool.query('SELECT entry_hash FROM cplane_entries WHERE id = $1', [id]);
      return (r.rows[0] as { entry_hash?: string } | undefined)?.entry_hash === hash;
    } catch {
      return null;
    }
  }
  protected async storedIdSource(): Promise<IdSource> {
    const r = await this.pool.query('SELECT value FROM cplane_ledger_meta WHERE key = $1', [ID_START_KEY]);
    const start = (r.rows[0] as { value?: string } | undefined)?.value;
    return start !== undefined && /^[0-9a-f]{8}$/.test(start)
      ? sequentialEntryIds(Number.parseInt(start, 16))
      : randomEntryId;
  }
  /** Whether the chain holds an entry of this kind, submission and decision (found through its session's rows). */
  protected async recorded(input: PreparedAppend): Promise<boolean> {
    const session = indexed(input.metadata.session_id);
    const found = await this.pool.query(
      `SELECT 1 FROM cplane_entries WHERE ${session === null ? 'session_id IS NULL AND $1::bytea IS NULL' : 'session_id = $1'}
       AND submission_id = $2 AND event_type = $3 AND decision = $4 LIMIT 1`,
      [session, utf8(input.submission_id), input.event_type, utf8(input.decision)],
    );
    return (found.rowCount ?? 0) > 0;
  }

  /**
   * Every block and list node re-hashed (for verify and migrate), as the SQLite file's verify judges them
   * (pg-content-check.ts).
   */
  contentProblems(): Promise<ContentSummary> {
    return pgContentProblems(this.pool);
  }
}
