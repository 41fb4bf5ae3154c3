import type pg from 'pg';
import { CpError } from '../../errors.js';
import { type Built, buildEntries, type ChainHead, Timestamps } from '../build.js';
import { type CommitCount, commitCount } from '../commits.js';
import type { ContentBlockLine, ContentListLine, PreparedSide } from '../content.js';
import { type Anchor, type AppendInput, type Clock, type IdSource, type LedgerEntry, randomEntryId } from '../entry.js';
import { type AppendOptions, dropRecorded, onceKey, type PreparedAppend, prepareAppend } from '../prepare.js';
import { type RedactionStore, type RedactRecord, type RedactResult, redactedAppend } from '../redaction.js';
import { type EntryRow, readView } from '../rows.js';
import type { LedgerStore } from '../store.js';
import { appendStoredRows } from './pg-append-rows.js';
import { coded, refusedValues, storeError } from './pg-errors.js';
import { openPgTables } from './pg-open.js';
import { type PgLedgerOptions, pgPool, refusePasswordInUrl } from './pg-pool.js';
import { PgReader } from './pg-reader.js';
import { redactedBy, redactWrite } from './pg-redact.js';
import {
  batchColumns,
  contentRowsPast,
  contentValues,
  copyRows,
  hex,
  noContentRows,
  oneRowColumns,
  type Rows,
} from './pg-rows.js';
import { PG_RESIDUE, scrubBlocks, VACUUM_SKIPPED } from './pg-scrub.js';
import {
  ABORT_PAUSE_MS,
  ABORTED,
  APPEND_ONE_SQL,
  APPEND_SQL,
  APPEND_WITH_CONTENT_SQL,
  CONTENT_SQL,
  COPY_FROM,
  ID_START_KEY,
  LINKED_SQL,
  MAX_ABORTS,
  MAX_ATTEMPTS,
} from './pg-sql.js';
import { pgTransaction } from './pg-transaction.js';

export {
  connectionLost,
  connectionUnusable,
  ignoreDropped,
  storeError,
  timedOut,
} from './pg-errors.js';
export {
  PG_CONNECT_TIMEOUT_MS,
  PG_QUERY_TIMEOUT_MS,
  type PgLedgerOptions,
  type PgTimeouts,
  pgPool,
  refusePasswordInUrl,
} from './pg-pool.js';
export { entryRowOf, type WalkedNode } from './pg-rows.js';
export { COPY_FROM } from './pg-sql.js';

/** A batch's write: true when it landed, false when the head it was built on is not in the chain. */
type Write = (hashed: Iterable<Built>, entries: Built[], head: ChainHead) => Promise<boolean>;

/**
 * The kernel ledger on PostgreSQL, for several gateway hosts sharing one chain. Appends from every process on
 * every host serialise inside the database on the chain's primary key (APPEND_SQL): one statement per append,
 * which lands whole or not at all; a writer that lost the race reads the head again and hashes anew. Committed
 * with the server's synchronous_commit (durable, as FULL is on SQLite). The reads are PgReader's (pg-reader.ts).
 */
export class PgLedger extends PgReader implements LedgerStore, RedactionStore {
  readonly backend = 'postgres' as const;
  /** Appends that lost the race for their positions to another writer and were hashed again. */
  readonly stats = { conflicts: 0 };
  private head: ChainHead | null = null;
  private idSource: IdSource | undefined;
  /** How the tables differ from cplane's layout, as read at open: any, and nothing is appended. */
  private schemaProblems: readonly string[] = [];
  private readonly commits = commitCount();
  private readonly stamps: Timestamps;

  private constructor(pool: pg.Pool, clock: Clock, injectedIds: IdSource | undefined) {
    super(pool);
    this.stamps = new Timestamps(clock);
    this.idSource = injectedIds;
  }

  static async open(url: string, options: PgLedgerOptions = {}): Promise<PgLedger> {
    refusePasswordInUrl(url);
    const pool = pgPool(url, options.poolSize ?? 4, options.timeouts);
    const ledger = new PgLedger(pool, options.clock ?? Date.now, options.idSource);
    try {
      ledger.schemaProblems = await openPgTables(pool, options.create === true);
    } catch (error) {
      await pool.end();
      throw storeError(error);
    }
    return ledger;
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  async append(input: AppendInput): Promise<LedgerEntry> {
    const [entry] = await this.appendBatch([input]);
    return entry as LedgerEntry;
  }

  /** Appends all or none, in chain order, as one transaction; with `once`, only what the chain does not hold. */
  async appendBatch(inputs: readonly AppendInput[], options: AppendOptions = {}): Promise<LedgerEntry[]> {
    const prepared = inputs.map((input, index) => prepareAppend(input, index));
    const content = await coded(this.newContent(prepared));
    const once = options.once === undefined ? undefined : new Set(options.once);
    const durable = options.durable !== false;
    const entries = await this.appendChained(
      prepared,
      (hashed, into, head) => this.write(hashed, prepared.length, into, head, content, durable),
      once === undefined ? undefined : () => this.dropRecorded(prepared, once),
    );
    if (durable) this.commits.durable += 1;
    else this.commits.lazy += 1;
    if (options.stored === true) return entries.map(({ entry }) => entry);
    return entries.map(({ entry }, i) => {
      const c = (prepared[i] as PreparedAppend).content;
      if (c !== undefined) entry.metadata = readView(entry.metadata, c.prompt.texts, c.response.texts);
      return entry;
    });
  }

  /**
   * Builds `prepared` on the head and hands them to `write` until one lands: a lost race for the positions (the
   * primary key's unique violation, or `write` returning false because the head it built on is not in the chain)
   * reads the head and builds again, as does a write the server aborted to break a deadlock (see ABORTED); a
   * connection lost after the call was sent asks the database whether the last entry is there before answering.
   * Every append to the chain goes through here. `narrow` runs once the head of an attempt is known, before
   * building: it may narrow `prepared` (AppendOptions.once); what it reads is current as of that head, and a
   * writer that appends after it takes a position this attempt then loses.
   */
  private async appendChained(
    prepared: readonly PreparedAppend[],
    write: Write,
    narrow?: () => Promise<void>,
  ): Promise<Built[]> {
    this.refuseAlteredSchema();
    const aborts = { count: 0 };
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
      const head = this.head ?? (await coded(this.readHead()));
      const ids = (this.idSource ??= await coded(this.storedIdSource()));
      if (narrow !== undefined) {
        await coded(narrow());
        if (prepared.length === 0) return [];
      }
      // Filled as they are built: a large batch is hashed while the server inserts its first rows.
      const entries: Built[] = [];
      let written: boolean;
      try {
        written = await write(buildEntries(prepared, head, ids, this.stamps), entries, head);
        // Nothing written: the head this writer built on is not in the chain (a restored database).
        if (!written) this.stats.conflicts += 1;
      } catch (error) {
        this.head = null;
        written = await this.afterFailure(error, entries, aborts);
      }
      if (!written) {
        this.head = null;
        continue;
      }
      const last = entries[entries.length - 1];
      this.head =
        last === undefined
          ? head
          : { seq: head.seq + entries.length, hash: last.entry.entry_hash, latest: last.entry.timestamp };
      return entries;
    }
    throw new CpError('ERR_LEDGER_CONTENDED', `the chain head kept moving: ${MAX_ATTEMPTS} attempts to append failed`, {
      hint: 'too many writers at once for one chain; the entries were not written, retry',
    });
  }

  /**
   * What a write that threw means: false, build and write again (another writer took the positions, an imported
   * chain holds the ids, the server aborted the transaction to break a deadlock); true, it landed though its answer
   * was lost. Anything else is thrown, coded.
   */
  private async afterFailure(error: unknown, entries: readonly Built[], aborts: { count: number }): Promise<boolean> {
    const failed = error as { code?: string; constraint?: string };
    if (failed.code === '23505' && failed.constraint === 'cplane_entries_pkey') {
      this.stats.conflicts += 1;
      return false;
    }
    if (failed.code === '23505' && failed.constraint === 'cplane_entries_id_key') {
      // Ids taken by an imported chain: draw random ones.
      this.idSource = randomEntryId;
      return false;
    }
    if (typeof failed.code === 'string' && ABORTED.has(failed.code)) {
      aborts.count += 1;
      if (aborts.count >= MAX_ABORTS) throw contended(aborts.count, failed.code, error);
      await pause(ABORT_PAUSE_MS * aborts.count * (0.5 + Math.random()));
      return false;
    }
    const refused = refusedValues(error);
    if (refused !== undefined) throw refused;
    const known = storeError(error);
    if (!(known instanceof CpError && known.code === 'ERR_STORE_UNAVAILABLE')) throw known;
    // The connection failed after the call was sent: it may have committed. Sending it again would write the
    // entries twice, so ask the database whether the last one is there, as hashed, before saying anything.
    const last = entries[entries.length - 1];
    const landed = last === undefined ? false : await this.holds(last.entry.id, last.entry.entry_hash);
    if (landed === true) return true;
    if (landed === false) throw known;
    throw new CpError('ERR_STORE_UNAVAILABLE', `${known.message}; whether the entries were written is unknown`, {
      hint: 'look for the entry id once the database is back: it is there whole or not at all',
      details: { ...known.details, outcome: 'unknown', last_id: last?.entry.id ?? null },
      cause: error,
    });
  }

  /** Appends committed by this process, durable (synchronous_commit as the server has it) or not (off). */
  commitCount(): Readonly<CommitCount> {
    return this.commits;
  }

  /**
   * Writes one batch of `count` entries, built on `head` into `entries`, all or none; false when that head is not
   * in the chain. A large batch goes by COPY in a transaction (the rows are not parsed from arrays), a small one is
   * a single statement; one that need not be durable is that statement in a transaction with synchronous_commit
   * off (two round trips more, no wait for the WAL flush; the next durable commit's flush covers it).
   */
  private async write(
    hashed: Iterable<Built>,
    count: number,
    entries: Built[],
    head: ChainHead,
    content: Rows,
    durable: boolean,
  ): Promise<boolean> {
    if (count >= COPY_FROM) return this.copy(hashed, entries, head, content, durable);
    for (const built of hashed) entries.push(built);
    // One statement (content and entries, all or none), named: planned once per connection.
    const withContent = content.blocks.digest.length > 0 || content.lists.digest.length > 0;
    const single = entries.length === 1 && !withContent ? entries[0] : undefined;
    const columns = single ? oneRowColumns(single, head.seq + 1) : batchColumns(entries, head.seq);
    const contentColumns = withContent ? contentValues(content) : [];
    const statement = single
      ? { name: 'cplane_append_one', text: APPEND_ONE_SQL }
      : withContent
        ? { name: 'cplane_append_content', text: APPEND_WITH_CONTENT_SQL }
        : { name: 'cplane_append', text: APPEND_SQL };
    const query = { ...statement, values: [...contentColumns, ...columns, head.seq, head.hash] };
    const result = durable
      ? await this.pool.query(query)
      : await pgTransaction(this.pool, async (client) => ({ commit: true, value: await client.query(query) }), false);
    return entries.length === 0 || result.rowCount !== 0;
  }

  /**
   * The batch by COPY, in one transaction on one connection: content first, then a check that `head` is still in
   * the chain, then the rows. A writer that lost the race for these positions gets the primary key's unique
   * violation from the COPY, as from the one statement.
   */
  private copy(
    hashed: Iterable<Built>,
    entries: Built[],
    head: ChainHead,
    content: Rows,
    durable: boolean,
  ): Promise<boolean> {
    return pgTransaction(
      this.pool,
      async (client) => {
        if (content.blocks.digest.length > 0 || content.lists.digest.length > 0)
          await client.query({ name: 'cplane_content', text: CONTENT_SQL, values: contentValues(content) });
        const linked = await client.query({ name: 'cplane_linked', text: LINKED_SQL, values: [head.seq, head.hash] });
        if ((linked.rows[0] as { linked?: boolean } | undefined)?.linked !== true)
          return { commit: false, value: false };
        await copyRows(client, hashed, entries, head.seq);
        return { commit: true, value: true };
      },
      durable,
    );
  }

  /**
   * Removes the text of `blocks` and appends the REDACTED entry that accounts for it (the same entry the SQLite
   * file appends), in one transaction that races for the head as every append does: the entry goes in first, so
   * a writer that took the position makes the whole transaction roll back and hash again. Then, the redaction
   * committed, what PostgreSQL still holds of the text on disk is erased as far as it can be (scrubBlocks); what
   * it cannot erase (WAL, standbys, archives, backups) is in the result's warnings.
   */
  async redact(
    blocks: readonly string[],
    record: RedactRecord,
    options: { vacuum?: boolean } = {},
  ): Promise<RedactResult> {
    const { sorted, input } = redactedAppend(blocks, record);
    const prepared = [prepareAppend(input)];
    let done: { redacted: number; xid: string } | undefined;
    const [built] = await this.appendChained(prepared, async (hashed, entries, head) => {
      done = await redactWrite(this.pool, hashed, entries, head, sorted);
      return done !== undefined;
    });
    const entry = (built as Built).entry;
    // Undefined: the commit's answer was lost, but the entry is there, so its UPDATE committed with it.
    done ??= await coded(redactedBy(this.pool, entry.id));
    const scrubbed =
      options.vacuum === false
        ? { checkpointed: false, warnings: [VACUUM_SKIPPED, PG_RESIDUE] }
        : await scrubBlocks(this.pool, done.xid);
    return { entry, redacted: done.redacted, already: sorted.length - done.redacted, ...scrubbed };
  }

  /**
   * Appends rows exactly as another store holds them (a migration): each was re-hashed by the caller, and the
   * database re-checks that they continue `expect`. Content goes first, in the same transaction. False: the head
   * moved (another writer), nothing written.
   */
  async appendRows(
    expect: Anchor,
    rows: readonly EntryRow[],
    blocks: readonly ContentBlockLine[],
    lists: readonly ContentListLine[],
  ): Promise<boolean> {
    this.refuseAlteredSchema();
    const ok = await appendStoredRows(this.pool, expect, rows, blocks, lists);
    this.head = null;
    return ok;
  }

  /** Why nothing can be appended here (its tables were altered outside cplane, as read at open), or null. */
  alteredSchema(): string | null {
    return this.schemaProblems.length === 0
      ? null
      : `the PostgreSQL ledger has an altered schema, so nothing is appended: ${this.schemaProblems.join('; ')}`;
  }

  /** As the SQLite ledger: rows go only into tables laid out as cplane lays them out (pg-schema-check.ts). */
  private refuseAlteredSchema(): void {
    if (this.schemaProblems.length === 0) return;
    throw new CpError('ERR_LEDGER_SCHEMA_ALTERED', this.alteredSchema() as string, {
      hint: 'its tables were changed outside cplane (by their owner or a superuser); run `cplane ledger verify --store` and restore the database from a backup or an export',
      details: { problems: [...this.schemaProblems] },
    });
  }

  /** Sets the id sequence's start (a migrated chain keeps its source's, so new ids continue its run). */
  async setIdStart(start: string): Promise<void> {
    await this.pool.query(
      'INSERT INTO cplane_ledger_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value',
      [ID_START_KEY, start],
    );
    this.idSource = undefined;
  }

  /** The content nodes (and their blocks) past the longest prefix already stored, for every side of the batch. */
  private async newContent(prepared: readonly PreparedAppend[]): Promise<Rows> {
    const sides: PreparedSide[] = [];
    for (const p of prepared) if (p.content !== undefined) sides.push(p.content.prompt, p.content.response);
    if (sides.length === 0) return noContentRows();
    const found = await this.pool.query(
      "SELECT encode(digest, 'hex') AS d FROM cplane_content_lists WHERE digest = ANY($1)",
      [sides.flatMap((s) => s.nodes).map(hex)],
    );
    return contentRowsPast(sides, new Set(found.rows.map((r: { d: string }) => r.d)));
  }

  /** dropRecorded with the chain's answers, asked first for each input `once` names (the filter is synchronous). */
  private async dropRecorded(prepared: PreparedAppend[], once: ReadonlySet<string>): Promise<void> {
    const held = new Set<PreparedAppend>();
    for (const input of prepared) if (onceKey(input, once) !== null && (await this.recorded(input))) held.add(input);
    dropRecorded(prepared, once, (input) => held.has(input));
  }
}

/** The server aborted the write to break a cycle on every attempt: nothing was written. */
function contended(attempts: number, sqlstate: string, cause: unknown): CpError {
  return new CpError(
    'ERR_LEDGER_CONTENDED',
    `the server aborted the write on each of its ${attempts} attempts to break a deadlock (or serialization failure) with other writers (${sqlstate})`,
    {
      hint: 'too many writers at once on the same rows; the entries were not written, retry',
      details: { attempts, sqlstate },
      cause,
    },
  );
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
