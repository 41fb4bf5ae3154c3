import pg from 'pg';
import { CpError } from '../../errors.js';
import type { Clock, IdSource } from '../entry.js';

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
