import { CpError } from '../../errors.js';

/** A database call whose failure reaches the caller as a coded error. */
export async function coded<T>(promise: Promise<T>): Promise<T> {
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
export function refusedValues(error: unknown): CpError | undefined {
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
