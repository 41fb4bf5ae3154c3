import Database from 'better-sqlite3';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { CpError, show } from '../errors.js';
import { canonicalJson } from '../canonical.js';
import {
  type AppendInput, type Anchor, type Clock, type IdSource, type LedgerEntry,
  GENESIS_HASH, computeEntryHash, randomEntryId,
} from './entry.js';
import { LEDGER_DDL, LEDGER_FORMAT, LEDGER_FORMAT_VERSION } from './schema.js';
import { validateAppendInput } from './validate.js';

export type Synchronous = 'FULL' | 'NORMAL' | 'OFF';

export interface LedgerOptions {
  /** Create the file (and its directory) when missing. Default false: opening a missing ledger is an error. */
  create?: boolean;
  synchronous?: Synchronous;
  busyTimeoutMs?: number;
  clock?: Clock;
  idSource?: IdSource;
  readonly?: boolean;
}

export interface LedgerQuery {
  event_type?: string;
  submission_id?: string;
  session_id?: string;
  agent_id?: string;
  work_order_id?: string;
  /** Inclusive ISO-8601 bounds on `timestamp`. */
  since?: string;
  until?: string;
  limit?: number;
  /** Default newest-first. */
  order?: 'newest' | 'oldest';
}

export interface EntryRow {
  seq: number;
  id: string;
  event_type: string;
  submission_id: string;
  decision: string;
  reason: string;
  metadata: string;
  timestamp: string;
  previous_hash: string;
  entry_hash: string;
}

const ROW_COLUMNS = 'seq, id, event_type, submission_id, decision, reason, metadata, timestamp, previous_hash, entry_hash';
const MAX_ID_ATTEMPTS = 16;

export function ledgerPathForRoot(root: string): string {
  return join(root, 'HOT', 'ledger', 'ledger.sqlite');
}

export function rowToEntry(row: EntryRow): LedgerEntry {
  return {
    id: row.id,
    event_type: row.event_type,
    submission_id: row.submission_id,
    decision: row.decision,
    reason: row.reason,
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    timestamp: row.timestamp,
    previous_hash: row.previous_hash,
    entry_hash: row.entry_hash,
  };
}

/** The kernel ledger: an append-only, hash-chained SQLite table safe for concurrent appenders. */
export class Ledger {
  readonly path: string;
  readonly db: Database.Database;
  private readonly clock: Clock;
  private readonly idSource: IdSource;
  private readonly stmts;

  private constructor(path: string, db: Database.Database, clock: Clock, idSource: IdSource) {
    this.path = path;
    this.db = db;
    this.clock = clock;
    this.idSource = idSource;
    this.stmts = {
      head: db.prepare('SELECT seq, entry_hash FROM entries ORDER BY seq DESC LIMIT 1'),
      idExists: db.prepare('SELECT 1 FROM entries WHERE id = ?').pluck(),
      insert: db.prepare(`INSERT INTO entries (seq, id, event_type, submission_id, decision, reason, metadata, timestamp, previous_hash, entry_hash)
        VALUES (@seq, @id, @event_type, @submission_id, @decision, @reason, @metadata, @timestamp, @previous_hash, @entry_hash)`),
      byId: db.prepare(`SELECT ${ROW_COLUMNS} FROM entries WHERE id = ?`),
      bySeq: db.prepare(`SELECT ${ROW_COLUMNS} FROM entries WHERE seq = ?`),
      history: db.prepare(`SELECT ${ROW_COLUMNS} FROM entries WHERE session_id = ? AND event_type = 'EXCHANGE' ORDER BY seq ASC`),
    };
  }

  static open(path: string, options: LedgerOptions = {}): Ledger {
    const fresh = !existsSync(path);
    if (fresh && !options.create) {
      throw new CpError('ERR_LEDGER_NOT_FOUND', `no ledger at ${show(path)}`, {
        hint: 'check --ledger/--root, or append an entry first to create the ledger', details: { path },
      });
    }
    if (fresh) mkdirSync(dirname(path), { recursive: true });
    let db: Database.Database;
    try {
      db = new Database(path, { readonly: options.readonly ?? false, fileMustExist: !fresh });
      db.pragma(`busy_timeout = ${Math.max(0, Math.trunc(options.busyTimeoutMs ?? 10_000))}`);
      if (!options.readonly) db.pragma('journal_mode = WAL');
      db.pragma(`synchronous = ${options.synchronous ?? 'FULL'}`);
    } catch (cause) {
      throw notALedger(path, cause);
    }
    try {
      initialise(db, path, options.readonly ?? false);
    } catch (cause) {
      db.close();
      throw cause instanceof CpError ? cause : notALedger(path, cause);
    }
    return new Ledger(path, db, options.clock ?? Date.now, options.idSource ?? randomEntryId);
  }

  /** Append one entry in its own BEGIN IMMEDIATE transaction; concurrent appenders queue, never fork. */
  append(input: AppendInput): LedgerEntry {
    return this.appendBatch([input])[0] as LedgerEntry;
  }

  /** Append many entries in one transaction: all or none. */
  appendBatch(inputs: readonly AppendInput[]): LedgerEntry[] {
    const prepared = inputs.map((input, index) => validateAppendInput(input, index));
    const run = this.db.transaction(() => {
      const headRow = this.stmts.head.get() as { seq: number; entry_hash: string } | undefined;
      let seq = headRow?.seq ?? 0;
      let previous = headRow?.entry_hash ?? GENESIS_HASH;
      const taken = new Set<string>();
      const out: LedgerEntry[] = [];
      for (const input of prepared) {
        const entryWithoutHash = {
          id: this.freshId(taken),
          event_type: input.event_type,
          submission_id: input.submission_id,
          decision: input.decision,
          reason: input.reason,
          metadata: input.metadata,
          timestamp: new Date(this.clock()).toISOString(),
          previous_hash: previous,
        };
        const entry: LedgerEntry = { ...entryWithoutHash, entry_hash: computeEntryHash(entryWithoutHash) };
        seq += 1;
        this.stmts.insert.run({ ...entry, seq, metadata: canonicalJson(entry.metadata) });
        previous = entry.entry_hash;
        out.push(entry);
      }
      return out;
    });
    return run.immediate();
  }

  private freshId(taken: Set<string>): string {
    for (let attempt = 0; attempt < MAX_ID_ATTEMPTS; attempt += 1) {
      const id = this.idSource();
      if (!taken.has(id) && this.stmts.idExists.get(id) === undefined) {
        taken.add(id);
        return id;
      }
    }
    throw new CpError('ERR_LEDGER_ID_EXHAUSTED', `could not find an unused entry id after ${MAX_ID_ATTEMPTS} attempts`, {
      hint: 'the id source keeps returning ids already in the ledger; check the injected id source',
    });
  }

  head(): Anchor {
    const row = this.stmts.head.get() as { seq: number; entry_hash: string } | undefined;
    return row ? { seq: row.seq, hash: row.entry_hash } : { seq: 0, hash: GENESIS_HASH };
  }

  get(id: string): LedgerEntry | undefined {
    const row = this.stmts.byId.get(id) as EntryRow | undefined;
    return row ? rowToEntry(row) : undefined;
  }

  getBySeq(seq: number): LedgerEntry | undefined {
    const row = this.stmts.bySeq.get(seq) as EntryRow | undefined;
    return row ? rowToEntry(row) : undefined;
  }

  query(query: LedgerQuery = {}): LedgerEntry[] {
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (sql: string, value: unknown): void => { where.push(sql); params.push(value); };
    if (query.event_type !== undefined) add('event_type = ?', query.event_type);
    if (query.submission_id !== undefined) add('submission_id = ?', query.submission_id);
    if (query.session_id !== undefined) add('session_id = ?', query.session_id);
    if (query.agent_id !== undefined) add('agent_id = ?', query.agent_id);
    if (query.work_order_id !== undefined) add('work_order_id = ?', query.work_order_id);
    if (query.since !== undefined) add('timestamp >= ?', query.since);
    if (query.until !== undefined) add('timestamp <= ?', query.until);
    const order = query.order === 'oldest' ? 'ASC' : 'DESC';
    const limit = query.limit === undefined ? '' : ` LIMIT ${Math.max(0, Math.trunc(query.limit))}`;
    const sql = `SELECT ${ROW_COLUMNS} FROM entries${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY seq ${order}${limit}`;
    return (this.db.prepare(sql).all(...params) as EntryRow[]).map(rowToEntry);
  }

  /** A session's EXCHANGE records, oldest first: the conversation as it happened. */
  history(sessionId: string): LedgerEntry[] {
    return (this.stmts.history.all(sessionId) as EntryRow[]).map(rowToEntry);
  }

  /** Rows in chain order, for verify/export; iterates without loading the whole ledger. */
  *rows(fromSeq = 1): IterableIterator<EntryRow> {
    yield* this.db.prepare(`SELECT ${ROW_COLUMNS} FROM entries WHERE seq >= ? ORDER BY seq ASC`).iterate(fromSeq) as IterableIterator<EntryRow>;
  }

  count(): number {
    return this.db.prepare('SELECT count(*) FROM entries').pluck().get() as number;
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}

function initialise(db: Database.Database, path: string, readonly: boolean): void {
  const hasMeta = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'ledger_meta'").pluck().get() !== undefined;
  const tableCount = db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table'").pluck().get() as number;
  if (!hasMeta) {
    if (tableCount > 0 || readonly) throw notALedger(path);
    db.transaction(() => {
      db.exec(LEDGER_DDL);
      const put = db.prepare('INSERT INTO ledger_meta (key, value) VALUES (?, ?)');
      put.run('format', LEDGER_FORMAT);
      put.run('format_version', LEDGER_FORMAT_VERSION);
    }).immediate();
    return;
  }
  const format = db.prepare("SELECT value FROM ledger_meta WHERE key = 'format'").pluck().get();
  if (format !== LEDGER_FORMAT) throw notALedger(path);
  const version = db.prepare("SELECT value FROM ledger_meta WHERE key = 'format_version'").pluck().get();
  if (version !== LEDGER_FORMAT_VERSION) {
    throw new CpError('ERR_LEDGER_FORMAT_VERSION', `ledger ${show(path)} has format version ${show(version)}, expected ${LEDGER_FORMAT_VERSION}`, {
      hint: 'open it with the cplane version that wrote it, or export and re-import it', details: { path, version },
    });
  }
}

function notALedger(path: string, cause?: unknown): CpError {
  return new CpError('ERR_LEDGER_NOT_A_LEDGER', `${show(path)} is not a cplane ledger`, {
    hint: 'point --ledger at a file created by cplane, or at a path that does not exist yet', details: { path }, cause,
  });
}
