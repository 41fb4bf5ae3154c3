import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { CpError, show } from '../errors.js';
import { withEnvErrors } from '../env-errors.js';
import { rootPaths } from '../root/layout.js';

/** One owned file: the ownership registry's row. */
export interface OwnedFile {
  path: string;
  package_id: string;
  sha256: string;
  size: number;
}

/** A path whose ownership moved because the new owner lists the old one in `replaces`. */
export interface OwnershipTransfer {
  txn_id: string;
  path: string;
  from_package: string;
  to_package: string;
}

const DDL = `
CREATE TABLE IF NOT EXISTS owned_files (
  path TEXT PRIMARY KEY,
  package_id TEXT NOT NULL,
  sha256 TEXT NOT NULL,
  size INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS owned_files_by_package ON owned_files (package_id, path);
CREATE TABLE IF NOT EXISTS transfers (
  txn_id TEXT NOT NULL,
  path TEXT NOT NULL,
  from_package TEXT NOT NULL,
  to_package TEXT NOT NULL,
  PRIMARY KEY (txn_id, path)
) WITHOUT ROWID;
`;

/**
 * The ownership registry (HOT/registries/ownership.sqlite): which package owns each governed file.
 * Receipts say the same thing per package; gate G1 checks the two agree.
 */
export class OwnershipRegistry {
  private ownerQuery: Database.Statement | undefined;

  private constructor(private readonly db: Database.Database) {}

  /** `readonly` (gates): no journal-mode switch, no writes, no WAL checkpoint on close. */
  static open(root: string, options: { create?: boolean; readonly?: boolean } = {}): OwnershipRegistry {
    const path = rootPaths(root).ownershipDb;
    if ((options.readonly || !options.create) && !existsSync(path)) {
      throw new CpError('ERR_ROOT_NOT_A_ROOT', `no ownership registry at ${show(path)}`, {
        hint: 'bootstrap the root first (cplane bootstrap --root R), or check --root',
        details: { root },
      });
    }
    return withEnvErrors(path, 'opening the ownership registry', () => {
      if (options.readonly) {
        const db = new Database(path, { readonly: true, fileMustExist: true });
        db.pragma('busy_timeout = 10000');
        return new OwnershipRegistry(db);
      }
      const db = new Database(path);
      try {
        // WAL + FULL: one fsync per commit, and a reader never blocks on the installer's write.
        db.pragma('journal_mode = WAL');
        db.pragma('synchronous = FULL');
        db.pragma('busy_timeout = 10000');
        if (options.create) db.exec(DDL);
      } catch (error) {
        db.close();
        throw error;
      }
      return new OwnershipRegistry(db);
    });
  }

  ownerOf(path: string): string | null {
    // Prepared once: planning asks this for every asset of a package.
    this.ownerQuery ??= this.db.prepare('SELECT package_id FROM owned_files WHERE path = ?').pluck();
    const row = this.ownerQuery.get(path);
    return typeof row === 'string' ? row : null;
  }

  filesOf(packageId: string): OwnedFile[] {
    return this.db
      .prepare('SELECT path, package_id, sha256, size FROM owned_files WHERE package_id = ? ORDER BY path')
      .all(packageId) as OwnedFile[];
  }

  all(): OwnedFile[] {
    // Raw rows, objects built here: better-sqlite3's own row objects cost about twice as much, and gates read every row.
    const rows = this.db
      .prepare('SELECT path, package_id, sha256, size FROM owned_files ORDER BY path')
      .raw()
      .all() as [string, string, string, number][];
    return rows.map(([path, package_id, sha256, size]) => ({ path, package_id, sha256, size }));
  }

  transfers(): OwnershipTransfer[] {
    return this.db
      .prepare('SELECT txn_id, path, from_package, to_package FROM transfers ORDER BY txn_id, path')
      .all() as OwnershipTransfer[];
  }

  /**
   * Make `files` exactly the set `packageId` owns, taking over transferred paths, in one transaction.
   * Idempotent, so crash repair can replay it.
   */
  setPackageFiles(
    packageId: string,
    files: readonly Omit<OwnedFile, 'package_id'>[],
    transfers: readonly OwnershipTransfer[],
  ): void {
    const del = this.db.prepare('DELETE FROM owned_files WHERE package_id = ?');
    const put = this.db.prepare(
      'INSERT OR REPLACE INTO owned_files (path, package_id, sha256, size) VALUES (?, ?, ?, ?)',
    );
    const moved = this.db.prepare(
      'INSERT OR IGNORE INTO transfers (txn_id, path, from_package, to_package) VALUES (?, ?, ?, ?)',
    );
    this.db
      .transaction(() => {
        del.run(packageId);
        for (const file of files) put.run(file.path, packageId, file.sha256, file.size);
        for (const t of transfers) moved.run(t.txn_id, t.path, t.from_package, t.to_package);
      })
      .immediate();
  }

  removePackage(packageId: string): void {
    this.db.prepare('DELETE FROM owned_files WHERE package_id = ?').run(packageId);
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
