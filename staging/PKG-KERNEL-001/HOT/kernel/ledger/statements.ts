import type Database from 'better-sqlite3';
import { HISTORY_SQL, ROW_COLUMNS } from './query.js';
import { hashHex, insertRowSql } from './schema.js';

/** An object of statements, each prepared the first time it is read and kept from then on. */
export function preparedOnFirstUse<T extends Record<string, () => unknown>>(
  makers: T,
): { [K in keyof T]: ReturnType<T[K]> } {
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

/** The SQLite ledger's statements, prepared on first use: a gate or a command that only reads pays for what it runs. */
export function ledgerStatements(db: Database.Database, formatVersion: string) {
  return preparedOnFirstUse({
    head: () =>
      db.prepare(`SELECT seq, ${hashHex('entry_hash')}, timestamp FROM entries ORDER BY seq DESC LIMIT 1`).raw(),
    hashAt: () => db.prepare(`SELECT ${hashHex('entry_hash')} FROM entries WHERE seq = ?`).pluck(),
    timeProbe: () => db.prepare('SELECT seq, timestamp FROM entries WHERE seq >= ? ORDER BY seq LIMIT 1').raw(),
    timestampIndex: () => db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?").pluck(),
    count: () => db.prepare('SELECT count(*) FROM entries').pluck(),
    insert: () => db.prepare(insertRowSql(formatVersion)),
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
}

export type LedgerStatements = ReturnType<typeof ledgerStatements>;
