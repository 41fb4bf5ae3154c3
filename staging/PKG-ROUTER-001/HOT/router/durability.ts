import { CpError, type ErrorCode, show } from '#kernel/errors.js';
import { type CommitCount, durableCommitsOf } from '#kernel/ledger/index.js';
import { type LedgerStore, withAppendBatch } from '#kernel/ledger/store.js';

/**
 * What of a call must reach the disk before what (the router config's `durability`, `cplane serve --durability`):
 * - full: the reservation and DISPATCH before the upstream is contacted, the EXCHANGE and settlement before the
 *   final byte is released (two durable commits per call);
 * - exchange: the reservation and DISPATCH committed without an fsync, carried to the disk by the EXCHANGE's (one);
 * - relaxed: no commit of the call path waits for the disk (none): a crash of the process loses nothing, a power
 *   loss the calls since the last sync.
 */
export const DURABILITY_LEVELS = ['full', 'exchange', 'relaxed'] as const;
export type Durability = (typeof DURABILITY_LEVELS)[number];
export const DEFAULT_DURABILITY: Durability = 'full';

export function isDurability(value: unknown): value is Durability {
  return typeof value === 'string' && (DURABILITY_LEVELS as readonly string[]).includes(value);
}

/** A level from a flag or a config file; anything else is refused naming the value and the levels. */
export function parseDurability(value: unknown, where: string, code: ErrorCode = 'ERR_USAGE'): Durability {
  if (isDurability(value)) return value;
  throw new CpError(code, `${where} must be one of ${DURABILITY_LEVELS.join(', ')}, got ${show(value)}`, {
    hint: 'full (default): every call durable before its answer; exchange: one fsync per call; relaxed: none',
    details: { durability: typeof value === 'string' ? value : null, levels: [...DURABILITY_LEVELS] },
  });
}

/** How one commit is asked to be made: durable (the default) or not. */
export type CommitOptions = { durable: boolean };

/** Which of a call's two commits the pipeline asks to be durable: the admission's (DISPATCH) and the conclusion's. */
export function callCommits(level: Durability | undefined): {
  admission: { durable: boolean };
  conclusion: { durable: boolean };
} {
  const at = level ?? DEFAULT_DURABILITY;
  return { admission: { durable: at === 'full' }, conclusion: { durable: at !== 'relaxed' } };
}

/**
 * The writer of a router at `level`: under `relaxed` no append waits for the disk (refusals and fallbacks included),
 * otherwise each append is as durable as it asks (durable unless it says not).
 */
export function writerAt(store: LedgerStore, level: Durability | undefined): LedgerStore {
  if (level !== 'relaxed') return store;
  return withAppendBatch(store, (inputs, options) => store.appendBatch(inputs, { ...options, durable: false }));
}

/** What a router writes through: its SQLite ledger and budget file, or a shared store's. */
export interface CountedStores {
  ledger: { commitCount(): Readonly<CommitCount> } | { readonly commitCount: Readonly<CommitCount> } | null;
  budget: { commitCount(): Readonly<CommitCount> } | { readonly commitCount: Readonly<CommitCount> } | null;
}

const countOf = (store: CountedStores['ledger']): Readonly<CommitCount> | null =>
  store === null ? null : typeof store.commitCount === 'function' ? store.commitCount() : store.commitCount;

/**
 * Durable commits (fsyncs on SQLite, WAL flushes on PostgreSQL) this process made through a router's ledger and
 * budget store so far: read before and after N calls, (after − before) / N is the bench's fsyncs per call.
 */
export function durableCommits(stores: CountedStores): number {
  return durableCommitsOf([countOf(stores.ledger), countOf(stores.budget)]);
}
