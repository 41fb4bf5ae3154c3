import type Database from 'better-sqlite3';
import { CpError, show } from '../errors.js';
import { rootPaths } from '../root/layout.js';
import { buildEntries, Timestamps } from './build.js';
import { type CommitCount, SqliteCommits } from './commits.js';
import type { ImportContent } from './content.js';
import {
  type AppendInput,
  type Anchor,
  type Clock,
  type IdSource,
  type LedgerEntry,
  randomEntryId,
  sequentialEntryIds,
} from './entry.js';
import { clockAhead, clockSkewOption, type LedgerOptions } from './ledger-options.js';
import { damaged, ID_START_KEY, isCorruption, notALedger, openLedgerDatabase, type Synchronous } from './open.js';
import { type AppendOptions, dropRecorded, type PreparedAppend, prepareAppend } from './prepare.js';
import { type RedactionStore, type RedactRecord, type RedactResult, redactedAppend } from './redaction.js';
import { readView } from './rows.js';
import { TIMESTAMP_INDEX, TIMESTAMP_INDEX_DDL } from './schema.js';
import { insertImported, insertWithFreshId, truncateWal } from './sqlite-write.js';
import { refuseIllFormed } from './validate.js';
import { LedgerReader } from './ledger-reader.js';
import { SqliteTree } from './merkle/sqlite-tree.js';
import { WalCheckpointer } from './wal-checkpointer.js';
import { WalSync } from './wal-sync.js';

export type { Synchronous } from './open.js';
export type { LedgerQuery } from './query.js';
export { DEFAULT_MAX_CLOCK_SKEW_MS, type LedgerOptions } from './ledger-options.js';
export {
  type AppendOptions,
  dropRecorded,
  onceKey,
  type PreparedAppend,
  prepareAppend,
} from './prepare.js';
export { type EntryRow, parseStoredMetadata, type RawRow, readView, rowToEntry } from './rows.js';

export function ledgerPathForRoot(root: string): string {
  return rootPaths(root).ledgerFile;
}

/** The kernel ledger: an append-only, hash-chained SQLite table safe for concurrent appenders. */
export class Ledger extends LedgerReader {
  /** Injected, or read from ledger_meta at the first append (undefined until then). */
  private idSource: IdSource | undefined;
  private readonly idsInjected: boolean;
  /** The writer's clock as entry timestamps, refused past the skew limit. */
  private readonly stamps: Timestamps;
  /** Built once: better-sqlite3 prepares BEGIN/COMMIT per transaction() call. */
  private readonly appendTx: Database.Transaction<
    (prepared: PreparedAppend[], once?: ReadonlySet<string>) => LedgerEntry[]
  >;
  private readonly realClock: Clock;
  private readonly maxSkewMs: number;
  /** The commits of this connection's appends, made durable or not as each asks (commits.ts). */
  private readonly commits: SqliteCommits;
  /** The Merkle tree over the chain, kept in each append's transaction (merkle/sqlite-tree.ts). */
  private readonly tree: SqliteTree;
  /** Whether appends keep the tree: false only on Ledger.openWithoutTree, the bench's baseline. */
  private keepsTree = true;
  /** The worker thread checkpointing this connection's WAL, when opened with walCheckpoints 'background'. */
  private checkpointer: WalCheckpointer | null = null;
  /** The WAL synced on the thread pool (appendBatchDurably): a file-backed writer at FULL only. */
  private walSync: WalSync | null = null;

  private constructor(
    path: string,
    db: Database.Database,
    clock: Clock,
    idSource: IdSource | undefined,
    realClock: Clock,
    maxSkewMs: number,
    synchronous: Synchronous,
  ) {
    super(path, db);
    this.commits = new SqliteCommits(db, synchronous);
    this.tree = new SqliteTree(db);
    this.stamps = new Timestamps(clock, (ms, limitMs) => {
      throw clockAhead(ms, limitMs, maxSkewMs);
    });
    this.realClock = realClock;
    this.maxSkewMs = maxSkewMs;
    this.idsInjected = idSource !== undefined;
    this.idSource = idSource;
    this.appendTx = db.transaction((prepared: PreparedAppend[], once?: ReadonlySet<string>) =>
      this.appendLocked(prepared, once),
    );
  }

  /** The append under the write lock: the records `once` leaves, built on the head and inserted in chain order. */
  private appendLocked(prepared: PreparedAppend[], once?: ReadonlySet<string>): LedgerEntry[] {
    this.refuseAlteredSchema();
    // Inside the write lock: no other writer can append the same record between this look and the insert.
    if (once !== undefined)
      dropRecorded(
        prepared,
        once,
        (input) => this.stmts.recorded.get(input.submission_id, input.event_type, input.decision) !== undefined,
      );
    const [seq, hash, headLatest] = this.headTuple();
    const limitMs = this.realClock() + this.maxSkewMs;
    let latest = headLatest;
    // A head dated beyond the skew (a writer whose clock ran ahead) is not followed: entries keep real time, so
    // time order leaves chain order and time ranges need the timestamp index.
    if (latest !== '' && Date.parse(latest) > limitMs) {
      latest = '';
      this.ensureTimestampIndex();
    }
    this.idSource ??= this.storedIdSource();
    const tree = this.appendTree();
    tree?.prepare(seq);
    const entries = new Array<LedgerEntry>(prepared.length);
    let i = 0;
    for (const built of buildEntries(prepared, { seq, hash, latest }, this.idSource, this.stamps, limitMs)) {
      const content = (prepared[i] as PreparedAppend).content;
      if (content !== undefined) {
        this.content.ensure();
        this.content.storeSide(content.prompt);
        this.content.storeSide(content.response);
      }
      insertWithFreshId(this.stmts, this.idSource, seq + i + 1, built);
      entries[i] = built.entry;
      i += 1;
    }
    tree?.append(entries);
    return entries;
  }

  /** The tree an append keeps, or none on a ledger opened without it (which must not leave a file's tree behind). */
  private appendTree(): SqliteTree | undefined {
    if (this.keepsTree) return this.tree;
    if (this.tree.has())
      throw new CpError('ERR_INTERNAL', `ledger ${show(this.path)} keeps a Merkle tree; it was opened without one`, {
        hint: 'Ledger.openWithoutTree is a bench baseline for a new file; open this ledger with Ledger.open',
        details: { path: this.path },
      });
    return undefined;
  }

  static open(path: string, options: LedgerOptions = {}): Ledger {
    const maxSkewMs = clockSkewOption(options.maxClockSkewMs);
    const db = openLedgerDatabase(path, options);
    try {
      const ledger = new Ledger(
        path,
        db,
        options.clock ?? Date.now,
        options.idSource,
        options.realClock ?? Date.now,
        maxSkewMs,
        options.synchronous ?? 'FULL',
      );
      const fileWriter = options.readonly !== true && path !== ':memory:' && path !== '';
      if (options.walCheckpoints === 'background' && fileWriter) {
        ledger.checkpointer = WalCheckpointer.start(db, path, options.checkpointFrames);
      }
      if (fileWriter && (options.synchronous ?? 'FULL') === 'FULL') ledger.walSync = new WalSync(path);
      return ledger;
    } catch (cause) {
      db.close();
      throw isCorruption(cause) ? damaged(path, (cause as Error).message, cause) : notALedger(path, cause);
    }
  }

  /**
   * A ledger whose appends keep no Merkle tree, running the same append code otherwise: the baseline the bench
   * measures the tree's cost against (merkle_append_overhead). Not for a real ledger: its appends are refused on a
   * file that has its tree, and a file it wrote gains the tree, built from the chain, at an ordinary open's first
   * append. @internal
   */
  static openWithoutTree(path: string, options: LedgerOptions = {}): Ledger {
    const ledger = Ledger.open(path, options);
    ledger.keepsTree = false;
    return ledger;
  }

  /** Append one entry in its own BEGIN IMMEDIATE transaction; concurrent appenders queue, never fork. */
  append(input: AppendInput): LedgerEntry {
    return this.appendBatch([input])[0] as LedgerEntry;
  }

  /** Append many entries in one BEGIN IMMEDIATE transaction: all or none. */
  appendBatch(inputs: readonly AppendInput[], options: AppendOptions = {}): LedgerEntry[] {
    // After a WAL sync failed no write is trusted to the disk, whichever path it takes (wal-sync.ts).
    this.walSync?.refuseAfterFailure();
    // Validation and canonicalisation happen before taking the write lock, so other appenders wait less.
    const prepared = inputs.map((input, index) => prepareAppend(input, index));
    const once = options.once === undefined ? undefined : new Set(options.once);
    const entries = this.guard(
      () =>
        this.commits.run(options.durable !== false, () => this.treeKept(() => this.appendTx.immediate(prepared, once))),
      'ERR_LEDGER_ENTRY_INVALID',
    );
    this.checkpointer?.afterCommit();
    if (options.stored === true) return entries;
    // The caller gets the entry as a read shows it: the text beside the digests that stand for it.
    for (let i = 0; i < entries.length; i += 1) {
      const content = (prepared[i] as PreparedAppend).content;
      if (content === undefined) continue;
      const entry = entries[i] as LedgerEntry;
      entry.metadata = readView(entry.metadata, content.prompt.texts, content.response.texts);
    }
    return entries;
  }

  /**
   * appendBatch, durable unless asked not to be, without holding the event loop for the disk: committed at NORMAL,
   * then the WAL synced on the thread pool (wal-sync.ts); resolves once the entries are on the disk, as a FULL commit
   * would return. After a sync failed, every append is refused before it commits. A ledger with no WAL file of its
   * own (in memory) or below FULL appends as appendBatch does, and so does a durable append asked to wait here
   * (`waitHere`: the caller has nothing else in flight, and the thread pool's round trip would only add to its wait).
   */
  async appendBatchDurably(inputs: readonly AppendInput[], options: AppendOptions = {}): Promise<LedgerEntry[]> {
    const sync = this.walSync;
    // appendBatch refuses first after a failed sync, whichever branch is taken.
    if (sync === null || options.durable === false || options.waitHere === true)
      return this.appendBatch(inputs, options);
    const entries = this.appendBatch(inputs, { ...options, durable: false });
    await sync.sync();
    this.commits.madeDurable();
    return entries;
  }

  /** The worker thread checkpointing this connection's WAL (walCheckpoints 'background'), or null. */
  get walCheckpointer(): WalCheckpointer | null {
    return this.checkpointer;
  }

  /** Stops the checkpoint worker first (its last checkpoint runs here), then closes the connection. */
  override close(): void {
    this.checkpointer?.stop();
    this.walSync?.close();
    super.close();
  }

  /** Appends committed by this connection, durable (fsynced) or not. */
  get commitCount(): Readonly<CommitCount> {
    return this.commits.count;
  }

  /**
   * Removes the text of `blocks` from the content store and appends the REDACTED entry that accounts for it,
   * in one transaction: the chain keeps verifying (each block keeps its digest; verify accepts a block without
   * text only when a REDACTED entry of the chain names it). The pages that held the text are zeroed (SQLite
   * secure_delete) and the WAL is checkpointed and truncated, so the text is gone from the files too.
   */
  redact(blocks: readonly string[], record: RedactRecord): RedactResult {
    const { sorted, input } = redactedAppend(blocks, record);
    const prepared = [prepareAppend(input)];
    const run = this.db.transaction(() => {
      const update = this.db.prepare(
        'UPDATE content_blocks SET text = NULL, redacted_by = ? WHERE digest = unhex(?) AND text IS NOT NULL',
      );
      const [entry] = this.appendTx(prepared) as [LedgerEntry];
      let redacted = 0;
      for (const digest of sorted) redacted += update.run(entry.id, digest).changes;
      return { entry, redacted };
    });
    const { entry, redacted } = this.guard(
      () => this.commits.atOwnLevel(() => this.treeKept(() => run.immediate())),
      'ERR_LEDGER_ENTRY_INVALID',
    );
    this.content.forget(sorted);
    return { entry, redacted, already: sorted.length - redacted, ...truncateWal(this.db, this.path) };
  }

  /** The blocks, the session's exchanges and one block's text, as `ledger redact` selects and previews them. */
  get redaction(): RedactionStore {
    return {
      hasBlock: (digest) => this.content.hasBlock(digest),
      sessionExchanges: (sessionId) => this.sessionExchanges(sessionId),
      exchangeBlocks: (id) => this.exchangeBlocks(id),
      block: (digest) => this.content.block(digest),
      redact: (blocks, record) => this.redact(blocks, record),
    };
  }

  /**
   * Insert entries that already carry ids, timestamps and hashes (an import that was verified first).
   * Refused unless the ledger is empty, so an import can never graft a second chain onto this one.
   */
  importEntries(entries: readonly LedgerEntry[], content?: ImportContent): Anchor {
    for (const [index, entry] of entries.entries()) {
      refuseIllFormed(entry, `imported entry ${index + 1} (${entry.id})`, index + 1);
    }
    const run = this.db.transaction(() => {
      this.refuseAlteredSchema();
      const present = this.stmts.count.get() as number;
      if (present > 0) {
        throw new CpError(
          'ERR_LEDGER_IMPORT_NOT_EMPTY',
          `ledger ${show(this.path)} already has ${present} entries; import only fills an empty ledger`,
          {
            hint: 'import into a new ledger path (or a new root); merging two chains would fork history',
            details: { path: this.path, entries: present },
          },
        );
      }
      insertImported(this.db, this.stmts, this.content, entries, content);
      if (this.keepsTree) this.tree.build(entries.length);
    });
    this.guard(() => this.commits.atOwnLevel(() => this.treeKept(() => run.immediate())), 'ERR_LEDGER_IMPORT_INVALID');
    if (!this.idsInjected) this.idSource = undefined;
    return this.head();
  }

  /** `commit` (a write transaction), the tree's edge forgotten when it rolls back: it may hold leaves never written. */
  private treeKept<T>(commit: () => T): T {
    try {
      return commit();
    } catch (error) {
      this.tree.invalidate();
      throw error;
    }
  }

  /**
   * The tree over the whole chain, laid out from the chain first when this ledger has none (a ledger from before
   * trees): one write transaction, after which every append keeps it.
   */
  ensureTree(): void {
    if (this.tree.has()) return;
    const run = this.db.transaction(() => {
      this.refuseAlteredSchema();
      this.tree.prepare(this.head().seq);
    });
    this.guard(() => this.commits.atOwnLevel(() => this.treeKept(() => run.immediate())), 'ERR_LEDGER_ENTRY_INVALID');
  }

  /** Whether the file holds the tree (written by an append, ensureTree or import). */
  get hasTree(): boolean {
    return this.tree.has();
  }

  private ensureTimestampIndex(): void {
    if ((this.stmts.timestampIndex.get(TIMESTAMP_INDEX) as number) === 0) this.db.exec(TIMESTAMP_INDEX_DDL);
  }

  /** This ledger's sequential ids, or random ones for a ledger created before ids had a stored start. */
  private storedIdSource(): IdSource {
    const start = this.stmts.idStart.get(ID_START_KEY) as string | undefined;
    return start !== undefined && /^[0-9a-f]{8}$/.test(start)
      ? sequentialEntryIds(Number.parseInt(start, 16))
      : randomEntryId;
  }
}
