import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ledger, type LedgerEntry, type LedgerOptions } from '../../../kernel/ledger/index.js';
import { LEDGER_DDL } from '../../../kernel/ledger/schema.js';

export interface TestContext {
  after: (fn: () => void) => void;
}

export function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'cp-ledger-'));
  t.after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

/** A fresh ledger in a temp dir with a deterministic clock (1 s per tick), closed after the test. */
export function tempLedger(t: TestContext, options: LedgerOptions = {}): Ledger {
  let now = Date.parse('2026-01-01T00:00:00Z');
  const ledger = Ledger.open(join(tempDir(t), 'ledger.sqlite'), {
    create: true,
    clock: () => (now += 1000),
    ...options,
  });
  t.after(() => {
    ledger.close();
  });
  return ledger;
}

export function appendN(
  ledger: Ledger,
  n: number,
  metadata: (i: number) => Record<string, unknown> = (i) => ({ session_id: `S${i % 3}`, n: i }),
): LedgerEntry[] {
  return ledger.appendBatch(
    Array.from({ length: n }, (_, i) => ({
      event_type: 'TEST',
      submission_id: `SUB-${i}`,
      decision: 'OK',
      reason: `entry ${i}`,
      metadata: metadata(i),
    })),
  );
}

/**
 * What someone with write access to the file can do: open it raw, drop the guard triggers, change rows, and put
 * the triggers back so the schema looks untouched (only the chain can tell).
 */
export function tamper(path: string, sql: string, dropTriggers = true): void {
  const db = new Database(path);
  try {
    if (dropTriggers) db.exec('DROP TRIGGER IF EXISTS entries_no_update; DROP TRIGGER IF EXISTS entries_no_delete;');
    db.exec(sql);
    if (dropTriggers) db.exec(LEDGER_DDL);
  } finally {
    db.close();
  }
}

/**
 * A closed ledger file given the layout a version 2 cplane wrote: the same table and rows, version 2's indexes
 * (copied, not derived from schema.ts) and its version.
 */
export function asVersionTwo(path: string): void {
  const db = new Database(path);
  try {
    db.exec(`DROP INDEX entries_rare_kind;
CREATE INDEX IF NOT EXISTS entries_event_type ON entries (event_type, seq);
CREATE INDEX IF NOT EXISTS entries_dispatch_link ON entries (dispatch_entry_id) WHERE dispatch_entry_id IS NOT NULL;
UPDATE ledger_meta SET value = '2' WHERE key = 'format_version';`);
  } finally {
    db.close();
  }
}

/** The synchronous level each inserted entry was written under, read inside its own transaction by a temp trigger. */
export function recordLevels(ledger: Ledger): () => [string, number][] {
  ledger.db.exec(`CREATE TEMP TABLE levels (submission_id TEXT, level INTEGER);
    CREATE TEMP TRIGGER level_at_insert AFTER INSERT ON main.entries BEGIN
      INSERT INTO levels VALUES (NEW.submission_id, (SELECT synchronous FROM pragma_synchronous()));
    END;`);
  return () => ledger.db.prepare('SELECT submission_id, level FROM levels').raw().all() as [string, number][];
}

/** A NOTE whose submission id names it in recordLevels' rows. */
export const levelNote = (id: string) => ({
  event_type: 'NOTE',
  submission_id: id,
  decision: 'NOTED',
  reason: 'test',
  metadata: {},
});
