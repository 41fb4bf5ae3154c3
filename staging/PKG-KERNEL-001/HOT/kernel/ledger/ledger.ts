import type Database from 'better-sqlite3';
import { CpError, type ErrorCode, show } from '../errors.js';
import { envError } from '../env-errors.js';
import { canonicalJson, sha256Hex } from '../canonical.js';
import { wellFormed, wellFormedDeep } from '../text.js';
import {
  type AppendInput,
  type Anchor,
  type Clock,
  type IdSource,
  type LedgerEntry,
  type HashColumns,
  GENESIS_HASH,
  entryIdValue,
  hashInputOf,
  idDigits,
  randomEntryId,
  sequentialEntryIds,
} from './entry.js';
import {
  damaged,
  ID_START_KEY,
  isCorruption,
  notALedger,
  openLedgerDatabase,
  type ConnectionOptions,
  type Synchronous,
} from './open.js';
import { type CommitCount, SqliteCommits } from './commits.js';
import { schemaProblems, type SchemaProblem } from './schema-check.js';
import { compileQuery, HISTORY_SQL, ROW_COLUMNS, type CompiledQuery, type LedgerQuery } from './query.js';
import { formatVersion, hashHex, insertRowSql, TIMESTAMP_INDEX, TIMESTAMP_INDEX_DDL } from './schema.js';
import { seqRangeForTimes, type SeqRange } from './time-range.js';
import { refuseIllFormed, validateAppendInput } from './validate.js';
import { ContentStore, contentRefs, prepareContent, type ImportContent, type PreparedContent } from './content.js';
import { rootPaths } from '../root/layout.js';
import { type RedactionStore, type RedactRecord, type RedactResult, redactedAppend } from './redaction.js';

export type { Synchronous } from './open.js';
export type { LedgerQuery } from './query.js';

export interface LedgerOptions extends ConnectionOptions {
  /** The writer's clock: entry timestamps. */
  clock?: Clock;
  idSource?: IdSource;
  /** How far ahead of real time an entry's timestamp may be (default 5 minutes, 1 s to 24 h). */
  maxClockSkewMs?: number;
  /** Real time, against which the writer's clock and the head's timestamp are judged (default the system clock). */
  realClock?: Clock;
}

export const DEFAULT_MAX_CLOCK_SKEW_MS = 5 * 60_000;
const CLOCK_SKEW_BOUNDS_MS = [1000, 24 * 60 * 60_000] as const;

function clockSkewOption(value: number | undefined): number {
  if (value === undefined) return DEFAULT_MAX_CLOCK_SKEW_MS;
  if (!Number.isSafeInteger(value) || value < CLOCK_SKEW_BOUNDS_MS[0] || value > CLOCK_SKEW_BOUNDS_MS[1]) {
    throw new CpError(
      'ERR_LEDGER_OPTION_INVALID',
      `maxClockSkewMs must be an integer from ${CLOCK_SKEW_BOUNDS_MS[0]} to ${CLOCK_SKEW_BOUNDS_MS[1]}, got ${show(value)}`,
      {
        hint: `leave it unset for the default of ${DEFAULT_MAX_CLOCK_SKEW_MS} ms`,
        details: { field: 'maxClockSkewMs' },
      },
    );
  }
  return value;
}

/** A stored row: the hashed columns plus the chain position and the hash. */
export interface EntryRow extends HashColumns {
  seq: number;
  entry_hash: string;
}

/**
 * A row as an array, in ROW_COLUMNS order: the cheap shape for walking the whole chain. The last element is
 * 1 when metadata is well-formed JSON whose top level is an object (checked by SQLite, without a JS parse).
 */
export type RawRow = [number, string, string, string, string, string, string, string, string, string, number];

const MAX_ID_ATTEMPTS = 16;

/** An object of statements, each prepared the first time it is read and kept from then on. */
function preparedOnFirstUse<T extends Record<string, () => unknown>>(makers: T): { [K in keyof T]: ReturnType<T[K]> } {
  const out = {} as { [K in keyof T]: ReturnType<T[K]> };
  for (const key of Object.keys(makers) as (keyof T & string)[]) {
    Object.defineProperty(out, key, {
      configurable: true,
      get: () => {
        const statement = (makers[key] as () => unknown)();
        Object.defineProperty(out, key, { value: statement });
        return statement;
      },
    });
  }
  return out;
}

function isIdCollision(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown };
  return e.code === 'SQLITE_CONSTRAINT_UNIQUE' && typeof e.message === 'string' && e.message.includes('entries.id');
}

export function ledgerPathForRoot(root: string): string {
  return rootPaths(root).ledgerFile;
}

/** A stored row's metadata; text that is not a JSON object means the file was edited outside cplane. */
export function parseStoredMetadata(row: { id: string; metadata: string }): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(row.metadata);
  } catch {
    value = undefined;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new CpError('ERR_LEDGER_DAMAGED', `ledger entry ${row.id} has metadata that is not a JSON object`, {
      hint: 'run `cplane ledger verify` to see what was edited; restore the ledger from a copy or an export',
      details: { entry: row.id, metadata: row.metadata.slice(0, 200) },
    });
  }
  return value as Record<string, unknown>;
}

export function rowToEntry(row: EntryRow): LedgerEntry {
  return {
    id: row.id,
    event_type: row.event_type,
    submission_id: row.submission_id,
    decision: row.decision,
    reason: row.reason,
    metadata: parseStoredMetadata(row),
    timestamp: row.timestamp,
    previous_hash: row.previous_hash,
    entry_hash: row.entry_hash,
  };
}

/** How an append treats records a crash may have left half-delivered (ledger.appendBatch, PgLedger.appendBatch). */
export interface AppendOptions {
  /**
   * Event types appended at most once per (event_type, submission_id, decision): an input of one of these kinds
   * that the chain already holds is left out, checked where appends are serialised, so two writers delivering
   * the same record (a budget outbox drained while a spool is) record it once. Inputs with content are always
   * appended. The entries returned are the ones appended.
   */
  once?: readonly string[];
  /**
   * Whether the commit must reach the disk before the append resolves (default true). False: written without its
   * own fsync (SQLite synchronous=NORMAL, PostgreSQL synchronous_commit off), made durable by the next durable
   * commit of the same store; a process crash keeps it, a power loss before that commit may not.
   */
  durable?: boolean;
}

/** An input the chain already holds by its (event_type, submission_id, decision), among those `once` names. */
export function onceKey(
  input: Pick<PreparedAppend, 'event_type' | 'submission_id' | 'decision' | 'content'>,
  once: ReadonlySet<string>,
): string | null {
  return input.content === undefined && once.has(input.event_type)
    ? JSON.stringify([input.event_type, input.submission_id, input.decision])
    : null;
}

/**
 * Removes from `prepared`, in place, the inputs of `once` kinds that `recorded` says the chain holds, and repeats of
 * an earlier input of the batch: the one filter of every store, each asking its own database.
 */
export function dropRecorded(
  prepared: PreparedAppend[],
  once: ReadonlySet<string>,
  recorded: (input: PreparedAppend) => boolean,
): void {
  const seen = new Set<string>();
  let kept = 0;
  for (const input of prepared) {
    const key = onceKey(input, once);
    if (key !== null) {
      if (seen.has(key) || recorded(input)) continue;
      seen.add(key);
    }
    prepared[kept] = input;
    kept += 1;
  }
  prepared.length = kept;
}

/** An append validated, made well-formed and canonicalised: what any ledger store writes (and hashes). */
export interface PreparedAppend {
  event_type: string;
  submission_id: string;
  decision: string;
  reason: string;
  metadata: Record<string, unknown>;
  metadataJson: string;
  content?: PreparedContent;
}

/** Validates and canonicalises one append outside any lock: the same for every ledger store. */
export function prepareAppend(input: AppendInput, index = 0): PreparedAppend {
  return wellFormedAppend(validateAppendInput(input, index) as PreparedAppend, input, index);
}

/**
 * The entry with every string (metadata keys too) well-formed, and its metadata's canonical JSON: what is
 * hashed is exactly what SQLite stores and gives back. JSON.stringify writes a lone surrogate as a `\udXXX`
 * escape, so metadata without that text needs no walk.
 */
function wellFormedAppend(input: PreparedAppend, raw: AppendInput, index: number): PreparedAppend {
  // Digests in metadata.content are the store's to write: a hand-made one would name content that is not there.
  if (raw.content === undefined && contentRefs(input.metadata) !== undefined) {
    throw new CpError(
      'ERR_LEDGER_ENTRY_INVALID',
      `metadata.content${index === 0 ? '' : ` (batch item ${index})`} holds content digests, which only the content store writes`,
      {
        hint: 'pass the text as content: {prompt: [...pieces], response: [...pieces]} and the ledger stores it',
        details: { field: 'metadata.content' },
      },
    );
  }
  if (raw.content !== undefined) {
    const content = prepareContent(raw.content, index === 0 ? 'content' : `content (batch item ${index})`);
    const { prompt: _prompt, response: _response, ...rest } = input.metadata;
    input.metadata = { ...rest, content: { prompt: content.prompt.head, response: content.response.head } };
    input.content = content;
  }
  input.event_type = wellFormed(input.event_type);
  input.submission_id = wellFormed(input.submission_id);
  input.decision = wellFormed(input.decision);
  input.reason = wellFormed(input.reason);
  input.metadataJson = canonicalMetadata(input.metadata);
  if (input.metadataJson.includes('\\ud')) {
    input.metadata = wellFormedDeep(input.metadata, (key) => {
      throw new CpError(
        'ERR_LEDGER_ENTRY_INVALID',
        `metadata${index === 0 ? '' : ` (batch item ${index})`} has two keys that both read ${show(key)} once their broken UTF-16 is replaced`,
        {
          hint: 'metadata keys must be well-formed text',
          details: { field: 'metadata', key },
        },
      );
    });
    input.metadataJson = canonicalMetadata(input.metadata);
  }
  return input;
}

/**
 * Metadata's canonical JSON. Metadata nested hundreds of thousands of levels (a JSON text of brackets) overflows
 * the stack of any recursive walk: it is the entry's fault, refused as SQLite refuses anything past its limit.
 */
function canonicalMetadata(metadata: Record<string, unknown>): string {
  try {
    return canonicalJson(metadata);
  } catch (error) {
    if (error instanceof RangeError && /call stack/i.test(error.message))
      throw tooDeep('ERR_LEDGER_ENTRY_INVALID', error);
    throw error;
  }
}

function tooDeep(code: ErrorCode, cause: unknown): CpError {
  return new CpError(
    code,
    "metadata is nested too deeply for SQLite's JSON functions (about 1000 levels); nothing was written",
    {
      hint: 'flatten the metadata, or store deep values as a string',
      details: { field: 'metadata' },
      cause,
    },
  );
}

/**
 * Metadata with `content` replaced by the text it stands for, keys in sorted order. Text given as pieces is
 * joined when first read: the hot path (the router keeps only the entry's id) never pays for joining a
 * 150k-token conversation it already has.
 */
export function readView(
  metadata: Record<string, unknown>,
  prompt: string | readonly string[],
  response: string | readonly string[],
): Record<string, unknown> {
  const { content: _content, ...rest } = metadata;
  const out: Record<string, unknown> = {};
  const text = { prompt, response } as const;
  for (const key of [...Object.keys(rest), 'prompt', 'response'].sort()) {
    const value = key === 'prompt' || key === 'response' ? text[key] : rest[key];
    if (typeof value === 'string' || !(key === 'prompt' || key === 'response')) {
      // defineProperty: a stored "__proto__" key stays data, never a prototype change.
      Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
      continue;
    }
    Object.defineProperty(out, key, {
      enumerable: true,
      configurable: true,
      get() {
        const joined = (value as readonly string[]).join('');
        Object.defineProperty(out, key, { value: joined, enumerable: true, writable: true, configurable: true });
        return joined;
      },
    });
  }
  return out;
}

/** The kernel ledger: an append-only, hash-chained SQLite table safe for concurrent appenders. */
export class Ledger {
  readonly path: string;
  readonly db: Database.Database;
  private readonly clock: Clock;
  /** Injected, or read from ledger_meta at the first append (undefined until then). */
  private idSource: IdSource | undefined;
  private readonly idsInjected: boolean;
  private lastMs = Number.NaN;
  private lastIso = '';
  private readonly stmts;
  /** How this file's schema differs from the ledger's (checked at open, and again when the schema changes). */
  private schema: { version: number; problems: SchemaProblem[] };
  private readonly queryCache = new Map<string, Database.Statement>();
  /** Built once: better-sqlite3 prepares BEGIN/COMMIT per transaction() call. */
  private readonly appendTx: Database.Transaction<
    (prepared: PreparedAppend[], once?: ReadonlySet<string>) => LedgerEntry[]
  >;

  private readonly realClock: Clock;
  private readonly maxSkewMs: number;
  /** The exchange content store in this file (content.ts). */
  readonly content: ContentStore;
  /** ledger_meta's format_version, read once at open: it decides how rows keep their hashes (schema.ts). */
  readonly formatVersion: string;
  /** The commits of this connection's appends, made durable or not as each asks (commits.ts). */
  private readonly commits: SqliteCommits;

  private constructor(
    path: string,
    db: Database.Database,
    clock: Clock,
    idSource: IdSource | undefined,
    realClock: Clock,
    maxSkewMs: number,
    synchronous: Synchronous,
  ) {
    this.path = path;
    this.commits = new SqliteCommits(db, synchronous);
    this.db = db;
    this.clock = clock;
    this.realClock = realClock;
    this.maxSkewMs = maxSkewMs;
    this.idsInjected = idSource !== undefined;
    this.content = new ContentStore(db);
    this.formatVersion = formatVersion(db);
    // Prepared on first use: a gate or a command that only reads pays for the statements it runs.
    this.stmts = preparedOnFirstUse({
      head: () =>
        db.prepare(`SELECT seq, ${hashHex('entry_hash')}, timestamp FROM entries ORDER BY seq DESC LIMIT 1`).raw(),
      hashAt: () => db.prepare(`SELECT ${hashHex('entry_hash')} FROM entries WHERE seq = ?`).pluck(),
      timeProbe: () => db.prepare('SELECT seq, timestamp FROM entries WHERE seq >= ? ORDER BY seq LIMIT 1').raw(),
      timestampIndex: () => db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?").pluck(),
      count: () => db.prepare('SELECT count(*) FROM entries').pluck(),
      insert: () => db.prepare(insertRowSql(this.formatVersion)),
      byId: () => db.prepare(`SELECT ${ROW_COLUMNS} FROM entries WHERE id = ?`),
      bySeq: () => db.prepare(`SELECT ${ROW_COLUMNS} FROM entries WHERE seq = ?`),
      chunk: () =>
        db
          .prepare(
            `SELECT ${ROW_COLUMNS}, json_valid(metadata) AND substr(metadata, 1, 1) = '{' FROM entries WHERE seq > ? ORDER BY seq ASC LIMIT ?`,
          )
          .raw(),
      history: () => db.prepare(HISTORY_SQL),
      recorded: () =>
        db.prepare('SELECT 1 FROM entries WHERE submission_id = ? AND event_type = ? AND decision = ? LIMIT 1').pluck(),
      idStart: () => db.prepare('SELECT value FROM ledger_meta WHERE key = ?').pluck(),
      setIdStart: () => db.prepare('INSERT OR REPLACE INTO ledger_meta (key, value) VALUES (?, ?)'),
      schemaVersion: () => db.prepare('PRAGMA schema_version').pluck(),
    });
    // The one statement prepared at open: it names every column, so a file whose table is not the ledger's fails here.
    void this.stmts.bySeq;
    this.schema = {
      version: this.stmts.schemaVersion.get() as number,
      problems: schemaProblems(db, this.formatVersion),
    };
    this.idSource = idSource;
    this.appendTx = db.transaction((prepared: PreparedAppend[], once?: ReadonlySet<string>) => {
      this.refuseAlteredSchema();
      // Inside the write lock: no other writer can append the same record between this look and the insert.
      if (once !== undefined)
        dropRecorded(
          prepared,
          once,
          (input) => this.stmts.recorded.get(input.submission_id, input.event_type, input.decision) !== undefined,
        );
      let [seq, previous, latest] = this.headTuple();
      const limitMs = this.realClock() + this.maxSkewMs;
      // A head dated beyond the skew (a writer whose clock ran ahead) is not followed: entries keep real time, so
      // time order leaves chain order and time ranges need the timestamp index.
      if (latest !== '' && Date.parse(latest) > limitMs) {
        latest = '';
        this.ensureTimestampIndex();
      }
      const entries = new Array<LedgerEntry>(prepared.length);
      for (let i = 0; i < prepared.length; i += 1) {
        const input = prepared[i] as PreparedAppend;
        if (input.content !== undefined) {
          this.content.ensure();
          this.content.storeSide(input.content.prompt);
          this.content.storeSide(input.content.response);
        }
        seq += 1;
        // Never earlier than the head (a clock stepped back, another process's clock behind): time order is chain order.
        const now = this.now(limitMs);
        if (now > latest) latest = now;
        const entry: LedgerEntry = {
          id: '',
          event_type: input.event_type,
          submission_id: input.submission_id,
          decision: input.decision,
          reason: input.reason,
          metadata: input.metadata,
          timestamp: latest,
          previous_hash: previous,
          entry_hash: '',
        };
        this.insertWithFreshId(seq, entry, input.metadataJson);
        previous = entry.entry_hash;
        entries[i] = entry;
      }
      return entries;
    });
  }

  /** The clock as ISO-8601; a batch appended within one millisecond formats it once. Refused past `limitMs`. */
  private now(limitMs: number): string {
    const ms = this.clock();
    if (!(ms <= limitMs)) {
      throw new CpError(
        'ERR_LEDGER_CLOCK_SKEW',
        `the writer's clock reads ${Number.isFinite(ms) ? new Date(ms).toISOString() : show(ms)}, more than ${this.maxSkewMs} ms ahead of real time ${new Date(limitMs - this.maxSkewMs).toISOString()}; nothing was appended`,
        {
          hint: 'fix the clock of the process that writes to the ledger (or its injected clock)',
          details: { clock_ms: Number.isFinite(ms) ? ms : null, max_skew_ms: this.maxSkewMs },
        },
      );
    }
    if (ms !== this.lastMs) {
      this.lastMs = ms;
      this.lastIso = new Date(ms).toISOString();
    }
    return this.lastIso;
  }

  static open(path: string, options: LedgerOptions = {}): Ledger {
    const maxSkewMs = clockSkewOption(options.maxClockSkewMs);
    const db = openLedgerDatabase(path, options);
    try {
      return new Ledger(
        path,
        db,
        options.clock ?? Date.now,
        options.idSource,
        options.realClock ?? Date.now,
        maxSkewMs,
        options.synchronous ?? 'FULL',
      );
    } catch (cause) {
      db.close();
      throw isCorruption(cause) ? damaged(path, (cause as Error).message, cause) : notALedger(path, cause);
    }
  }

  /** How the file's schema differs from the ledger's DDL: missing or altered triggers, tables, indexes, extra objects. */
  get schemaProblems(): readonly SchemaProblem[] {
    return this.schema.problems;
  }

  /**
   * Writes go only into a ledger whose schema is intact. Checked at open; inside each write transaction only the
   * schema's version number is read, and the schema compared again when another connection changed it.
   */
  private refuseAlteredSchema(): void {
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
  private guard<T>(fn: () => T, entryCode?: ErrorCode): T {
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

  /** Append one entry in its own BEGIN IMMEDIATE transaction; concurrent appenders queue, never fork. */
  append(input: AppendInput): LedgerEntry {
    return this.appendBatch([input])[0] as LedgerEntry;
  }

  /** Append many entries in one BEGIN IMMEDIATE transaction: all or none. */
  appendBatch(inputs: readonly AppendInput[], options: AppendOptions = {}): LedgerEntry[] {
    // Validation and canonicalisation happen before taking the write lock, so other appenders wait less.
    const prepared: PreparedAppend[] = inputs.map((input, index) =>
      wellFormedAppend(validateAppendInput(input, index) as PreparedAppend, input, index),
    );
    const once = options.once === undefined ? undefined : new Set(options.once);
    const entries = this.guard(
      () => this.commits.run(options.durable !== false, () => this.appendTx.immediate(prepared, once)),
      'ERR_LEDGER_ENTRY_INVALID',
    );
    // The caller gets the entry as a read shows it: the text beside the digests that stand for it.
    for (let i = 0; i < entries.length; i += 1) {
      const content = (prepared[i] as PreparedAppend).content;
      if (content === undefined) continue;
      const entry = entries[i] as LedgerEntry;
      entry.metadata = readView(entry.metadata, content.prompt.texts, content.response.texts);
    }
    return entries;
  }

  /** Appends committed by this connection, durable (fsynced) or not. */
  get commitCount(): Readonly<CommitCount> {
    return this.commits.count;
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

  /**
   * Removes the text of `blocks` from the content store and appends the REDACTED entry that accounts for it,
   * in one transaction: the chain keeps verifying (each block keeps its digest; verify accepts a block without
   * text only when a REDACTED entry of the chain names it). The pages that held the text are zeroed (SQLite
   * secure_delete) and the WAL is checkpointed and truncated, so the text is gone from the files too.
   */
  redact(blocks: readonly string[], record: RedactRecord): RedactResult {
    const { sorted, input } = redactedAppend(blocks, record);
    const prepared = [wellFormedAppend(validateAppendInput(input) as PreparedAppend, input, 0)];
    const run = this.db.transaction(() => {
      const update = this.db.prepare(
        'UPDATE content_blocks SET text = NULL, redacted_by = ? WHERE digest = unhex(?) AND text IS NOT NULL',
      );
      const [entry] = this.appendTx(prepared) as [LedgerEntry];
      let redacted = 0;
      for (const digest of sorted) redacted += update.run(entry.id, digest).changes;
      return { entry, redacted };
    });
    const { entry, redacted } = this.guard(() => run.immediate(), 'ERR_LEDGER_ENTRY_INVALID');
    this.content.forget(sorted);
    // A reader holding an old snapshot keeps the checkpoint from finishing; it is tried a few times.
    let checkpointed = false;
    let failure: string | undefined;
    try {
      for (let attempt = 0; attempt < 5 && !checkpointed; attempt += 1) {
        const [row] = this.db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
        checkpointed = row?.busy === 0;
      }
    } catch (error) {
      // The redaction is committed: a checkpoint the disk cannot take (full, failing) must not report it as not done.
      const env = envError(error, this.path, 'checkpointing the WAL');
      if (env === null && !isCorruption(error)) throw error;
      failure = env?.message ?? (error as Error).message;
    }
    const warnings = checkpointed
      ? []
      : [
          failure === undefined
            ? 'another process holds the ledger open, so its WAL could not be truncated yet; the removed text stays in the -wal file until its next checkpoint'
            : `the redaction is recorded, but its WAL could not be checkpointed (${failure}); the removed text stays in the -wal file until a checkpoint succeeds: fix the disk and run the redaction again`,
        ];
    return { entry, redacted, already: sorted.length - redacted, checkpointed, warnings };
  }

  /** The blocks, the session's exchanges and one block's text, as `ledger redact` selects and previews them. */
  get redaction(): RedactionStore {
    return {
      hasBlock: (digest) => this.content.hasBlock(digest),
      sessionExchanges: (sessionId) => this.sessionExchanges(sessionId),
      exchangeBlocks: (id) => this.exchangeBlocks(id),
      block: (digest) => this.content.block(digest),
      redact: (blocks, record) => this.redact(blocks, record),
    };
  }

  /**
   * Insert entries that already carry ids, timestamps and hashes (an import that was verified first).
   * Refused unless the ledger is empty, so an import can never graft a second chain onto this one.
   */
  importEntries(entries: readonly LedgerEntry[], content?: ImportContent): Anchor {
    for (const [index, entry] of entries.entries()) {
      refuseIllFormed(entry, `imported entry ${index + 1} (${entry.id})`, index + 1);
    }
    const run = this.db.transaction(() => {
      this.refuseAlteredSchema();
      const present = this.stmts.count.get() as number;
      if (present > 0) {
        throw new CpError(
          'ERR_LEDGER_IMPORT_NOT_EMPTY',
          `ledger ${show(this.path)} already has ${present} entries; import only fills an empty ledger`,
          {
            hint: 'import into a new ledger path (or a new root); merging two chains would fork history',
            details: { path: this.path, entries: present },
          },
        );
      }
      if (content !== undefined && (content.blocks.length > 0 || content.lists.length > 0)) {
        this.content.ensure();
        this.content.insertRaw(content.blocks, content.lists);
      }
      entries.forEach((entry, index) => {
        this.stmts.insert.run(
          index + 1,
          entry.id,
          entry.event_type,
          entry.submission_id,
          entry.decision,
          entry.reason,
          canonicalJson(entry.metadata),
          entry.timestamp,
          entry.previous_hash,
          entry.entry_hash,
        );
      });
      // Time ranges are found by binary search on seq only while timestamps are in chain order.
      if (
        entries.some((entry, index) => index > 0 && entry.timestamp < (entries[index - 1] as LedgerEntry).timestamp)
      ) {
        this.db.exec(TIMESTAMP_INDEX_DDL);
      }
      // Later appends continue from the last imported id, so a chain that came in sequential stays sequential.
      const last = entries[entries.length - 1];
      if (last) {
        this.stmts.setIdStart.run(ID_START_KEY, idDigits(entryIdValue(last.id) - entries.length));
      }
    });
    this.guard(() => run.immediate(), 'ERR_LEDGER_IMPORT_INVALID');
    if (!this.idsInjected) this.idSource = undefined;
    return this.head();
  }

  private ensureTimestampIndex(): void {
    if ((this.stmts.timestampIndex.get(TIMESTAMP_INDEX) as number) === 0) this.db.exec(TIMESTAMP_INDEX_DDL);
  }

  /** This ledger's sequential ids, or random ones for a ledger created before ids had a stored start. */
  private storedIdSource(): IdSource {
    const start = this.stmts.idStart.get(ID_START_KEY) as string | undefined;
    return start !== undefined && /^[0-9a-f]{8}$/.test(start)
      ? sequentialEntryIds(Number.parseInt(start, 16))
      : randomEntryId;
  }

  private headTuple(): [number, string, string] {
    const row = this.stmts.head.get() as [number, string, string] | undefined;
    return row ?? [0, GENESIS_HASH, ''];
  }

  /**
   * Insert one row under the write lock, drawing ids until one is unused; fills in the entry's id and hash.
   * The UNIQUE index on id does the checking: a collision fails only that statement, so the transaction
   * carries on with a new id and hash.
   */
  private insertWithFreshId(seq: number, entry: LedgerEntry, metadataJson: string): void {
    for (let attempt = 0; attempt < MAX_ID_ATTEMPTS; attempt += 1) {
      this.idSource ??= this.storedIdSource();
      entry.id = this.idSource(seq, attempt);
      entry.entry_hash = sha256Hex(
        hashInputOf(
          entry.id,
          entry.event_type,
          entry.submission_id,
          entry.decision,
          entry.reason,
          metadataJson,
          entry.timestamp,
          entry.previous_hash,
        ),
      );
      try {
        this.stmts.insert.run(
          seq,
          entry.id,
          entry.event_type,
          entry.submission_id,
          entry.decision,
          entry.reason,
          metadataJson,
          entry.timestamp,
          entry.previous_hash,
          entry.entry_hash,
        );
        return;
      } catch (error) {
        if (!isIdCollision(error)) throw error;
      }
    }
    throw new CpError(
      'ERR_LEDGER_ID_EXHAUSTED',
      `could not find an unused entry id after ${MAX_ID_ATTEMPTS} attempts`,
      {
        hint: 'the id source keeps returning ids already in the ledger; check the injected id source',
      },
    );
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
