import type Database from 'better-sqlite3';
import { schemaProblems } from './schema-check.js';
import { formatVersion, LEDGER_FORMAT_VERSION, LEGACY_ONLY_INDEXES, RARE_KIND_INDEX_DDL } from './schema.js';

/**
 * A writer's open moves a version 2 file to version 3 (schema.ts): the same table and rows, the index set version 3
 * keeps, and the version recorded, in one write transaction, so a reader sees the file before or after, never
 * between. A file whose schema is altered is left as found: it is reported and refused against the version it
 * records. Readers open both versions as they are; version 1 files keep their layout (their hashes are hex TEXT).
 */
export function upgradeFormat(db: Database.Database): void {
  if (formatVersion(db) !== '2') return;
  db.transaction(() => {
    // Another writer may have moved it while this one waited for the lock.
    if (formatVersion(db) !== '2' || schemaProblems(db, '2').length > 0) return;
    for (const index of LEGACY_ONLY_INDEXES) db.exec(`DROP INDEX ${index}`);
    db.exec(RARE_KIND_INDEX_DDL);
    db.prepare("UPDATE ledger_meta SET value = ? WHERE key = 'format_version'").run(LEDGER_FORMAT_VERSION);
  }).immediate();
}
