import type Database from 'better-sqlite3';
import { canonicalJson } from '../canonical.js';
import { envError } from '../env-errors.js';
import { CpError } from '../errors.js';
import { type Built, hashedColumns, reidentify, runInsert } from './build.js';
import type { ContentStore, ImportContent } from './content.js';
import { entryIdValue, type IdSource, idDigits, type LedgerEntry } from './entry.js';
import { ID_START_KEY, isCorruption } from './open.js';
import { TIMESTAMP_INDEX_DDL } from './schema.js';
import type { LedgerStatements } from './statements.js';

const MAX_ID_ATTEMPTS = 16;

function isIdCollision(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown };
  return e.code === 'SQLITE_CONSTRAINT_UNIQUE' && typeof e.message === 'string' && e.message.includes('entries.id');
}

/**
 * Inserts one built row at `seq` under the write lock, drawing ids until one is unused (the entry's id and hash
 * change with it). The UNIQUE index on id does the checking: a collision fails only that statement, so the
 * transaction carries on with a new id and hash.
 */
export function insertWithFreshId(stmts: LedgerStatements, ids: IdSource, seq: number, built: Built): void {
  const insert = stmts.insert;
  for (let attempt = 0; attempt < MAX_ID_ATTEMPTS; attempt += 1) {
    if (attempt > 0) reidentify(built, ids(seq, attempt));
    try {
      runInsert(insert, seq, built);
      return;
    } catch (error) {
      if (!isIdCollision(error)) throw error;
    }
  }
  throw new CpError('ERR_LEDGER_ID_EXHAUSTED', `could not find an unused entry id after ${MAX_ID_ATTEMPTS} attempts`, {
    hint: 'the id source keeps returning ids already in the ledger; check the injected id source',
  });
}

/**
 * The WAL checkpointed and truncated after a redaction, so the removed text is gone from the -wal file too. A
 * reader holding an old snapshot keeps the checkpoint from finishing; it is tried a few times. The warnings say
 * what is left when it does not finish.
 */
export function truncateWal(db: Database.Database, path: string): { checkpointed: boolean; warnings: string[] } {
  let checkpointed = false;
  let failure: string | undefined;
  try {
    for (let attempt = 0; attempt < 5 && !checkpointed; attempt += 1) {
      const [row] = db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
      checkpointed = row?.busy === 0;
    }
  } catch (error) {
    // The redaction is committed: a checkpoint the disk cannot take (full, failing) must not report it as not done.
    const env = envError(error, path, 'checkpointing the WAL');
    if (env === null && !isCorruption(error)) throw error;
    failure = env?.message ?? (error as Error).message;
  }
  const warnings = checkpointed
    ? []
    : [
        failure === undefined
          ? 'another process holds the ledger open, so its WAL could not be truncated yet; the removed text stays in the -wal file until its next checkpoint'
          : `the redaction is recorded, but its WAL could not be checkpointed (${failure}); the removed text stays in the -wal file until a checkpoint succeeds: fix the disk and run the redaction again`,
      ];
  return { checkpointed, warnings };
}

/**
 * Inserts an imported chain (verified first) into an empty ledger, with its content, inside the caller's
 * transaction; later appends continue its id run.
 */
export function insertImported(
  db: Database.Database,
  stmts: LedgerStatements,
  store: ContentStore,
  entries: readonly LedgerEntry[],
  content: ImportContent | undefined,
): void {
  if (content !== undefined && (content.blocks.length > 0 || content.lists.length > 0)) {
    store.ensure();
    store.insertRaw(content.blocks, content.lists);
  }
  entries.forEach((entry, index) => {
    stmts.insert.run(index + 1, ...hashedColumns(entry, canonicalJson(entry.metadata)), entry.entry_hash);
  });
  // Time ranges are found by binary search on seq only while timestamps are in chain order.
  if (entries.some((entry, index) => index > 0 && entry.timestamp < (entries[index - 1] as LedgerEntry).timestamp)) {
    db.exec(TIMESTAMP_INDEX_DDL);
  }
  // Later appends continue from the last imported id, so a chain that came in sequential stays sequential.
  const last = entries[entries.length - 1];
  if (last) {
    stmts.setIdStart.run(ID_START_KEY, idDigits(entryIdValue(last.id) - entries.length));
  }
}
