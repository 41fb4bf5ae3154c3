// The floor for one commit that does not wait for the disk: a plain SQLite transaction in WAL mode with
// `synchronous = OFF` (what a `relaxed` commit is) inserting one 1 KiB row under one index, in the ledger's directory.
// A call at `relaxed` makes four such commits (reservation, DISPATCH, EXCHANGE, settlement) so that a crash of the
// process loses nothing; this row says what each costs on this machine before any of cplane's work.
import { join } from 'node:path';
import Database from 'better-sqlite3';

export interface CommitFloor {
  /** One transaction; its duration in milliseconds. */
  sample(): number;
  close(): void;
}

export function commitFloor(dir: string): CommitFloor {
  const db = new Database(join(dir, 'commit-floor.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = OFF');
  db.exec('CREATE TABLE rows (seq INTEGER PRIMARY KEY, id TEXT NOT NULL, body BLOB NOT NULL)');
  db.exec('CREATE INDEX rows_id ON rows (id)');
  const insert = db.prepare('INSERT INTO rows (id, body) VALUES (?, ?)');
  const body = Buffer.alloc(1024, 0x5a);
  let round = 0;
  const commit = db.transaction((id: string) => insert.run(id, body));
  // The b-trees past their first pages, as a ledger's are.
  for (; round < 2000; round += 1) commit(`E-${(round * 7919) % 100_003}-${round}`);
  return {
    sample() {
      round += 1;
      const start = process.hrtime.bigint();
      commit(`E-${(round * 7919) % 100_003}-${round}`);
      return Number(process.hrtime.bigint() - start) / 1e6;
    },
    close() {
      db.close();
    },
  };
}
