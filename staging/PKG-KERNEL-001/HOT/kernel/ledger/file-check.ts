import Database from 'better-sqlite3';
import { closeSync, existsSync, fstatSync, openSync, readSync, realpathSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { CpError, show } from '../errors.js';
import { openRegularFile } from '../regular-file.js';

/**
 * What a ledger path holds, judged from its bytes before SQLite opens it: opening is not free of writes (a
 * connection to a WAL-mode file creates `-wal`/`-shm` beside it, a writable one may roll a journal back), so
 * a file that is not a ledger must be refused by reading alone.
 */
export type LedgerFile = { kind: 'empty' } | { kind: 'sqlite'; walMode: boolean; hasWal: boolean };

const MAGIC = Buffer.from('SQLite format 3\0', 'latin1');
const HEADER_BYTES = 100;
/** The schema and ledger_meta of a ledger live in its first pages; read more only when they do not. */
const PROBE_PAGES = 64;
/** Above this a file is not read whole for a probe: it is opened, as any ledger with a `-wal` is. */
const PROBE_MAX_BYTES = 64 << 20;

export function damaged(path: string, why: string, cause?: unknown): CpError {
  return new CpError('ERR_LEDGER_DAMAGED', `ledger ${show(path)} is damaged: ${why}`, {
    hint: 'restore the ledger from a copy or an export (`cplane ledger import`); nothing was written to it',
    details: { path },
    cause,
  });
}

export function notALedger(path: string, cause?: unknown): CpError {
  return new CpError('ERR_LEDGER_NOT_A_LEDGER', `${show(path)} is not a cplane ledger`, {
    hint: 'point --ledger at a file created by cplane, or at a path that does not exist yet',
    details: { path },
    cause,
  });
}

/** `path` with its directory's symlinks resolved (the name itself is what a rename replaces), as far as it exists. */
function placeOf(path: string): string {
  try {
    return join(realpathSync(dirname(path)), basename(path));
  } catch {
    return path;
  }
}

/**
 * Refuses an output path that names the ledger file or a file SQLite keeps beside it: writing a file there (an
 * export, a checkpoint copy) renames it over the ledger, and the chain is gone with exit 0.
 */
export function refuseLedgerAsOutput(ledgerPath: string, out: string, what: string): void {
  let ledger = ledgerPath;
  try {
    ledger = realpathSync(ledgerPath);
  } catch {
    ledger = placeOf(ledgerPath);
  }
  const target = placeOf(out);
  const suffix = ['', '-wal', '-shm', '-journal'].find((s) => target === ledger + s);
  if (suffix === undefined) return;
  throw new CpError(
    'ERR_USAGE',
    `${what} ${show(out)} is ${suffix === '' ? 'the ledger file itself' : `the ledger's ${suffix} file`}: writing it would replace the ledger`,
    {
      hint: 'write it to another file, preferably off this machine',
      details: { path: out, ledger: ledgerPath },
    },
  );
}

/** Marks a size that may only lag a concurrent checkpoint: judged again before it stands. */
function lagging(error: CpError): CpError {
  return new CpError(error.code, error.message, { hint: error.hint, details: { ...error.details, lagging: true } });
}

/** SQLite reporting a malformed file, at open or at any later statement. */
export function isCorruption(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB');
}

/**
 * SQLite's structural check of every b-tree page (no row contents: the chain covers those). Throws
 * ERR_LEDGER_DAMAGED naming SQLite's first complaint.
 */
export function checkStructure(db: Database.Database, path: string): void {
  let verdict: unknown;
  try {
    verdict = db.pragma('quick_check(1)', { simple: true });
  } catch (cause) {
    if (isCorruption(cause)) throw damaged(path, (cause as Error).message, cause);
    throw cause;
  }
  if (verdict !== 'ok') throw damaged(path, `SQLite's quick_check reports ${show(verdict)}`);
}

/**
 * Read the header of an existing file and refuse anything that is not a whole SQLite database. A writer in
 * another process can checkpoint and remove its `-wal` while the header is read (the header is written before
 * the file grows), so a size that lags the header is judged again before it is called truncation.
 */
export function inspectLedgerFile(path: string): LedgerFile {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return inspectOnce(path);
    } catch (error) {
      if (
        attempt >= 3 ||
        !(
          error instanceof CpError &&
          error.code === 'ERR_LEDGER_DAMAGED' &&
          (error.details as { lagging?: boolean }).lagging
        )
      )
        throw error;
    }
  }
}

function inspectOnce(path: string): LedgerFile {
  const walBefore = existsSync(`${path}-wal`);
  let opened: ReturnType<typeof openRegularFile>;
  try {
    opened = openRegularFile(path);
  } catch (cause) {
    throw new CpError('ERR_LEDGER_OPEN_FAILED', `cannot open ledger ${show(path)}: ${(cause as Error).message}`, {
      hint: 'check the path and its permissions',
      details: { path },
      cause,
    });
  }
  if (opened.fd === null) {
    throw new CpError(
      'ERR_LEDGER_OPEN_FAILED',
      `cannot open ledger ${show(path)}: it is a ${opened.kind}, not a regular file`,
      { hint: 'point --ledger at a ledger file', details: { path } },
    );
  }
  const { fd, stat } = opened;
  try {
    if (stat.size === 0) return { kind: 'empty' };
    const header = Buffer.alloc(HEADER_BYTES);
    const got = readSync(fd, header, 0, HEADER_BYTES, 0);
    if (got < MAGIC.length || !header.subarray(0, MAGIC.length).equals(MAGIC)) throw notALedger(path);
    if (got < HEADER_BYTES) throw damaged(path, `the file ends inside the database header (${got} bytes)`);
    const raw = header.readUInt16BE(16);
    const pageSize = raw === 1 ? 65536 : raw;
    if (pageSize < 512 || (pageSize & (pageSize - 1)) !== 0)
      throw damaged(path, `the header's page size ${raw} is not a power of two from 512 to 65536`);
    const hasWal = walBefore || existsSync(`${path}-wal`);
    // With a -wal beside it the file may legitimately lag its header until the next checkpoint.
    if (!hasWal) {
      if (stat.size % pageSize !== 0)
        throw lagging(
          damaged(path, `its size ${stat.size} is not a whole number of ${pageSize}-byte pages: it was truncated`),
        );
      const pages = header.readUInt32BE(28);
      const headerValid = header.readUInt32BE(24) === header.readUInt32BE(92);
      if (headerValid && pages * pageSize > stat.size)
        throw lagging(
          damaged(
            path,
            `its header counts ${pages} pages but the file holds ${stat.size / pageSize}: it was truncated`,
          ),
        );
    }
    return { kind: 'sqlite', walMode: header[18] === 2 || header[19] === 2, hasWal };
  } finally {
    closeSync(fd);
  }
}

/**
 * The database as it is on disk, opened in memory from its bytes (first pages, then the whole file if the schema
 * lies further in): SQLite reads it without locking, journalling or creating any file beside it. Only for a file
 * with no `-wal`, whose bytes are then the whole database. Undefined when the file is too large to read so.
 */
export function probeLedgerFile(path: string, all: boolean, maxBytes = PROBE_MAX_BYTES): Database.Database | undefined {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    const header = Buffer.alloc(HEADER_BYTES);
    readSync(fd, header, 0, HEADER_BYTES, 0);
    const raw = header.readUInt16BE(16);
    const pageSize = raw === 1 ? 65536 : raw;
    if (all && size > maxBytes) return undefined;
    const pages = all ? size / pageSize : Math.min(size / pageSize, PROBE_PAGES);
    const bytes = Buffer.alloc(pages * pageSize);
    readSync(fd, bytes, 0, bytes.length, 0);
    // An in-memory database cannot be in WAL mode, and must count only the pages it was given.
    bytes[18] = 1;
    bytes[19] = 1;
    bytes.writeUInt32BE(pages, 28);
    bytes.writeUInt32BE(header.readUInt32BE(24), 92);
    return new Database(bytes, { readonly: true });
  } finally {
    closeSync(fd);
  }
}
