import { CpError, type ErrorCode, show } from './errors.js';

/**
 * Faults of the machine, not of cplane: a full disk, a name the filesystem cannot hold, a read-only mount,
 * a failing device, a damaged database file. Each gets its own code and a hint the operator can act on,
 * so they never surface as ERR_INTERNAL ("a bug").
 */
interface EnvFault {
  code: ErrorCode;
  what: string;
  hint: string;
}

const DISK_FULL: EnvFault = {
  code: 'ERR_DISK_FULL',
  what: 'no space left on the device',
  hint: 'free space (or raise the quota) on the filesystem holding the path, then run the command again; nothing was left half-done',
};
const NAME_TOO_LONG: EnvFault = {
  code: 'ERR_NAME_TOO_LONG',
  what: 'a file name is too long for the filesystem',
  hint: 'use a shorter path (the root, --out or the file name), or a filesystem that allows longer names',
};
const READONLY: EnvFault = {
  code: 'ERR_FS_READONLY',
  what: 'the filesystem is read-only',
  hint: 'remount the filesystem read-write, or point the command at a writable location',
};
const PERMISSION: EnvFault = {
  code: 'ERR_PERMISSION',
  what: 'permission denied',
  hint: 'check the owner and mode of the path (and of its directories), or run as the user that owns the root',
};
const IO: EnvFault = {
  code: 'ERR_IO',
  what: 'an input/output error',
  hint: 'the device or filesystem reported an error: check the disk (dmesg, SMART), then run the command again',
};
const DB_DAMAGED: EnvFault = {
  code: 'ERR_DB_DAMAGED',
  what: 'the database file is damaged or is not an SQLite database',
  hint: 'move the file aside and restore it from a backup (the gates report which state it belongs to); cplane does not repair it in place',
};
const TOO_MANY_FILES: EnvFault = {
  code: 'ERR_IO',
  what: 'too many open files',
  hint: 'raise the open-file limit (ulimit -n), then run the command again',
};

const BY_ERRNO: ReadonlyMap<string, EnvFault> = new Map(
  Object.entries({
    ENOSPC: DISK_FULL,
    EDQUOT: DISK_FULL,
    EFBIG: DISK_FULL,
    ENAMETOOLONG: NAME_TOO_LONG,
    EROFS: READONLY,
    EACCES: PERMISSION,
    EPERM: PERMISSION,
    EIO: IO,
    ENXIO: IO,
    EMFILE: TOO_MANY_FILES,
    ENFILE: TOO_MANY_FILES,
  }),
);

/** SQLite result codes (better-sqlite3 puts the extended name in `code`, e.g. SQLITE_IOERR_WRITE). */
function sqliteFault(code: string): EnvFault | undefined {
  // SHMSIZE: the shared-memory file could not be grown, which on a full disk is how a WAL open fails.
  if (code === 'SQLITE_FULL' || code === 'SQLITE_IOERR_SHMSIZE') return DISK_FULL;
  if (code === 'SQLITE_CORRUPT' || code.startsWith('SQLITE_CORRUPT_') || code === 'SQLITE_NOTADB') return DB_DAMAGED;
  if (code === 'SQLITE_READONLY' || code.startsWith('SQLITE_READONLY_')) return READONLY;
  if (code === 'SQLITE_PERM' || code === 'SQLITE_AUTH') return PERMISSION;
  if (
    code === 'SQLITE_IOERR' ||
    code.startsWith('SQLITE_IOERR_') ||
    code === 'SQLITE_CANTOPEN' ||
    code.startsWith('SQLITE_CANTOPEN_')
  )
    return IO;
  return undefined;
}

function faultOf(error: unknown): EnvFault | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string') return undefined;
  return BY_ERRNO.get(code) ?? (code.startsWith('SQLITE_') ? sqliteFault(code) : undefined);
}

/**
 * The CpError for an environmental fault (an errno or SQLite error, also found one level down in `cause`),
 * naming the path and what was being done; null for anything else, which the caller handles as before.
 */
export function envError(error: unknown, path?: string, action?: string): CpError | null {
  let source = error;
  let fault = faultOf(source);
  if (!fault && typeof error === 'object' && error !== null && 'cause' in error) {
    source = (error as { cause?: unknown }).cause;
    fault = faultOf(source);
  }
  if (!fault) return null;
  const errno = (source as { code: string }).code;
  const where =
    path ?? (typeof (source as { path?: unknown }).path === 'string' ? (source as { path: string }).path : undefined);
  const message = `${action ? `${action}: ` : ''}${fault.what}${where !== undefined ? ` at ${show(where, 240)}` : ''} (${errno})`;
  return new CpError(fault.code, message, {
    hint: fault.hint,
    details: { errno, ...(where !== undefined ? { path: where } : {}), ...(action ? { action } : {}) },
    cause: error,
  });
}

/** The codes envError gives: a fault of the machine that the operator, not the caller, has to fix. */
export const ENV_FAULT_CODES: ReadonlySet<ErrorCode> = new Set(
  [DISK_FULL, NAME_TOO_LONG, READONLY, PERMISSION, IO, DB_DAMAGED, TOO_MANY_FILES].map((fault) => fault.code),
);

/** The coded environmental fault `error` is or wraps (already coded, or a raw errno / SQLite error); else null. */
export function envFault(error: unknown): CpError | null {
  if (error instanceof CpError) return ENV_FAULT_CODES.has(error.code) ? error : null;
  return envError(error);
}

/** A fault of the machine as a refusal's message: its code, what happened, and what the operator can do. */
export function faultMessage(fault: CpError): string {
  return `${fault.code}: ${fault.message}${fault.hint ? `; ${fault.hint}` : ''}`;
}

/** Run `fn`; an environmental fault it throws becomes its coded CpError, anything else passes through. */
export function withEnvErrors<T>(path: string, action: string, fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    throw envError(error, path, action) ?? error;
  }
}
