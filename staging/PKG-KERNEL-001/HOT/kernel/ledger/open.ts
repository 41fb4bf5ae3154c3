import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { CpError, show } from '../errors.js';
import { LEDGER_DDL, LEDGER_FORMAT, LEDGER_FORMAT_VERSION } from './schema.js';

export type Synchronous = 'FULL' | 'NORMAL' | 'OFF';

export interface ConnectionOptions {
  /** Create the file (and its directory) when missing. Default false: opening a missing ledger is an error. */
  create?: boolean;
  synchronous?: Synchronous;
  busyTimeoutMs?: number;
  readonly?: boolean;
}

/** ledger_meta key: where this ledger's sequential ids start (8 hex digits). Ledgers made before it use random ids. */
export const ID_START_KEY = 'id_start';

export const LEDGER_PAGE_SIZE = 2048;

const SYNCHRONOUS_MODES: readonly string[] = ['FULL', 'NORMAL', 'OFF'];

/** Open (and on first use lay out) the SQLite file behind a ledger; refuse anything that is not one. */
export function openLedgerDatabase(path: string, options: ConnectionOptions): Database.Database {
  const synchronous = options.synchronous ?? 'FULL';
  if (!SYNCHRONOUS_MODES.includes(synchronous)) {
    throw new CpError('ERR_LEDGER_OPTION_INVALID', `synchronous must be FULL, NORMAL or OFF, got ${show(synchronous)}`, { hint: 'use FULL for durability' });
  }
  const fresh = !existsSync(path);
  if (fresh && (!options.create || options.readonly)) {
    throw new CpError('ERR_LEDGER_NOT_FOUND', `no ledger at ${show(path)}`, {
      hint: 'check --ledger/--root, or append an entry first to create the ledger', details: { path },
    });
  }
  if (fresh) mkdirSync(dirname(path), { recursive: true });
  let db: Database.Database;
  try {
    db = new Database(path, { readonly: options.readonly ?? false, fileMustExist: !fresh });
  } catch (cause) {
    throw openFailure(path, cause);
  }
  try {
    db.pragma(`busy_timeout = ${Math.max(0, Math.trunc(options.busyTimeoutMs ?? 10_000))}`);
    // 2 KiB pages, set before the file's first write: an EXCHANGE row (about 1 KiB) still fits a page, and a
    // commit writes one page per index it touches to the WAL, so smaller pages mean fewer bytes per append.
    if (fresh) db.pragma(`page_size = ${LEDGER_PAGE_SIZE}`);
    if (!options.readonly) db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${synchronous}`);
    initialise(db, path, options.readonly ?? false);
  } catch (cause) {
    db.close();
    throw cause instanceof CpError ? cause : openFailure(path, cause);
  }
  return db;
}

type FileState = 'ledger' | 'empty' | 'foreign';

function fileState(db: Database.Database): FileState {
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[];
  if (tables.includes('ledger_meta')) return 'ledger';
  return tables.length === 0 ? 'empty' : 'foreign';
}

/** Lay out a new ledger under a write lock, so several processes creating it at once agree. */
function initialise(db: Database.Database, path: string, readonly: boolean): void {
  let state = fileState(db);
  if (state === 'empty' && !readonly) {
    state = db.transaction(() => {
      const again = fileState(db);
      if (again !== 'empty') return again;
      db.exec(LEDGER_DDL);
      const put = db.prepare('INSERT INTO ledger_meta (key, value) VALUES (?, ?)');
      put.run('format', LEDGER_FORMAT);
      put.run('format_version', LEDGER_FORMAT_VERSION);
      put.run(ID_START_KEY, randomBytes(4).toString('hex'));
      return 'ledger' as const;
    }).immediate();
  }
  if (state !== 'ledger') throw notALedger(path);
  const meta = new Map(db.prepare('SELECT key, value FROM ledger_meta').raw().all() as [string, string][]);
  if (meta.get('format') !== LEDGER_FORMAT) throw notALedger(path);
  const version = meta.get('format_version');
  if (version !== LEDGER_FORMAT_VERSION) {
    throw new CpError('ERR_LEDGER_FORMAT_VERSION', `ledger ${show(path)} has format version ${show(version)}, expected ${LEDGER_FORMAT_VERSION}`, {
      hint: 'open it with the cplane version that wrote it, or export and re-import it', details: { path, version: version ?? null },
    });
  }
}

/** SQLite saying the bytes are not a database means "not a ledger"; anything else (permissions, a missing driver) is reported as itself. */
function openFailure(path: string, cause: unknown): CpError {
  const code = (cause as { code?: unknown } | null)?.code;
  if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT') return notALedger(path, cause);
  const message = cause instanceof Error ? cause.message : String(cause);
  return new CpError('ERR_LEDGER_OPEN_FAILED', `cannot open ledger ${show(path)}: ${message}`, {
    hint: 'check the path and its permissions, and that better-sqlite3 is installed and built for this Node.js', details: { path }, cause,
  });
}

export function notALedger(path: string, cause?: unknown): CpError {
  return new CpError('ERR_LEDGER_NOT_A_LEDGER', `${show(path)} is not a cplane ledger`, {
    hint: 'point --ledger at a file created by cplane, or at a path that does not exist yet', details: { path }, cause,
  });
}
