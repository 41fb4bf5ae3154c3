import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { accessSync, closeSync, constants, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { PRIVATE_FILE_MODE } from '../atomic.js';
import { envError } from '../env-errors.js';
import { CpError, show } from '../errors.js';
import { checkStructure, damaged, inspectLedgerFile, isCorruption, notALedger, probeLedgerFile } from './file-check.js';
import { upgradeFormat } from './format-upgrade.js';
import { CHECKPOINT_FRAMES } from './wal-checkpointer.js';
import { reserveWal } from './wal-reserve.js';
import { LEDGER_DDL, LEDGER_FORMAT, LEDGER_FORMAT_VERSION, LEDGER_FORMAT_VERSIONS } from './schema.js';

export type Synchronous = 'FULL' | 'NORMAL' | 'OFF';

export interface ConnectionOptions {
  /** Create the file (and its directory) when missing. Default false: opening a missing ledger is an error. */
  create?: boolean;
  synchronous?: Synchronous;
  busyTimeoutMs?: number;
  readonly?: boolean;
  /**
   * Grow the WAL to its steady size at open (see wal-reserve.ts): for a process that appends for a long time, such
   * as the gateway. Costs one write of a few MiB and an fsync, so a command that appends once leaves it off.
   */
  reserveWal?: boolean;
  /**
   * Where WAL checkpoints run: 'inline' (SQLite's autocheckpoint, inside the commit that crosses it) or
   * 'background' (a worker thread, wal-checkpointer.ts): for a long-running writer such as the gateway, whose
   * calls should not wait for a checkpoint. Default 'inline': a worker costs a thread start at open.
   */
  walCheckpoints?: 'inline' | 'background';
  /** WAL frames between background checkpoints (default CHECKPOINT_FRAMES; tests ask for fewer to stay quick). */
  checkpointFrames?: number;
}

/** ledger_meta key: where this ledger's sequential ids start (8 hex digits). Ledgers made before it use random ids. */
export const ID_START_KEY = 'id_start';

export const LEDGER_PAGE_SIZE = 2048;

/** Up to this size a writer's open runs SQLite's quick_check (about 15 ms at 16 MiB). */
export const OPEN_CHECK_MAX_BYTES = 32 << 20;

const SYNCHRONOUS_MODES: readonly string[] = ['FULL', 'NORMAL', 'OFF'];

/**
 * Open (and on first use lay out) the SQLite file behind a ledger; refuse anything that is not one. An existing
 * file is judged before SQLite opens it for real, so a file that is not a ledger is left byte-identical with no
 * `-wal`/`-shm` beside it, whatever the open was for.
 */
export function openLedgerDatabase(path: string, options: ConnectionOptions): Database.Database {
  const synchronous = options.synchronous ?? 'FULL';
  if (!SYNCHRONOUS_MODES.includes(synchronous)) {
    throw new CpError(
      'ERR_LEDGER_OPTION_INVALID',
      `synchronous must be FULL, NORMAL or OFF, got ${show(synchronous)}`,
      { hint: 'use FULL for durability' },
    );
  }
  const readonly = options.readonly ?? false;
  const creating = options.create === true && !readonly;
  let fresh = !existsSync(path);
  let inMemory = false;
  if (fresh && !creating) {
    throw new CpError('ERR_LEDGER_NOT_FOUND', `no ledger at ${show(path)}`, {
      hint: 'check --ledger/--root, or append an entry first to create the ledger',
      details: { path },
    });
  }
  if (!fresh) {
    const file = inspectLedgerFile(path);
    // An empty file is what a creator racing this one leaves for an instant; only a creating open may lay it out.
    if (file.kind === 'empty') {
      if (!creating) throw notALedger(path);
      fresh = true;
    } else if (!file.hasWal) {
      probe(path, creating);
      // A WAL reader needs a -shm beside the file; where none can be made (a read-only mount, a directory it may
      // not write) it reads a copy in memory, which is the whole ledger since no -wal holds anything more.
      inMemory = readonly && file.walMode && !existsSync(`${path}-shm`) && !writableDir(dirname(path));
    }
  }
  // SQLite's in-memory names are no files: nothing is made for them.
  if (fresh && path !== ':memory:' && path !== '') createPrivately(path, readonly);
  let db: Database.Database;
  try {
    db =
      (inMemory ? probeLedgerFile(path, true, READONLY_COPY_MAX_BYTES) : undefined) ??
      new Database(path, { readonly, fileMustExist: !fresh });
  } catch (cause) {
    throw openFailure(path, cause, readonly);
  }
  try {
    db.pragma(`busy_timeout = ${Math.max(0, Math.trunc(options.busyTimeoutMs ?? 10_000))}`);
    // 2 KiB pages, set before the file's first write: an EXCHANGE row (about 1 KiB) still fits a page, and a
    // commit writes one page per index it touches to the WAL, so smaller pages mean fewer bytes per append.
    if (fresh) db.pragma(`page_size = ${LEDGER_PAGE_SIZE}`);
    // Classified before the journal mode is set, which would rewrite the header of a file that is not a ledger.
    checkMeta(db, path, fileState(db), creating);
    if (!readonly) db.pragma('journal_mode = WAL');
    // Freed space is zeroed on every writer, not only the redacting one: a page split by an append would
    // otherwise leave a stale copy of a block's text behind, out of reach of a later redaction.
    if (!readonly) db.pragma('secure_delete = ON');
    db.pragma(`synchronous = ${synchronous}`);
    initialise(db, path, creating);
    if (!readonly) upgradeFormat(db);
    // A writer checks the file's structure once per open, so damage anywhere in a ledger of ordinary size stops
    // appends, not only damage on the pages an append happens to touch. Larger ledgers rely on SQLite's own
    // checks of the pages it reads, and on verify and G4, which check the whole file.
    if (!readonly && !fresh && statSync(path).size <= OPEN_CHECK_MAX_BYTES) checkStructure(db, path);
    if (!readonly && options.reserveWal === true)
      reserveWal(
        db,
        path,
        options.walCheckpoints === 'background' ? (options.checkpointFrames ?? CHECKPOINT_FRAMES) : null,
      );
  } catch (cause) {
    db.close();
    throw cause instanceof CpError ? cause : openFailure(path, cause, readonly);
  }
  return db;
}

/** Classify the file from an in-memory copy of its bytes: not a ledger, damaged or another format is refused untouched. */
function probe(path: string, creating: boolean): void {
  for (const all of [false, true]) {
    let copy: Database.Database | undefined;
    try {
      copy = probeLedgerFile(path, all);
      if (!copy) return;
      checkMeta(copy, path, fileState(copy), creating);
      return;
    } catch (cause) {
      if (cause instanceof CpError) throw cause;
      // The first pages may not hold the whole schema: read every page before calling the file damaged.
      if (!all && isCorruption(cause)) continue;
      throw openFailure(path, cause);
    } finally {
      copy?.close();
    }
  }
}

type FileState = 'ledger' | 'empty' | 'foreign';

function fileState(db: Database.Database): FileState {
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[];
  if (tables.includes('ledger_meta')) return 'ledger';
  return tables.length === 0 ? 'empty' : 'foreign';
}

/** A ledger's format and version, or an empty database only a creating open may lay out. */
function checkMeta(db: Database.Database, path: string, state: FileState, creating: boolean): void {
  if (state === 'empty' && creating) return;
  if (state !== 'ledger') throw notALedger(path);
  const meta = new Map(db.prepare('SELECT key, value FROM ledger_meta').raw().all() as [string, string][]);
  if (meta.get('format') !== LEDGER_FORMAT) throw notALedger(path);
  const version = meta.get('format_version');
  if (version === undefined || !LEDGER_FORMAT_VERSIONS.includes(version)) {
    throw new CpError(
      'ERR_LEDGER_FORMAT_VERSION',
      `ledger ${show(path)} has format version ${show(version)}, expected one of ${LEDGER_FORMAT_VERSIONS.join(', ')}`,
      {
        hint: 'open it with the cplane version that wrote it, or export and re-import it',
        details: { path, version: version ?? null },
      },
    );
  }
}

/** Lay out a new ledger under a write lock, so several processes creating it at once agree. */
function initialise(db: Database.Database, path: string, creating: boolean): void {
  let state = fileState(db);
  if (state === 'empty' && creating) {
    state = db
      .transaction(() => {
        const again = fileState(db);
        if (again !== 'empty') return again;
        db.exec(LEDGER_DDL);
        const put = db.prepare('INSERT INTO ledger_meta (key, value) VALUES (?, ?)');
        put.run('format', LEDGER_FORMAT);
        put.run('format_version', LEDGER_FORMAT_VERSION);
        put.run(ID_START_KEY, randomBytes(4).toString('hex'));
        return 'ledger' as const;
      })
      .immediate();
  }
  checkMeta(db, path, state, false);
}

/** Up to this size a ledger that cannot be read in place (see inMemory above) is read from a copy in memory. */
const READONLY_COPY_MAX_BYTES = 256 << 20;

function writableDir(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Why the filesystem refuses what SQLite needs (SQLite keeps no errno): the file read (and written), and its
 * directory written, since a WAL connection creates `-wal` and `-shm` beside the file, even one that only reads.
 */
function pathFault(path: string, readonly: boolean): unknown {
  const probes: [string, number][] = [
    [path, readonly ? constants.R_OK : constants.R_OK | constants.W_OK],
    [dirname(path), constants.W_OK],
  ];
  for (const [target, mode] of probes) {
    try {
      accessSync(target, mode);
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'ENOENT') return error;
    }
  }
  return undefined;
}

/**
 * SQLite saying the bytes are not a database means "not a ledger", malformed means damaged; a fault of the
 * machine (a full disk, a read-only mount, no permission) keeps its own code; anything else (a missing driver)
 * is reported as itself.
 */
/**
 * A ledger holds every prompt and reply: its directory is made 0700 and the file 0600 before SQLite lays it out
 * (SQLite gives its -wal and -shm the database's own mode), so another user of the machine reads none of it.
 * A file another creator made first is theirs to have made; it is laid out as an empty one is.
 */
function createPrivately(path: string, readonly: boolean): void {
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    closeSync(openSync(path, 'wx', PRIVATE_FILE_MODE));
  } catch (cause) {
    if ((cause as { code?: unknown }).code !== 'EEXIST') throw openFailure(path, cause, readonly);
  }
}

function openFailure(path: string, cause: unknown, readonly = false): CpError {
  const code = (cause as { code?: unknown } | null)?.code;
  if (code === 'SQLITE_NOTADB') return notALedger(path, cause);
  if (isCorruption(cause)) return damaged(path, (cause as Error).message, cause);
  const refused = typeof code === 'string' && /^SQLITE_(CANTOPEN|READONLY|PERM|AUTH)/.test(code);
  const env =
    (refused ? envError(pathFault(path, readonly), path, 'opening the ledger') : null) ??
    envError(cause, path, 'opening the ledger');
  // SQLite's "unable to open" with nothing the filesystem admits to is no device error: reported as itself.
  if (env !== null && !/^SQLITE_CANTOPEN/.test(String(env.details.errno))) return env;
  const message = cause instanceof Error ? cause.message : String(cause);
  return new CpError('ERR_LEDGER_OPEN_FAILED', `cannot open ledger ${show(path)}: ${message}`, {
    hint: 'check the path and its permissions, and that better-sqlite3 is installed and built for this Node.js',
    details: { path },
    cause,
  });
}

export { damaged, isCorruption, notALedger };
