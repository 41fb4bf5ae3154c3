import { randomBytes } from 'node:crypto';
import { finished } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { sha256Hex } from '../../canonical.js';
import { CpError } from '../../errors.js';
import {
  type Anchor,
  type AppendInput,
  type Clock,
  GENESIS_HASH,
  hashInputOf,
  type IdSource,
  idDigits,
  type LedgerEntry,
  randomEntryId,
  sequentialEntryIds,
} from '../entry.js';
import {
  blockDigest,
  type ContentBlockLine,
  type ContentListLine,
  contentRefs,
  EMPTY_LIST,
  listDigest,
  MAX_PIECES,
  type PreparedSide,
} from '../content.js';
import { newContentLines } from '../jsonl.js';
import {
  type AppendOptions,
  dropRecorded,
  type EntryRow,
  onceKey,
  type PreparedAppend,
  parseStoredMetadata,
  prepareAppend,
  readView,
  rowToEntry,
} from '../ledger.js';
import { canonicalJson } from '../../canonical.js';
import type { ChainView } from '../checkpoint.js';
import type { ContentSummary, LedgerStore } from '../store.js';
import { type CommitCount, commitCount } from '../commits.js';
import { type RedactionStore, type RedactRecord, type RedactResult, redactedAppend } from '../redaction.js';
import { PG_RESIDUE, scrubBlocks, VACUUM_SKIPPED } from './pg-scrub.js';
import { COPY_NULL, copyBytea, copyText } from './copy-text.js';
import { compilePgQuery, PG_ROW_COLUMNS } from './pg-query.js';
import { pgSchemaProblems } from './pg-schema-check.js';
import { PG_LEDGER_DDL, PG_LEDGER_LOCK } from './schema.js';
import type { LedgerQuery } from '../query.js';

export interface PgLedgerOptions {
  /** Create the tables when the database has none (idempotent; concurrent openers serialise on the chain lock). */
  create?: boolean;
  clock?: Clock;
  idSource?: IdSource;
  /** Connections in this process's pool. */
  poolSize?: number;
  /** See PgTimeouts. */
  timeouts?: PgTimeouts;
}

/**
 * How long opening a connection, and a statement's answer, may take before the call fails ERR_STORE_UNAVAILABLE.
 * A server that stops answering without closing its connections (frozen, a network path that drops packets) would
 * otherwise hold every call, and the gateway request behind it, forever. A URL's own `query_timeout` parameter
 * takes precedence over the one here.
 */
export interface PgTimeouts {
  connectMs?: number;
  queryMs?: number;
}

export const PG_CONNECT_TIMEOUT_MS = 10_000;
export const PG_QUERY_TIMEOUT_MS = 30_000;

/** A pool whose calls fail in bounded time against a server that stopped answering (see PgTimeouts). */
export function pgPool(url: string, max: number, timeouts: PgTimeouts = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    connectionTimeoutMillis: timeouts.connectMs ?? PG_CONNECT_TIMEOUT_MS,
    query_timeout: timeouts.queryMs ?? PG_QUERY_TIMEOUT_MS,
    // A peer gone without a FIN (a host powered off) is noticed by the kernel on an idle pooled connection too.
    keepAlive: true,
  });
  pool.on('error', () => {
    // An idle connection dropped by the server: the next query reconnects.
  });
  return pool;
}

const ID_START_KEY = 'id_start';
const ENTRY_COLUMNS =
  'seq, id, event_type, submission_id, decision, reason, metadata, timestamp, previous_hash, entry_hash, session_id, agent_id';
const entriesFrom = (n: number): string =>
  `INSERT INTO cplane_entries (${ENTRY_COLUMNS}) SELECT * FROM unnest($${n}::bigint[], $${n + 1}::text[], $${n + 2}::text[], $${n + 3}::bytea[], $${n + 4}::bytea[], $${n + 5}::bytea[], $${n + 6}::text[], $${n + 7}::text[], $${n + 8}::text[], $${n + 9}::text[], $${n + 10}::bytea[], $${n + 11}::bytea[]) WHERE ${linksTo(n + 12)}`;
/** The head the entries were hashed against is in the chain (a database restored or failed over behind it is not). */
const linksTo = (n: number): string =>
  `($${n}::bigint = 0 OR EXISTS (SELECT 1 FROM cplane_entries WHERE seq = $${n}::bigint AND entry_hash = $${n + 1}::text))`;
/**
 * The chain's positions are its primary key: an entry is written at the head's seq + 1 with the head's hash as
 * its previous_hash, so two writers that read the same head cannot both land: the second gets a unique
 * violation on `seq` and hashes again against the new head. Each statement also checks that the head it hashed
 * against is in the chain, so a database restored (or failed over) behind a writer's cached head gets no gap: the
 * statement writes nothing and the writer reads the head again. No fork, no gap, no lock held across round trips.
 */
const APPEND_SQL = entriesFrom(1);
const APPEND_ONE_SQL = `INSERT INTO cplane_entries (${ENTRY_COLUMNS}) SELECT $1::bigint, $2::text, $3::text, $4::bytea, $5::bytea, $6::bytea, $7::text, $8::text, $9::text, $10::text, $11::bytea, $12::bytea WHERE ${linksTo(13)}`;
const APPEND_WITH_CONTENT_SQL = `WITH blocks AS (
  INSERT INTO cplane_content_blocks (digest, size, text) SELECT * FROM unnest($1::bytea[], $2::int[], $3::bytea[])
  ON CONFLICT (digest) DO NOTHING
), lists AS (
  INSERT INTO cplane_content_lists (digest, parent, block) SELECT * FROM unnest($4::bytea[], $5::bytea[], $6::bytea[])
  ON CONFLICT (digest) DO NOTHING
) ${entriesFrom(7)}`;
const CONTENT_SQL = `WITH blocks AS (
  INSERT INTO cplane_content_blocks (digest, size, text) SELECT * FROM unnest($1::bytea[], $2::int[], $3::bytea[])
  ON CONFLICT (digest) DO NOTHING
) INSERT INTO cplane_content_lists (digest, parent, block) SELECT * FROM unnest($4::bytea[], $5::bytea[], $6::bytea[])
  ON CONFLICT (digest) DO NOTHING`;
/** The redaction's UPDATE; its transaction id tells the scrub which snapshots may still see the text. */
const REDACT_SQL = `WITH done AS (
  UPDATE cplane_content_blocks SET text = NULL, redacted_by = $1 WHERE digest = ANY($2::bytea[]) AND text IS NOT NULL
  RETURNING 1
) SELECT count(*) AS n, (txid_current() % 4294967296)::text AS xid FROM done`;
/** Rows per page when verify walks the content tables, and the text fetched at once (a block may be large). */
const VERIFY_PAGE_ROWS = 2000;
const VERIFY_TEXT_BYTES = 16 << 20;
/** As SQLite's verify: the first problems are named, the rest only make it fail. */
const MAX_CONTENT_PROBLEMS = 20;
const LINKED_SQL = `SELECT ${linksTo(1)} AS linked`;
const COPY_SQL = `COPY cplane_entries (${ENTRY_COLUMNS}) FROM STDIN`;
/**
 * From this many entries a batch goes by COPY: it costs four more round trips than the one statement, and saves
 * the server parsing every column as an array (about half its time for a batch of 1000).
 */
export const COPY_FROM = 128;
/** Rows written to the COPY stream at a time, so the server inserts some while the rest are encoded. */
const COPY_CHUNK = 128;
const WALK_SQL = `WITH RECURSIVE walk(digest, parent, block, depth) AS (
  SELECT digest, parent, block, 0 FROM cplane_content_lists WHERE digest = $1
  UNION ALL
  SELECT l.digest, l.parent, l.block, w.depth + 1 FROM cplane_content_lists l JOIN walk w ON l.digest = w.parent
  WHERE w.depth < ${MAX_PIECES}
) SELECT encode(w.digest, 'hex') AS d, encode(w.parent, 'hex') AS p, encode(w.block, 'hex') AS b, b.size, b.text,
  b.redacted_by FROM walk w LEFT JOIN cplane_content_blocks b ON b.digest = w.block ORDER BY w.depth DESC`;
/** The walk from `head` back to the node whose parent is `$2` (a previous turn's prompt), as on SQLite. */
const WALK_SINCE_SQL = WALK_SQL.replace('WHERE w.depth <', 'WHERE w.parent <> $2 AND w.depth <');
const MAX_ATTEMPTS = 64;
/**
 * SQLSTATEs of a transaction the server aborted to break a cycle with another writer (deadlock, serialization
 * failure): nothing of it was written, so it runs again, a few times, after a short random pause so the two do not
 * meet again in step.
 */
const ABORTED = new Set(['40P01', '40001']);
const MAX_ABORTS = 5;
const ABORT_PAUSE_MS = 20;
/** Rows a query whose filter is checked in node (the work order) reads at a time. */
const QUERY_PAGE = 500;
const utf8 = (text: string): Buffer => Buffer.from(text, 'utf8');
const hex = (digest: string): Buffer => Buffer.from(digest, 'hex');

/** A list node as walked, with its block as an export line (undefined: the block is not stored). */
export interface WalkedNode {
  digest: string;
  parent: string;
  block: string;
  line: ContentBlockLine | undefined;
}

interface WalkRow {
  d: string;
  p: string;
  b: string;
  size: number | null;
  text: Buffer | null;
  redacted_by: string | null;
}

interface Head {
  seq: number;
  hash: string;
  latest: string;
}

interface Built {
  entry: LedgerEntry;
  metadataJson: string;
}

interface Rows {
  blocks: { digest: Buffer[]; size: number[]; text: Buffer[] };
  lists: { digest: Buffer[]; parent: Buffer[]; block: Buffer[] };
}

/** A connection URL must not carry a password: it would reach argv, logs and the ledger. */
export function refusePasswordInUrl(url: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new CpError('ERR_STORE_URL', 'the store URL is not a URL', {
      hint: 'e.g. postgres://cplane@db.internal:5432/cplane',
    });
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:')
    throw new CpError('ERR_STORE_URL', `the store URL must be postgres://…, got ${parsed.protocol}//…`, {
      hint: 'e.g. postgres://cplane@db.internal:5432/cplane',
    });
  // node-postgres also takes the password from a `password` query parameter, and prefers it to the userinfo's.
  if (parsed.password !== '' || parsed.searchParams.has('password'))
    throw new CpError('ERR_STORE_URL', 'the store URL holds a password; it would be seen in argv and logs', {
      hint: 'put the password in PGPASSWORD or a .pgpass file (PGPASSFILE) and drop it from the URL (userinfo and ?password=)',
    });
}

/**
 * The kernel ledger on PostgreSQL, for several gateway hosts sharing one chain. Appends from every process on
 * every host serialise inside the database on the chain's primary key (APPEND_SQL): one statement per append,
 * which lands whole or not at all; a writer that lost the race reads the head again and hashes anew. Committed
 * with the server's synchronous_commit (durable, as FULL is on SQLite).
 */
export class PgLedger implements LedgerStore, RedactionStore {
  readonly backend = 'postgres' as const;
  /** Appends that lost the race for their positions to another writer and were hashed again. */
  readonly stats = { conflicts: 0 };
  private head: Head | null = null;
  private idSource: IdSource | undefined;
  /** How the tables differ from cplane's layout, as read at open: any, and nothing is appended. */
  private schemaProblems: readonly string[] = [];
  private readonly commits = commitCount();

  private constructor(
    readonly pool: pg.Pool,
    private readonly clock: Clock,
    injectedIds: IdSource | undefined,
  ) {
    this.idSource = injectedIds;
  }

  static async open(url: string, options: PgLedgerOptions = {}): Promise<PgLedger> {
    refusePasswordInUrl(url);
    const pool = pgPool(url, options.poolSize ?? 4, options.timeouts);
    const ledger = new PgLedger(pool, options.clock ?? Date.now, options.idSource);
    try {
      const client = await pool.connect();
      // A connection dropped while checked out is also emitted as an 'error' event, which would end the process
      // unheard; the query in flight fails with it and is reported.
      client.on('error', ignoreDropped);
      try {
        const exists = await client.query("SELECT to_regclass('cplane_entries') IS NOT NULL AS present");
        // With create, the DDL runs every time (it is idempotent): a database laid out by an earlier cplane gets
        // today's functions and triggers.
        if (exists.rows[0]?.present !== true || options.create === true) {
          if (options.create !== true)
            throw new CpError('ERR_LEDGER_NOT_A_LEDGER', 'the database holds no cplane ledger', {
              hint: 'create it with `cplane ledger migrate --to URL`, or open it with create',
            });
          await client.query('BEGIN');
          await client.query(`SELECT pg_advisory_xact_lock(${PG_LEDGER_LOCK})`);
          await client.query(PG_LEDGER_DDL);
          await client.query(
            'INSERT INTO cplane_ledger_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING',
            [ID_START_KEY, idDigits(randomBytes(4).readUInt32BE(0))],
          );
          await client.query('COMMIT');
        }
        ledger.schemaProblems = await pgSchemaProblems(client);
      } finally {
        client.off('error', ignoreDropped);
        client.release();
      }
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
    return entries.map(({ entry }, i) => {
      const c = (prepared[i] as PreparedAppend).content;
      if (c !== undefined) entry.metadata = readView(entry.metadata, c.prompt.texts, c.response.texts);
      return entry;
    });
  }

  /**
   * Hashes `prepared` against the head and hands them to `write` until one lands: a lost race for the positions
   * (the primary key's unique violation, or `write` returning false because the head it hashed against is not
   * in the chain) reads the head and hashes again, as does a write the server aborted to break a deadlock (see
   * ABORTED); a connection lost after the call was sent asks the database whether the last entry is there before
   * answering. Every append to the chain goes through here.
   */
  private async appendChained(
    prepared: readonly PreparedAppend[],
    write: (hashed: Iterable<Built>, entries: Built[], head: Head) => Promise<boolean>,
    /**
     * Run once the head of an attempt is known, before hashing: may narrow `prepared` (AppendOptions.once). What it
     * reads is current as of that head: a writer that appends after it takes a position this attempt then loses.
     */
    narrow?: () => Promise<void>,
  ): Promise<Built[]> {
    this.refuseAlteredSchema();
    let aborts = 0;
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
      const head = this.head ?? (await coded(this.readHead()));
      this.idSource ??= await coded(this.storedIdSource());
      if (narrow !== undefined) {
        await coded(narrow());
        if (prepared.length === 0) return [];
      }
      // Filled as they are hashed: a large batch is hashed while the server inserts its first rows.
      const entries: Built[] = [];
      let written = false;
      try {
        // Nothing written: the head this writer hashed against is not in the chain (a restored database).
        if (!(await write(this.build(prepared, head), entries, head))) {
          this.head = null;
          this.stats.conflicts += 1;
          continue;
        }
        written = true;
      } catch (error) {
        this.head = null;
        const failed = error as { code?: string; constraint?: string };
        if (failed.code === '23505') {
          // Another writer (another host) took these positions first: read the head and hash against it again.
          if (failed.constraint === 'cplane_entries_pkey') {
            this.stats.conflicts += 1;
            continue;
          }
          // Ids taken by an imported chain: draw random ones and hash again.
          if (failed.constraint === 'cplane_entries_id_key') {
            this.idSource = randomEntryId;
            continue;
          }
        }
        if (typeof failed.code === 'string' && ABORTED.has(failed.code)) {
          aborts += 1;
          if (aborts < MAX_ABORTS) {
            await pause(ABORT_PAUSE_MS * aborts * (0.5 + Math.random()));
            continue;
          }
          throw new CpError(
            'ERR_LEDGER_CONTENDED',
            `the server aborted the write on each of its ${aborts} attempts to break a deadlock (or serialization failure) with other writers (${failed.code})`,
            {
              hint: 'too many writers at once on the same rows; the entries were not written, retry',
              details: { attempts: aborts, sqlstate: failed.code },
              cause: error,
            },
          );
        }
        const refused = refusedValues(error);
        if (refused !== undefined) throw refused;
        const coded = storeError(error);
        // The connection failed after the call was sent: it may have committed. Sending it again would write the
        // entries twice, so ask the database whether the last one is there, as hashed, before saying anything.
        if (coded instanceof CpError && coded.code === 'ERR_STORE_UNAVAILABLE') {
          const last = entries[entries.length - 1];
          const landed = last === undefined ? false : await this.holds(last.entry.id, last.entry.entry_hash);
          if (landed === true) written = true;
          else if (landed === null)
            throw new CpError(
              'ERR_STORE_UNAVAILABLE',
              `${coded.message}; whether the entries were written is unknown`,
              {
                hint: 'look for the entry id once the database is back: it is there whole or not at all',
                details: { ...coded.details, outcome: 'unknown', last_id: last?.entry.id ?? null },
                cause: error,
              },
            );
          else throw coded;
        } else throw coded;
      }
      if (!written) continue;
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

  /** Appends committed by this process, durable (synchronous_commit as the server has it) or not (off). */
  commitCount(): Readonly<CommitCount> {
    return this.commits;
  }

  /**
   * Writes one batch of `count` entries, hashed against `head` into `entries`, all or none; false when that head is
   * not in the chain. A large batch goes by COPY in a transaction (the rows are not parsed from arrays), a small one
   * is a single statement; one that need not be durable is that statement in a transaction with synchronous_commit
   * off (two round trips more, no wait for the WAL flush; the next durable commit's flush covers it).
   */
  private async write(
    hashed: Iterable<Built>,
    count: number,
    entries: Built[],
    head: Head,
    content: Rows,
    durable: boolean,
  ): Promise<boolean> {
    if (count >= COPY_FROM) return this.copy(hashed, entries, head, content, durable);
    for (const built of hashed) entries.push(built);
    // One statement (content and entries, all or none), named: planned once per connection.
    const withContent = content.blocks.digest.length > 0 || content.lists.digest.length > 0;
    const single = entries.length === 1 && !withContent ? entries[0] : undefined;
    const columns = single
      ? oneRowColumns(single, head.seq + 1)
      : [
          entries.map((_, i) => head.seq + i + 1),
          entries.map((e) => e.entry.id),
          entries.map((e) => e.entry.event_type),
          entries.map((e) => utf8(e.entry.submission_id)),
          entries.map((e) => utf8(e.entry.decision)),
          entries.map((e) => utf8(e.entry.reason)),
          entries.map((e) => e.metadataJson),
          entries.map((e) => e.entry.timestamp),
          entries.map((e) => e.entry.previous_hash),
          entries.map((e) => e.entry.entry_hash),
          entries.map((e) => indexed(e.entry.metadata.session_id)),
          entries.map((e) => indexed(e.entry.metadata.agent_id)),
        ];
    const contentColumns = withContent ? contentValues(content) : [];
    const statement = single
      ? { name: 'cplane_append_one', text: APPEND_ONE_SQL }
      : withContent
        ? { name: 'cplane_append_content', text: APPEND_WITH_CONTENT_SQL }
        : { name: 'cplane_append', text: APPEND_SQL };
    const query = { ...statement, values: [...contentColumns, ...columns, head.seq, head.hash] };
    const result = durable
      ? await this.pool.query(query)
      : await this.transaction(async (client) => ({ commit: true, value: await client.query(query) }), false);
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
    head: Head,
    content: Rows,
    durable: boolean,
  ): Promise<boolean> {
    return this.transaction(async (client) => {
      if (content.blocks.digest.length > 0 || content.lists.digest.length > 0)
        await client.query({ name: 'cplane_content', text: CONTENT_SQL, values: contentValues(content) });
      const linked = await client.query({ name: 'cplane_linked', text: LINKED_SQL, values: [head.seq, head.hash] });
      if ((linked.rows[0] as { linked?: boolean } | undefined)?.linked !== true) return { commit: false, value: false };
      await copyRows(client, hashed, entries, head.seq);
      return { commit: true, value: true };
    }, durable);
  }

  /**
   * `work` in one transaction on one connection: committed when it says so, else rolled back, and rolled back when
   * it throws. A connection that failed under the transaction is not handed to the next caller. Not `durable`: its
   * COMMIT does not wait for the WAL flush (SET LOCAL synchronous_commit, this transaction only).
   */
  private async transaction<T>(
    work: (client: pg.PoolClient) => Promise<{ commit: boolean; value: T }>,
    durable = true,
  ): Promise<T> {
    const client = await this.pool.connect();
    client.on('error', ignoreDropped);
    let failure: unknown;
    try {
      await client.query(durable ? 'BEGIN' : 'BEGIN; SET LOCAL synchronous_commit TO OFF');
      const { commit, value } = await work(client);
      await client.query(commit ? 'COMMIT' : 'ROLLBACK');
      return value;
    } catch (error) {
      failure = error;
      // A connection left waiting for an answer would only make the ROLLBACK wait as long: it is discarded instead.
      if (!timedOut(error)) await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.off('error', ignoreDropped);
      client.release(failure !== undefined && connectionUnusable(failure) ? (failure as Error) : undefined);
    }
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
      done = await this.redactWrite(hashed, entries, head, sorted);
      return done !== undefined;
    });
    const entry = (built as Built).entry;
    // Undefined: the commit's answer was lost, but the entry is there, so its UPDATE committed with it.
    done ??= await coded(this.redactedBy(entry.id));
    const scrubbed =
      options.vacuum === false
        ? { checkpointed: false, warnings: [VACUUM_SKIPPED, PG_RESIDUE] }
        : await scrubBlocks(this.pool, done.xid);
    return { entry, redacted: done.redacted, already: sorted.length - done.redacted, ...scrubbed };
  }

  /** The REDACTED entry and the UPDATE on one connection, committed together; undefined when `head` left the chain. */
  private async redactWrite(
    hashed: Iterable<Built>,
    entries: Built[],
    head: Head,
    sorted: readonly string[],
  ): Promise<{ redacted: number; xid: string } | undefined> {
    return this.transaction(async (client) => {
      // The entry before the UPDATE: a writer storing the block again waits on the UPDATE's row lock, so the
      // redaction must hold no row such a writer needs before it has taken its position, or the two deadlock.
      for (const one of hashed) entries.push(one);
      const inserted = await client.query({
        name: 'cplane_append_one',
        text: APPEND_ONE_SQL,
        values: [...oneRowColumns(entries[0] as Built, head.seq + 1), head.seq, head.hash],
      });
      if (inserted.rowCount === 0) return { commit: false, value: undefined };
      const updated = await client.query(REDACT_SQL, [(entries[0] as Built).entry.id, sorted.map(hex)]);
      const row = updated.rows[0] as { n: string; xid: string };
      return { commit: true, value: { redacted: Number(row.n), xid: row.xid } };
    });
  }

  /**
   * What a committed redaction did, read back. Its transaction id is unknown, so the scrub is given the next one
   * to be assigned: it then waits for every snapshot open now, which includes those older than the redaction.
   */
  private async redactedBy(id: string): Promise<{ redacted: number; xid: string }> {
    const r = await this.pool.query(
      `SELECT count(*) AS n, (txid_snapshot_xmax(txid_current_snapshot()) % 4294967296)::text AS xid
       FROM cplane_content_blocks WHERE redacted_by = $1`,
      [id],
    );
    const row = r.rows[0] as { n: string; xid: string };
    return { redacted: Number(row.n), xid: row.xid };
  }

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
    const ok = await this.transaction(async (client) => {
      await client.query(
        'INSERT INTO cplane_content_blocks (digest, size, text, redacted_by) SELECT * FROM unnest($1::bytea[], $2::int[], $3::bytea[], $4::text[]) ON CONFLICT (digest) DO NOTHING',
        [
          blocks.map((b) => hex(b.digest)),
          blocks.map((b) => b.size),
          blocks.map((b) => (b.text === undefined ? null : utf8(b.text))),
          blocks.map((b) => b.redacted_by ?? null),
        ],
      );
      // A migration continues exactly the head it was told: checked under the lock every DDL change takes.
      await client.query(`SELECT pg_advisory_xact_lock(${PG_LEDGER_LOCK})`);
      const head = await client.query('SELECT seq, entry_hash FROM cplane_entries ORDER BY seq DESC LIMIT 1');
      const at = head.rows[0] as { seq: string; entry_hash: string } | undefined;
      const ok = Number(at?.seq ?? 0) === expect.seq && (at?.entry_hash ?? GENESIS_HASH) === expect.hash;
      if (ok) {
        const metadata = rows.map((r) => JSON.parse(r.metadata) as Record<string, unknown>);
        await client.query(
          'INSERT INTO cplane_content_lists (digest, parent, block) SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::bytea[]) ON CONFLICT (digest) DO NOTHING',
          [lists.map((l) => hex(l.digest)), lists.map((l) => hex(l.parent)), lists.map((l) => hex(l.block))],
        );
        await client.query(APPEND_SQL, [
          rows.map((r) => r.seq),
          rows.map((r) => r.id),
          rows.map((r) => r.event_type),
          rows.map((r) => utf8(r.submission_id)),
          rows.map((r) => utf8(r.decision)),
          rows.map((r) => utf8(r.reason)),
          rows.map((r) => r.metadata),
          rows.map((r) => r.timestamp),
          rows.map((r) => r.previous_hash),
          rows.map((r) => r.entry_hash),
          metadata.map((m) => indexed(m.session_id)),
          metadata.map((m) => indexed(m.agent_id)),
          expect.seq,
          expect.hash,
        ]);
      }
      return { commit: ok, value: ok };
    }).catch((error: unknown) => {
      throw refusedValues(error) ?? storeError(error);
    });
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

  private *build(prepared: readonly PreparedAppend[], head: Head): Generator<Built> {
    let previous = head.hash;
    let latest = head.latest;
    const ids = this.idSource as IdSource;
    // A batch hashed within one millisecond formats it once.
    let lastMs = Number.NaN;
    let now = '';
    for (let i = 0; i < prepared.length; i += 1) {
      const input = prepared[i] as PreparedAppend;
      const ms = this.clock();
      if (ms !== lastMs) {
        lastMs = ms;
        now = new Date(ms).toISOString();
      }
      if (now > latest) latest = now;
      const id = ids(head.seq + i + 1, 0);
      const entryHash = sha256Hex(
        hashInputOf(
          id,
          input.event_type,
          input.submission_id,
          input.decision,
          input.reason,
          input.metadataJson,
          latest,
          previous,
        ),
      );
      const entry: LedgerEntry = {
        id,
        event_type: input.event_type,
        submission_id: input.submission_id,
        decision: input.decision,
        reason: input.reason,
        metadata: input.metadata,
        timestamp: latest,
        previous_hash: previous,
        entry_hash: entryHash,
      };
      previous = entryHash;
      yield { entry, metadataJson: input.metadataJson };
    }
  }

  /** The content nodes (and their blocks) past the longest prefix already stored, for every side of the batch. */
  private async newContent(prepared: readonly PreparedAppend[]): Promise<Rows> {
    const rows: Rows = { blocks: { digest: [], size: [], text: [] }, lists: { digest: [], parent: [], block: [] } };
    const sides: PreparedSide[] = [];
    for (const p of prepared) if (p.content !== undefined) sides.push(p.content.prompt, p.content.response);
    if (sides.length === 0) return rows;
    const all = sides.flatMap((s) => s.nodes);
    const stored = new Set(
      (
        await this.pool.query("SELECT encode(digest, 'hex') AS d FROM cplane_content_lists WHERE digest = ANY($1)", [
          all.map(hex),
        ])
      ).rows.map((r: { d: string }) => r.d),
    );
    const seenBlocks = new Set<string>();
    const seenNodes = new Set<string>();
    for (const side of sides) {
      let known = side.nodes.length;
      while (known > 0 && !stored.has(side.nodes[known - 1] as string)) known -= 1;
      for (let i = known; i < side.nodes.length; i += 1) {
        const node = side.nodes[i] as string;
        const block = side.blocks[i] as string;
        if (!seenBlocks.has(block)) {
          seenBlocks.add(block);
          const text = utf8(side.texts[i] as string);
          rows.blocks.digest.push(hex(block));
          rows.blocks.size.push(text.byteLength);
          rows.blocks.text.push(text);
        }
        if (!seenNodes.has(node)) {
          seenNodes.add(node);
          rows.lists.digest.push(hex(node));
          rows.lists.parent.push(hex(i === 0 ? EMPTY_LIST : (side.nodes[i - 1] as string)));
          rows.lists.block.push(hex(block));
        }
      }
    }
    return rows;
  }

  /** Whether entry `id` is stored with `hash`; null when the database cannot be asked. */
  private async holds(id: string, hash: string): Promise<boolean | null> {
    try {
      const r = await this.pool.query('SELECT entry_hash FROM cplane_entries WHERE id = $1', [id]);
      return (r.rows[0] as { entry_hash?: string } | undefined)?.entry_hash === hash;
    } catch {
      return null;
    }
  }

  private async readHead(on: Queryable = this.pool): Promise<Head> {
    const r = await on.query('SELECT seq, entry_hash, timestamp FROM cplane_entries ORDER BY seq DESC LIMIT 1');
    const row = r.rows[0] as { seq: string; entry_hash: string; timestamp: string } | undefined;
    return row === undefined
      ? { seq: 0, hash: GENESIS_HASH, latest: '' }
      : { seq: Number(row.seq), hash: row.entry_hash, latest: row.timestamp };
  }

  private async storedIdSource(): Promise<IdSource> {
    const r = await this.pool.query('SELECT value FROM cplane_ledger_meta WHERE key = $1', [ID_START_KEY]);
    const start = (r.rows[0] as { value?: string } | undefined)?.value;
    return start !== undefined && /^[0-9a-f]{8}$/.test(start)
      ? sequentialEntryIds(Number.parseInt(start, 16))
      : randomEntryId;
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

  /** One entry as a read shows it (prompt and response text in place of their digests). */
  /** dropRecorded with the chain's answers, asked first for each input `once` names (the filter is synchronous). */
  private async dropRecorded(prepared: PreparedAppend[], once: ReadonlySet<string>): Promise<void> {
    const held = new Set<PreparedAppend>();
    for (const input of prepared) if (onceKey(input, once) !== null && (await this.recorded(input))) held.add(input);
    dropRecorded(prepared, once, (input) => held.has(input));
  }

  /** Whether the chain holds an entry of this kind, submission and decision (found through its session's rows). */
  private async recorded(input: PreparedAppend): Promise<boolean> {
    const session = indexed(input.metadata.session_id);
    const found = await this.pool.query(
      `SELECT 1 FROM cplane_entries WHERE ${session === null ? 'session_id IS NULL AND $1::bytea IS NULL' : 'session_id = $1'}
       AND submission_id = $2 AND event_type = $3 AND decision = $4 LIMIT 1`,
      [session, utf8(input.submission_id), input.event_type, utf8(input.decision)],
    );
    return (found.rowCount ?? 0) > 0;
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

  /**
   * Every block and list node re-hashed (for verify and migrate), as the SQLite file's verify judges them: a block
   * without its text passes only when the REDACTED entry it names is in the chain and names it back, and a block
   * or list node that a stored node points to must be there. A superuser can disable the triggers that keep these
   * tables append-only; this is what catches what was done then.
   */
  async contentProblems(): Promise<ContentSummary> {
    // Read now, not at open: verify judges the tables as they are.
    const problems: string[] = (await coded(pgSchemaProblems(this.pool))).slice(0, MAX_CONTENT_PROBLEMS);
    // The first ones, as SQLite's verify keeps them: a store tampered with wholesale does not fill memory with words.
    const problem = (message: string): void => {
      if (problems.length < MAX_CONTENT_PROBLEMS) problems.push(message);
    };
    // The REDACTED entries blocks name, read as named (after the page that showed the block emptied, so a redaction
    // committed meanwhile is seen whole: its entry and its UPDATE are one transaction).
    const redactions = new Map<string, Set<string>>();
    const names = async (id: string, digest: string): Promise<boolean> => {
      let named = redactions.get(id);
      if (named === undefined) {
        const r = await this.pool.query(
          "SELECT metadata FROM cplane_entries WHERE id = $1 AND event_type = 'REDACTED'",
          [id],
        );
        const blocks = (r.rows[0] as { metadata: string } | undefined)?.metadata;
        const listed = blocks === undefined ? undefined : parseStoredMetadata({ id, metadata: blocks }).blocks;
        named = new Set(Array.isArray(listed) ? listed.filter((b): b is string => typeof b === 'string') : []);
        redactions.set(id, named);
      }
      return named.has(digest);
    };
    // Every REDACTED entry committed before the blocks are read: a block one of them names that holds text again
    // had it put back outside the ledger (its digest still matches). One committed later empties its blocks in
    // the same transaction, so the pages below never see its blocks with text.
    const removedBy = new Map<string, string>();
    const known = await this.pool.query("SELECT id, metadata FROM cplane_entries WHERE event_type = 'REDACTED'");
    for (const row of known.rows as { id: string; metadata: string }[]) {
      let listed: unknown;
      try {
        listed = (JSON.parse(row.metadata) as { blocks?: unknown } | null)?.blocks;
      } catch {
        // Metadata that is not JSON is the chain check's finding; such an entry names no block.
      }
      const named = new Set(Array.isArray(listed) ? listed.filter((b): b is string => typeof b === 'string') : []);
      redactions.set(row.id, named);
      for (const digest of named) removedBy.set(digest, row.id);
    }
    // Page by digest, the text fetched a bounded number of bytes at a time: a store of any size is verified in
    // bounded memory.
    let blocks = 0;
    let redacted = 0;
    let after: Buffer = Buffer.alloc(0);
    for (;;) {
      const page = await this.pool.query(
        `SELECT digest, size, text IS NULL AS gone, redacted_by FROM cplane_content_blocks
         WHERE digest > $1 ORDER BY digest LIMIT ${VERIFY_PAGE_ROWS}`,
        [after],
      );
      const rows = page.rows as { digest: Buffer; size: number; gone: boolean; redacted_by: string | null }[];
      if (rows.length === 0) break;
      blocks += rows.length;
      after = (rows[rows.length - 1] as { digest: Buffer }).digest;
      let batch: Buffer[] = [];
      let batchBytes = 0;
      const sizes = new Map<string, number>();
      const check = async (): Promise<void> => {
        if (batch.length === 0) return;
        const texts = await this.pool.query('SELECT digest, text FROM cplane_content_blocks WHERE digest = ANY($1)', [
          batch,
        ]);
        for (const t of texts.rows as { digest: Buffer; text: Buffer | null }[]) {
          const d = t.digest.toString('hex');
          // Emptied since the page was read: by a redaction committed meanwhile, which the next verify judges.
          if (t.text === null) continue;
          if (t.text.byteLength !== sizes.get(d) || blockDigest(t.text.toString('utf8')) !== d)
            problem(`block ${d} was edited`);
          else if (removedBy.has(d))
            problem(`block ${d} holds text, but REDACTED entry ${removedBy.get(d)} removed it: it was put back`);
        }
        batch = [];
        batchBytes = 0;
      };
      for (const b of rows) {
        const d = b.digest.toString('hex');
        if (b.gone) {
          if (b.redacted_by !== null && (await names(b.redacted_by, d))) redacted += 1;
          else
            problem(
              `block ${d} has no text and no REDACTED entry in the chain names it: it was removed outside \`cplane ledger redact\``,
            );
          continue;
        }
        sizes.set(d, b.size);
        batch.push(b.digest);
        batchBytes += b.size;
        if (batchBytes >= VERIFY_TEXT_BYTES) await check();
      }
      await check();
    }
    let lists = 0;
    after = Buffer.alloc(0);
    for (;;) {
      const page = await this.pool.query(
        `SELECT digest, parent, block FROM cplane_content_lists WHERE digest > $1 ORDER BY digest LIMIT ${VERIFY_PAGE_ROWS}`,
        [after],
      );
      const rows = page.rows as { digest: Buffer; parent: Buffer; block: Buffer }[];
      if (rows.length === 0) break;
      lists += rows.length;
      after = (rows[rows.length - 1] as { digest: Buffer }).digest;
      for (const l of rows) {
        const d = l.digest.toString('hex');
        if (listDigest(l.parent.toString('hex'), l.block.toString('hex')) !== d) problem(`list node ${d} was edited`);
      }
    }
    // Every list an entry commits to must be stored: a deleted head node has no child left to miss it.
    let afterSeq = 0;
    for (;;) {
      const page = await this.pool.query(
        `SELECT seq, id, metadata FROM cplane_entries WHERE seq > $1 AND strpos(metadata, '"content":{') > 0
         ORDER BY seq LIMIT ${VERIFY_PAGE_ROWS}`,
        [afterSeq],
      );
      const rows = page.rows as { seq: string; id: string; metadata: string }[];
      if (rows.length === 0) break;
      afterSeq = Number((rows[rows.length - 1] as { seq: string }).seq);
      const named = new Map<string, string>();
      for (const row of rows) {
        const refs = contentRefs(parseStoredMetadata(row));
        if (refs === undefined) continue;
        for (const head of [refs.prompt, refs.response])
          if (head !== EMPTY_LIST && !named.has(head)) named.set(head, row.id);
      }
      if (named.size === 0) continue;
      const missing = await this.pool.query(
        `SELECT encode(d, 'hex') AS d FROM unnest($1::bytea[]) AS d
         WHERE NOT EXISTS (SELECT 1 FROM cplane_content_lists WHERE digest = d)`,
        [[...named.keys()].map(hex)],
      );
      for (const m of missing.rows as { d: string }[])
        problem(`list node ${m.d} (the content of entry ${named.get(m.d)}) is missing: it was deleted`);
    }
    const orphans = await this.pool.query(
      `SELECT encode(l.digest, 'hex') AS d, encode(l.parent, 'hex') AS p, encode(l.block, 'hex') AS b,
         p.digest IS NOT NULL AS has_parent, b.digest IS NOT NULL AS has_block
       FROM cplane_content_lists l
       LEFT JOIN cplane_content_lists p ON p.digest = l.parent LEFT JOIN cplane_content_blocks b ON b.digest = l.block
       WHERE (l.parent <> $1 AND p.digest IS NULL) OR b.digest IS NULL LIMIT ${MAX_CONTENT_PROBLEMS}`,
      [hex(EMPTY_LIST)],
    );
    for (const o of orphans.rows as { d: string; p: string; b: string; has_parent: boolean; has_block: boolean }[]) {
      if (!o.has_block) problem(`block ${o.b} (in list node ${o.d}) is missing: it was deleted`);
      if (!o.has_parent) problem(`list node ${o.p} (parent of ${o.d}) is missing: it was deleted`);
    }
    return { blocks, lists, redacted_blocks: redacted, problems };
  }
}

/** The pool, or one connection inside a transaction (an export's snapshot). */
type Queryable = pg.Pool | pg.PoolClient;

/** Streams the rows in chunks as they are hashed (into `entries`): the server inserts some while the next are hashed. */
async function copyRows(
  client: pg.PoolClient,
  hashed: Iterable<Built>,
  entries: Built[],
  headSeq: number,
): Promise<void> {
  const stream = client.query(copyFrom(COPY_SQL));
  const done = finished(stream);
  // The server may refuse a row (a lost race) while later ones are still being hashed: its error is what `done`
  // rejects with, awaited below; meanwhile nothing more is written.
  let refused = false;
  done.catch(() => {
    refused = true;
  });
  try {
    let text = '';
    for (const built of hashed) {
      if (refused) break;
      const i = entries.push(built) - 1;
      const { entry, metadataJson } = built;
      const session = indexedText(entry.metadata.session_id);
      const agent = indexedText(entry.metadata.agent_id);
      text += `${headSeq + i + 1}\t${copyText(entry.id)}\t${copyText(entry.event_type)}\t${copyBytea(entry.submission_id)}\t${copyBytea(entry.decision)}\t${copyBytea(entry.reason)}\t${copyText(metadataJson)}\t${copyText(entry.timestamp)}\t${copyText(entry.previous_hash)}\t${copyText(entry.entry_hash)}\t${session === null ? COPY_NULL : copyBytea(session)}\t${agent === null ? COPY_NULL : copyBytea(agent)}\n`;
      if ((i + 1) % COPY_CHUNK === 0) {
        stream.write(text);
        text = '';
        // Lets the connection send it (and read the server's go-ahead) before the next chunk is encoded.
        await new Promise(setImmediate);
      }
    }
    if (!refused) stream.end(text);
  } catch (error) {
    // Hashing failed half-way: CopyFail, so the server abandons the COPY and the connection can roll back.
    stream.destroy(error as Error);
    await done.catch(() => undefined);
    throw error;
  }
  await done;
}

/** The parameters $1..$12 of APPEND_ONE_SQL: one entry at `seq`. */
function oneRowColumns({ entry, metadataJson }: Built, seq: number): unknown[] {
  return [
    seq,
    entry.id,
    entry.event_type,
    utf8(entry.submission_id),
    utf8(entry.decision),
    utf8(entry.reason),
    metadataJson,
    entry.timestamp,
    entry.previous_hash,
    entry.entry_hash,
    indexed(entry.metadata.session_id),
    indexed(entry.metadata.agent_id),
  ];
}

/** A walked row as walk() and walkSince() give it. */
function walkedNode(row: WalkRow): WalkedNode {
  return {
    digest: row.d,
    parent: row.p,
    block: row.b,
    line:
      row.size === null
        ? undefined
        : row.text !== null
          ? { digest: row.b, size: row.size, text: row.text.toString('utf8') }
          : { digest: row.b, size: row.size, ...(row.redacted_by === null ? {} : { redacted_by: row.redacted_by }) },
  };
}

/** The parameters $1..$6 of CONTENT_SQL and APPEND_WITH_CONTENT_SQL. */
function contentValues(content: Rows): unknown[] {
  const { blocks, lists } = content;
  return [blocks.digest, blocks.size, blocks.text, lists.digest, lists.parent, lists.block];
}

/** A row of cplane_entries as the stores' common EntryRow (free text back from the UTF-8 bytes that are hashed). */
export function entryRowOf(row: Record<string, unknown>): EntryRow {
  return {
    seq: Number(row.seq),
    id: row.id as string,
    event_type: row.event_type as string,
    submission_id: (row.submission_id as Buffer).toString('utf8'),
    decision: (row.decision as Buffer).toString('utf8'),
    reason: (row.reason as Buffer).toString('utf8'),
    metadata: row.metadata as string,
    timestamp: row.timestamp as string,
    previous_hash: row.previous_hash as string,
    entry_hash: row.entry_hash as string,
  };
}

function indexedText(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

function indexed(value: unknown): Buffer | null {
  return typeof value === 'string' && value !== '' ? utf8(value) : null;
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A database call whose failure reaches the caller as a coded error. */
async function coded<T>(promise: Promise<T>): Promise<T> {
  try {
    return await promise;
  } catch (error) {
    throw storeError(error);
  }
}

/**
 * The connection dropped under a query (the server restarted or was stopped, a proxy cut an idle connection):
 * node-postgres reports it with no code, only these messages.
 */
export function connectionLost(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown };
  return (
    e?.code === undefined &&
    typeof e?.message === 'string' &&
    /^(Connection terminated|Client has encountered a connection error)/.test(e.message)
  );
}

/**
 * The server did not answer in time (see PgTimeouts): node-postgres reports it with no code, only these messages.
 * The connection may still be waiting for the answer, so it is not handed to the next caller.
 */
export function timedOut(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown };
  return (
    e?.code === undefined &&
    typeof e?.message === 'string' &&
    /^(Query read timeout|timeout exceeded when trying to connect|Connection terminated due to connection timeout)/.test(
      e.message,
    )
  );
}

/** A connection that failed this way is discarded, not handed back to the pool. */
export function connectionUnusable(error: unknown): boolean {
  return connectionLost(error) || timedOut(error);
}

/** A PostgreSQL failure as the caller should see it: the server or network unable to serve is ERR_STORE_UNAVAILABLE. */
export function storeError(error: unknown): unknown {
  if (error instanceof CpError) return error;
  const e = error as { code?: string; message?: string; syscall?: unknown };
  // The network, and the SQLSTATE classes of a server that cannot take the write: connection (08), credentials
  // (28), no such database (3D), out of resources such as a full disk (53), shutting down (57); and a server that
  // takes no writes at all: read-only (25006: a standby the URL now reaches, a database set read-only) or a role
  // without the rights (42501). Nothing was written in any of them, and the call can succeed once fixed. Any failed
  // connect or name lookup is the URL's or the network's: a `?host=` socket directory that is missing or a file
  // fails with ENOENT or ENOTDIR, an unroutable address with ENETUNREACH.
  if (
    connectionUnusable(error) ||
    e.syscall === 'connect' ||
    e.syscall === 'getaddrinfo' ||
    (typeof e.code === 'string' &&
      /^(ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EHOSTUNREACH|25006|42501|(08|28|3D|53|57)[0-9A-Z]{3})$/.test(
        e.code,
      ))
  )
    return new CpError(
      'ERR_STORE_UNAVAILABLE',
      `the PostgreSQL store cannot take the request: ${e.message ?? e.code}`,
      {
        hint: 'check the server is up and the primary, the URL (host, port, database), the credentials (PGPASSWORD, .pgpass), that the role may write the cplane_* tables, and its disk; nothing was written',
        details: { errno: e.code },
        cause: error,
      },
    );
  return error;
}

/**
 * The server refusing a value of the entries themselves (SQLSTATE class 22, a data exception; 54, a program limit
 * such as an index row over its size: a session id of a few KiB): writing them again can never succeed, so it is
 * the entries' fault, coded as SQLite's refusals of an entry are (a spool sets such a batch aside).
 */
function refusedValues(error: unknown): CpError | undefined {
  const e = error as { code?: unknown; message?: unknown };
  if (error instanceof CpError || typeof e?.code !== 'string' || !/^(22|54)[0-9A-Z]{3}$/.test(e.code)) return undefined;
  return new CpError(
    'ERR_LEDGER_ENTRY_INVALID',
    `PostgreSQL refused a value of the entries (${e.code}: ${String(e.message)}); nothing was written`,
    {
      hint: 'shorten or fix the value the message names (an id stored in an index must stay under about 2 KiB)',
      details: { sqlstate: e.code },
      cause: error,
    },
  );
}

/** For a checked-out connection's 'error' event (the query in flight fails with the same error): see open(). */
export function ignoreDropped(): void {}
