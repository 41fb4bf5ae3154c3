import { sha256Hex } from '../canonical.js';
import { type Anchor, type AppendInput, GENESIS_HASH, hashInputFromColumns, type LedgerEntry } from './entry.js';
import type { CommitCount } from './commits.js';
import type { AppendOptions, EntryRow, Ledger } from './ledger.js';
import type { LedgerQuery } from './query.js';
import { verifyLedger } from './verify.js';
import type { RedactionStore } from './redaction.js';

const HAS_EXCHANGE_SQL = `SELECT 1 FROM entries WHERE session_id = ? AND event_type = 'EXCHANGE' AND dispatch_entry_id = ? LIMIT 1`;

/**
 * The ledger as every backend offers it (SQLite file, PostgreSQL): async, so one contract suite runs both.
 * The hash contract is the same, so a chain moved from one to the other keeps its head hash and its anchors.
 */
export interface LedgerStore {
  readonly backend: 'sqlite' | 'postgres';
  append(input: AppendInput): Promise<LedgerEntry>;
  /**
   * All or none, in order; with `once`, only the inputs the chain does not already hold; with `durable: false`,
   * committed without waiting for the disk (AppendOptions).
   */
  appendBatch(inputs: readonly AppendInput[], options?: AppendOptions): Promise<LedgerEntry[]>;
  headAnchor(): Promise<Anchor>;
  /** The entry as a read shows it: prompt and response text in place of their digests. */
  get(id: string): Promise<LedgerEntry | undefined>;
  /** Rows as stored, in chain order (metadata as its canonical JSON text). */
  rows(fromSeq?: number): AsyncIterableIterator<EntryRow>;
  /** Entries matching every filter, newest first unless `order: 'oldest'`, as reads show them. */
  query(query?: LedgerQuery): Promise<LedgerEntry[]>;
  /** Whether the session holds an EXCHANGE for this DISPATCH (a spooled exchange is never appended twice). */
  hasExchange(sessionId: string, dispatchId: string): Promise<boolean>;
  /** Every content block and list node re-hashed. */
  contentProblems(): Promise<ContentSummary>;
  /** The appends this process committed, durable or not (commits.ts): what a call costs in fsyncs is counted here. */
  commitCount(): Readonly<CommitCount>;
  close(): Promise<void>;
}

/**
 * `store` with its appends made through `appendBatch` (a writer that queues, groups or reports them) and everything
 * else asked of `store` itself.
 */
export function withAppendBatch(store: LedgerStore, appendBatch: LedgerStore['appendBatch']): LedgerStore {
  return {
    backend: store.backend,
    appendBatch,
    append: async (input) => (await appendBatch([input]))[0] as LedgerEntry,
    headAnchor: () => store.headAnchor(),
    get: (id) => store.get(id),
    query: (query) => store.query(query),
    rows: (fromSeq) => store.rows(fromSeq),
    hasExchange: (sessionId, dispatchId) => store.hasExchange(sessionId, dispatchId),
    contentProblems: () => store.contentProblems(),
    commitCount: () => store.commitCount(),
    close: () => store.close(),
  };
}

/** The content store as verify saw it: its size, the blocks removed by `ledger redact`, and what is wrong. */
export interface ContentSummary {
  blocks: number;
  lists: number;
  redacted_blocks: number;
  problems: string[];
}

/** The SQLite file as a LedgerStore, and as the store `ledger redact` acts on. */
export function sqliteLedgerStore(ledger: Ledger): LedgerStore & RedactionStore {
  return {
    ...ledger.redaction,
    backend: 'sqlite',
    append: async (input) => (await ledger.appendBatchDurably([input]))[0] as LedgerEntry,
    // Durable appends wait for the disk off the event loop (Ledger.appendBatchDurably).
    appendBatch: (inputs, options) => ledger.appendBatchDurably(inputs, options),
    headAnchor: async () => ledger.head(),
    get: async (id) => ledger.get(id),
    query: async (query) => ledger.query(query),
    // Through the session's index, the link read from its stored column: no entry is read whole.
    hasExchange: async (sessionId, dispatchId) =>
      ledger.statement(HAS_EXCHANGE_SQL).get(sessionId, dispatchId) !== undefined,
    async *rows(fromSeq = 1) {
      yield* ledger.rows(fromSeq);
    },
    async contentProblems() {
      const content = verifyLedger(ledger).content;
      return {
        blocks: content?.blocks ?? 0,
        lists: content?.lists ?? 0,
        redacted_blocks: content?.redacted_blocks ?? 0,
        problems: (content?.problems ?? []).map((p) => p.message),
      };
    },
    commitCount: () => ledger.commitCount,
    close: async () => ledger.close(),
  };
}

export interface StoreVerify {
  ok: boolean;
  entries: number;
  head: Anchor;
  first_bad?: { seq: number; id: string; problem: 'edited' | 'broken_link' | 'gap'; message: string };
  /** The content store, once the chain verified. */
  content?: { blocks: number; lists: number; redacted_blocks: number };
  content_problems: string[];
}

/** The chain of any store walked end to end: each entry re-hashed, each link and position checked; then content. */
export async function verifyStore(store: LedgerStore): Promise<StoreVerify> {
  let previous = GENESIS_HASH;
  let expected = 1;
  let entries = 0;
  for await (const row of store.rows()) {
    const bad = (problem: 'edited' | 'broken_link' | 'gap', message: string): StoreVerify => ({
      ok: false,
      entries,
      head: { seq: expected - 1, hash: previous },
      first_bad: { seq: row.seq, id: row.id, problem, message },
      content_problems: [],
    });
    if (row.seq !== expected) return bad('gap', `entry #${expected} is missing (found #${row.seq})`);
    if (row.previous_hash !== previous)
      return bad('broken_link', `entry ${row.id} (#${row.seq}) does not link to #${row.seq - 1}`);
    if (sha256Hex(hashInputFromColumns(row)) !== row.entry_hash)
      return bad('edited', `entry ${row.id} (#${row.seq}) does not hash to its entry_hash`);
    previous = row.entry_hash;
    expected += 1;
    entries += 1;
  }
  const content = await store.contentProblems();
  return {
    ok: content.problems.length === 0,
    entries,
    head: { seq: expected - 1, hash: previous },
    content: { blocks: content.blocks, lists: content.lists, redacted_blocks: content.redacted_blocks },
    content_problems: content.problems,
  };
}
