import type Database from 'better-sqlite3';
import { CpError, type ErrorCode, show } from '../errors.js';
import { ContentStore, contentRefs } from './content.js';
import { type Anchor, GENESIS_HASH, type LedgerEntry } from './entry.js';
import { damaged, isCorruption } from './open.js';
import { tooDeep } from './prepare.js';
import { type CompiledQuery, compileQuery, type LedgerQuery } from './query.js';
import { type EntryRow, parseStoredMetadata, type RawRow, readView, rowToEntry } from './rows.js';
import { schemaProblems, type SchemaProblem } from './schema-check.js';
import { formatVersion, TIMESTAMP_INDEX } from './schema.js';
import { type LedgerStatements, ledgerStatements } from './statements.js';
import { type SeqRange, seqRangeForTimes } from './time-range.js';

/**
 * The SQLite ledger's file as read: its statements, schema check, content store and every read. Ledger (ledger.ts)
 * adds the writes.
 */
export class LedgerReader {
  readonly path: string;
  readonly db: Database.Database;
  protected readonly stmts: LedgerStatements;
  /** How this file's schema differs from the ledger's (checked at open, and again when the schema changes). */
  protected schema: { version: number; problems: SchemaProblem[] };
  private readonly queryCache = new Map<string, Database.Statement>();
  /** The exchange content store in this file (content.ts). */
  readonly content: ContentStore;
  /** ledger_meta's format_version, read once at open: it decides how rows keep their hashes (schema.ts). */
  readonly formatVersion: string;

  protected constructor(path: string, db: Database.Database) {
    this.path = path;
    this.db = db;
    this.content = new ContentStore(db);
    this.formatVersion = formatVersion(db);
    this.stmts = ledgerStatements(db, this.formatVersion);
    // The one statement prepared at open: it names every column, so a file whose table is not the ledger's fails here.
    void this.stmts.bySeq;
    this.schema = {
      version: this.stmts.schemaVersion.get() as number,
      problems: schemaProblems(db, this.formatVersion),
    };
  }

  /** How the file's schema differs from the ledger's DDL: missing or altered triggers, tables, indexes, extra objects. */
  get schemaProblems(): readonly SchemaProblem[] {
    return this.schema.problems;
  }

  /**
   * Writes go only into a ledger whose schema is intact. Checked at open; inside each write transaction only the
   * schema's version number is read, and the schema compared again when another connection changed it.
   */
  protected refuseAlteredSchema(): void {
    const version = this.stmts.schemaVersion.get() as number;
    if (version !== this.schema.version)
      this.schema = { version, problems: schemaProblems(this.db, this.formatVersion) };
    const problems = this.schema.problems;
    if (problems.length > 0) {
      throw new CpError(
        'ERR_LEDGER_SCHEMA_ALTERED',
        `ledger ${show(this.path)} has an altered schema, so nothing is appended: ${problems.map((p) => p.message).join('; ')}`,
        {
          hint: 'the file was changed outside cplane; run `cplane ledger verify` and restore the ledger from a copy or an export',
          details: { path: this.path, problems: problems.map(({ kind, type, name }) => ({ kind, type, name })) },
        },
      );
    }
  }

  /**
   * SQLite finding the file malformed mid-statement is a damaged ledger, reported as such (the statement wrote
   * nothing). On a write, SQLite refusing the metadata's JSON (its parser stops at 1000 levels of nesting, when
   * the indexed columns are computed) is the entry's fault, coded `entryCode`.
   */
  protected guard<T>(fn: () => T, entryCode?: ErrorCode): T {
    try {
      return fn();
    } catch (error) {
      if (isCorruption(error)) throw damaged(this.path, (error as Error).message, error);
      if (
        entryCode !== undefined &&
        (error as { code?: unknown }).code === 'SQLITE_ERROR' &&
        /malformed JSON/.test((error as Error).message)
      ) {
        throw tooDeep(entryCode, error);
      }
      throw error;
    }
  }

  /** The blocks of an exchange written through the content store, with what each holds (for redact and its dry run). */
  exchangeBlocks(id: string): string[] | undefined {
    const row = this.guard(() => this.stmts.byId.get(id) as EntryRow | undefined);
    if (row === undefined) return undefined;
    const refs = contentRefs(parseStoredMetadata(row));
    if (refs === undefined) return [];
    const blocks = new Set<string>();
    for (const head of [refs.prompt, refs.response])
      for (const [, , block] of this.guard(() => this.content.walkNodes(head))) blocks.add(block);
    return [...blocks];
  }

  /** The EXCHANGE ids of a session, oldest first, as stored. */
  sessionExchanges(sessionId: string): string[] {
    return this.guard(() => (this.stmts.history.all(sessionId) as EntryRow[]).map((row) => row.id));
  }

  protected headTuple(): [number, string, string] {
    const row = this.stmts.head.get() as [number, string, string] | undefined;
    return row ?? [0, GENESIS_HASH, ''];
  }

  head(): Anchor {
    const [seq, hash] = this.guard(() => this.headTuple());
    return { seq, hash };
  }

  /** The entry_hash at a chain position, without reading the entry's text (undefined past the head). */
  entryHashAt(seq: number): string | undefined {
    return this.guard(() => this.stmts.hashAt.get(seq) as string | undefined);
  }

  get(id: string): LedgerEntry | undefined {
    const row = this.guard(() => this.stmts.byId.get(id) as EntryRow | undefined);
    return row ? this.withContent(rowToEntry(row)) : undefined;
  }

  getBySeq(seq: number): LedgerEntry | undefined {
    const row = this.guard(() => this.stmts.bySeq.get(seq) as EntryRow | undefined);
    return row ? this.withContent(rowToEntry(row)) : undefined;
  }

  /**
   * An entry as users read it: one written through the content store shows its `prompt` and `response` text
   * where `metadata.content` (their digests) is stored, as entries written before the store do. The stored form,
   * which the hash covers, is what `rows()` and export give.
   */
  withContent(entry: LedgerEntry): LedgerEntry {
    const refs = contentRefs(entry.metadata);
    if (refs === undefined) return entry;
    const prompt = this.guard(() => this.content.read(refs.prompt));
    const response = this.guard(() => this.content.read(refs.response));
    entry.metadata = readView(entry.metadata, prompt.text, response.text);
    return entry;
  }

  /** Entries matching every given filter, newest first unless `order: 'oldest'`. Each form is served by an index. */
  query(query: LedgerQuery = {}): LedgerEntry[] {
    const run = (): LedgerEntry[] => {
      const { sql, params } = this.compile(query);
      return (this.statement(sql).all(...params) as EntryRow[]).map((row) => this.withContent(rowToEntry(row)));
    };
    // A time range reads in one snapshot, so the chain positions it finds are those of the rows it returns.
    return query.since === undefined && query.until === undefined ? this.guard(run) : this.snapshot(run);
  }

  /** The SQL and parameters `query` runs: a time range is a seq range unless this ledger has a timestamp index. */
  compile(query: LedgerQuery): CompiledQuery {
    if (query.since === undefined && query.until === undefined) return compileQuery(query);
    if ((this.stmts.timestampIndex.get(TIMESTAMP_INDEX) as number) > 0) return compileQuery(query);
    return compileQuery(query, (since, until) =>
      seqRangeForTimes(this.stmts.timeProbe, this.headTuple()[0], since, until),
    );
  }

  /**
   * The chain positions of a time range, found by binary search while timestamps are in chain order; null for a
   * ledger that keeps a timestamp index instead (its times are not in chain order).
   */
  seqRange(since: string | undefined, until: string | undefined): SeqRange | null {
    return this.guard(() => {
      if ((this.stmts.timestampIndex.get(TIMESTAMP_INDEX) as number) > 0) return null;
      return seqRangeForTimes(this.stmts.timeProbe, this.headTuple()[0], since, until);
    });
  }

  /** A session's EXCHANGE records, oldest first: the conversation as it happened. */
  history(sessionId: string): LedgerEntry[] {
    return this.guard(() =>
      (this.stmts.history.all(sessionId) as EntryRow[]).map((row) => this.withContent(rowToEntry(row))),
    );
  }

  /** Rows in chain order, for verify/export; reads in chunks without loading the whole ledger. */
  *rows(fromSeq = 1, chunkSize = 4096): IterableIterator<EntryRow> {
    for (const chunk of this.rawChunks(fromSeq, chunkSize)) {
      for (const [
        seq,
        id,
        event_type,
        submission_id,
        decision,
        reason,
        metadata,
        timestamp,
        previous_hash,
        entry_hash,
      ] of chunk) {
        yield { seq, id, event_type, submission_id, decision, reason, metadata, timestamp, previous_hash, entry_hash };
      }
    }
  }

  /** Raw rows in chain order, `chunkSize` at a time (ROW_COLUMNS order). */
  *rawChunks(fromSeq = 1, chunkSize = 4096): IterableIterator<RawRow[]> {
    let after = fromSeq - 1;
    for (;;) {
      const chunk = this.guard(() => this.stmts.chunk.all(after, chunkSize) as RawRow[]);
      if (chunk.length === 0) return;
      yield chunk;
      after = (chunk[chunk.length - 1] as RawRow)[0];
    }
  }

  /** Run `fn` inside one read transaction, so a walk over the chain sees a single snapshot. */
  snapshot<T>(fn: () => T): T {
    return this.guard(() => this.db.transaction(fn).deferred());
  }

  count(): number {
    return this.guard(() => this.stmts.count.get() as number);
  }

  /** A prepared statement for `sql`, kept for reuse (queries repeat with different parameters). */
  statement(sql: string): Database.Statement {
    let stmt = this.queryCache.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      this.queryCache.set(sql, stmt);
    }
    return stmt;
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
