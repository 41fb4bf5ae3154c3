import type pg from 'pg';
import { storeError } from '#kernel/ledger/pg/pg-ledger.js';
import { committedTransaction } from '#kernel/ledger/pg/pg-transaction.js';

/**
 * The router's shared tables: its open breakers, its deployments' 429 cooldowns and RPM/TPM counts, its revoked keys.
 * The counts are UNLOGGED: a call's count then commits without waiting for a WAL flush (0.18 ms a claim instead of
 * ~4 ms on a busy disk), and what a crash loses is at most a minute's counts, which the next minute rebuilds.
 */
export const ROUTER_TABLES_DDL = `
CREATE TABLE IF NOT EXISTS cplane_breakers (
  key TEXT PRIMARY KEY,
  state TEXT NOT NULL CHECK (state IN ('OPEN', 'CLOSED')),
  consecutive_failures INT NOT NULL,
  opened_at_ms BIGINT,
  changed_at_ms BIGINT NOT NULL,
  host TEXT NOT NULL
);
ALTER TABLE cplane_breakers ADD COLUMN IF NOT EXISTS probe_host TEXT, ADD COLUMN IF NOT EXISTS probe_until_ms BIGINT;
CREATE TABLE IF NOT EXISTS cplane_cooldowns (
  key TEXT PRIMARY KEY,
  until_ms BIGINT NOT NULL,
  host TEXT NOT NULL
);
CREATE UNLOGGED TABLE IF NOT EXISTS cplane_rate_counts (
  key TEXT PRIMARY KEY,
  minute BIGINT NOT NULL,
  requests BIGINT NOT NULL,
  tokens BIGINT NOT NULL,
  prev_requests BIGINT NOT NULL,
  prev_tokens BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS cplane_revoked_keys (
  key_id TEXT PRIMARY KEY,
  revoked_at TEXT NOT NULL,
  reason TEXT
);
ALTER TABLE cplane_revoked_keys ADD COLUMN IF NOT EXISTS effective_at_ms BIGINT;`;

/** 'cprt': not the ledger's lock, so a router starting does not wait on a ledger being laid out. */
const ROUTER_TABLES_LOCK = 0x63707274;

/**
 * Create the router's tables when absent. Under a transaction-scoped advisory lock: two hosts starting at once
 * would otherwise race on CREATE TABLE IF NOT EXISTS and one would get a unique violation in the catalogue.
 */
export async function ensureRouterTables(pool: pg.Pool): Promise<void> {
  await committedTransaction(pool, async (client) => {
    await client.query(`SELECT pg_advisory_xact_lock(${ROUTER_TABLES_LOCK})`);
    await client.query(ROUTER_TABLES_DDL);
  });
}

/** What a failed query leaves in a status: its code when it has one, and its message. */
export function describeError(error: unknown): string {
  const coded = storeError(error) as { code?: unknown; message?: unknown };
  const message = typeof coded.message === 'string' ? coded.message : String(error);
  return typeof coded.code === 'string' ? `${coded.code}: ${message}` : message;
}
